import { describe, expect, it } from 'vitest';
import { JsonPathLimitError, JsonPathSyntaxError, ValidationError } from '#shared/domain/errors.ts';
import { JSONPATH_LIMITS, parseJsonPath, queryJsonPath } from '#shared/domain/lang/json-path.ts';

function syntaxError(path: string): JsonPathSyntaxError {
  try {
    parseJsonPath(path);
  } catch (error) {
    if (error instanceof JsonPathSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected ${path} to be refused`);
}

// RFC 9535 section 1.5, the bookstore of Table 2.
const store = {
  store: {
    book: [
      { category: 'reference', author: 'Nigel Rees', title: 'Sayings of the Century', price: 8.95 },
      { category: 'fiction', author: 'Evelyn Waugh', title: 'Sword of Honour', price: 12.99 },
      {
        category: 'fiction',
        author: 'Herman Melville',
        title: 'Moby Dick',
        isbn: '0-553-21311-3',
        price: 8.99,
      },
      {
        category: 'fiction',
        author: 'J. R. R. Tolkien',
        title: 'The Lord of the Rings',
        isbn: '0-395-19395-8',
        price: 22.99,
      },
    ],
    bicycle: { color: 'red', price: 399 },
  },
};
const [rees, waugh, melville, tolkien] = store.store.book;

describe('queryJsonPath', () => {
  describe('on the RFC 9535 bookstore (Table 2)', () => {
    it.each([
      ['$.store.book[*].author', ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']],
      ['$..author', ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']],
      ['$.store.*', [store.store.book, store.store.bicycle]],
      ['$.store..price', [8.95, 12.99, 8.99, 22.99, 399]],
      ['$..book[2]', [melville]],
      ['$..book[2].author', ['Herman Melville']],
      ['$..book[2].publisher', []],
      ['$..book[-1]', [tolkien]],
      ['$..book[0,1]', [rees, waugh]],
      ['$..book[:2]', [rees, waugh]],
      ['$..book[?@.isbn]', [melville, tolkien]],
      ['$..book[?@.price<10]', [rees, melville]],
      ['$..book[?(@.price < 10)].title', ['Sayings of the Century', 'Moby Dick']],
    ])('answers %s', (path, expected) => {
      expect(queryJsonPath(path, store)).toEqual(expected);
    });

    it('answers every member value and array element for $..*, parents before children', () => {
      const all = queryJsonPath('$..*', store);
      expect(all).toHaveLength(27);
      expect(all.slice(0, 3)).toEqual([store.store, store.store.book, store.store.bicycle]);
      expect(all.at(-1)).toBe(399);
    });
  });

  describe('selectors (RFC 9535 section 2.3 examples)', () => {
    it.each([
      ["$.o['j j']", { 'k.k': 3 }],
      ["$.o['j j']['k.k']", 3],
      ['$.o["j j"]["k.k"]', 3],
      [`$["'"]["@"]`, 2],
    ])('selects a member by name with %s', (path, expected) => {
      expect(queryJsonPath(path, { o: { 'j j': { 'k.k': 3 } }, "'": { '@': 2 } })).toEqual([expected]);
    });

    it.each([
      ['$[*]', [{ j: 1, k: 2 }, [5, 3]]],
      ['$.o[*]', [1, 2]],
      ['$.o[*, *]', [1, 2, 1, 2]],
      ['$.a[*]', [5, 3]],
    ])('selects all children with %s', (path, expected) => {
      expect(queryJsonPath(path, { o: { j: 1, k: 2 }, a: [5, 3] })).toEqual(expected);
    });

    it.each([
      ['$[1]', ['b']],
      ['$[0]', ['a']],
      ['$[-2]', ['a']],
      ['$[2]', []],
      ['$[-3]', []],
    ])('selects an element by index with %s', (path, expected) => {
      expect(queryJsonPath(path, ['a', 'b'])).toEqual(expected);
    });

    it.each([
      ['$[1:3]', ['b', 'c']],
      ['$[5:]', ['f', 'g']],
      ['$[1:5:2]', ['b', 'd']],
      ['$[5:1:-2]', ['f', 'd']],
      ['$[::-1]', ['g', 'f', 'e', 'd', 'c', 'b', 'a']],
      ['$[:]', ['a', 'b', 'c', 'd', 'e', 'f', 'g']],
      ['$[-2:]', ['f', 'g']],
      ['$[:0:-1]', ['g', 'f', 'e', 'd', 'c', 'b']],
      ['$[1:2:0]', []],
      ['$[2:113667776004]', ['c', 'd', 'e', 'f', 'g']],
      ['$[-113667776004:1]', ['a']],
      ['$[1 : 5 : 2]', ['b', 'd']],
    ])('slices with %s', (path, expected) => {
      expect(queryJsonPath(path, ['a', 'b', 'c', 'd', 'e', 'f', 'g'])).toEqual(expected);
    });

    it('selects nothing with a name on an array, an index on an object or anything on a primitive', () => {
      expect(queryJsonPath("$['0']", ['a'])).toEqual([]);
      expect(queryJsonPath('$[0]', { 0: 'a' })).toEqual([]);
      expect(queryJsonPath('$.a.b[0][*]', { a: 'text' })).toEqual([]);
    });

    it('reads JSON escapes in quoted names', () => {
      const doc = { 'é"\n': 1, "it's": 2, '𝄞': 3 };
      expect(queryJsonPath('$["\\u00e9\\"\\n"]', doc)).toEqual([1]);
      expect(queryJsonPath("$['it\\'s']", doc)).toEqual([2]);
      expect(queryJsonPath('$["\\uD834\\uDD1E", \'𝄞\']', doc)).toEqual([3, 3]);
      expect(queryJsonPath('$.𝄞', doc)).toEqual([3]);
    });
  });

  describe('descendant segments (RFC 9535 section 2.5.2)', () => {
    const doc = { o: { j: 1, k: 2 }, a: [5, 3, [{ j: 4 }, { k: 6 }]] };

    it.each([
      ['$..j', [1, 4]],
      ['$..[0]', [5, { j: 4 }]],
      ['$..o', [{ j: 1, k: 2 }]],
      ['$.o..[*, *]', [1, 2, 1, 2]],
      ['$.a..[0, 1]', [5, 3, { j: 4 }, { k: 6 }]],
    ])('answers %s', (path, expected) => {
      expect(queryJsonPath(path, doc)).toEqual(expected);
    });

    it('visits nodes before their descendants, in document order', () => {
      const nested = [{ j: 4 }, { k: 6 }];
      const expected = [doc.o, doc.a, 1, 2, 5, 3, nested, { j: 4 }, { k: 6 }, 4, 6];
      expect(queryJsonPath('$..[*]', doc)).toEqual(expected);
      expect(queryJsonPath('$..*', doc)).toEqual(expected);
    });
  });

  describe('null (RFC 9535 section 2.6)', () => {
    const doc = { a: null, b: [null], c: [{}], null: 1 };

    it.each([
      ['$.a', [null]],
      ['$.a[0]', []],
      ['$.a.d', []],
      ['$.b[0]', [null]],
      ['$.b[*]', [null]],
      ['$.b[?@]', [null]],
      ['$.b[?@==null]', [null]],
      ['$.c[?@.d==null]', []],
      ['$.null', [1]],
    ])('answers %s', (path, expected) => {
      expect(queryJsonPath(path, doc)).toEqual(expected);
    });
  });

  describe('filters (RFC 9535 section 2.3.5.3)', () => {
    const doc = {
      a: [3, 5, 1, 2, 4, 6, { b: 'j' }, { b: 'k' }, { b: {} }, { b: 'kilo' }],
      o: { p: 1, q: 2, r: 3, s: 5, t: { u: 6 } },
      e: 'f',
    };

    it.each([
      ["$.a[?@.b == 'kilo']", [{ b: 'kilo' }]],
      ["$.a[?(@.b == 'kilo')]", [{ b: 'kilo' }]],
      ['$.a[?@>3.5]', [5, 4, 6]],
      ['$.a[?@.b]', [{ b: 'j' }, { b: 'k' }, { b: {} }, { b: 'kilo' }]],
      ['$[?@.*]', [doc.a, doc.o]],
      ['$[?@[?@.b]]', [doc.a]],
      ['$.o[?@<3, ?@<3]', [1, 2, 1, 2]],
      ['$.a[?@<2 || @.b == "k"]', [1, { b: 'k' }]],
      ['$.a[?match(@.b, "[jk]")]', [{ b: 'j' }, { b: 'k' }]],
      ['$.a[?search(@.b, "[jk]")]', [{ b: 'j' }, { b: 'k' }, { b: 'kilo' }]],
      ['$.o[?@>1 && @<4]', [2, 3]],
      ['$.o[?@.u || @.x]', [{ u: 6 }]],
      ['$.a[?@.b == $.x]', [3, 5, 1, 2, 4, 6]],
      ['$.a[?@ == @]', doc.a],
    ])('answers %s', (path, expected) => {
      expect(queryJsonPath(path, doc)).toEqual(expected);
    });

    it('binds && tighter than || and lets parentheses and ! regroup', () => {
      const items = [{ a: 1 }, { b: 2, c: 3 }, { c: 3 }, { a: 1, c: 3 }];
      expect(queryJsonPath('$[?@.a || @.b && @.c]', items)).toEqual([items[0], items[1], items[3]]);
      expect(queryJsonPath('$[?(@.a || @.b) && @.c]', items)).toEqual([items[1], items[3]]);
      expect(queryJsonPath('$[?!(@.a || @.b)]', items)).toEqual([items[2]]);
      expect(queryJsonPath('$[?!@.a]', items)).toEqual([items[1], items[2]]);
    });

    it('compares numbers by value and strings by code point', () => {
      expect(queryJsonPath('$[?@ == 1.0 || @ == 1e2]', [1, 100, '1', true])).toEqual([1, 100]);
      expect(queryJsonPath("$[?@ > 'b']", ['a', 'b', 'ba', 'c', 1])).toEqual(['ba', 'c']);
      // U+10000 is a surrogate pair in UTF-16, which JavaScript's < would sort below U+E000.
      expect(queryJsonPath("$[?@ > '\\uE000']", ['\u{10000}', '\uD7FF'])).toEqual(['\u{10000}']);
    });

    it('compares arrays and objects by deep equality, members in any order', () => {
      const rows = [
        { a: [1, { x: [2] }], b: [1, { x: [2] }] },
        { a: { x: 1, y: { z: 1 } }, b: { y: { z: 1 }, x: 1 } },
        { a: [1, 2], b: [2, 1] },
        { a: { x: 1 }, b: { x: 1, y: 2 } },
      ];
      expect(queryJsonPath('$[?@.a == @.b]', rows)).toEqual([rows[0], rows[1]]);
    });
  });

  describe('comparisons with Nothing (RFC 9535 Table 11)', () => {
    const doc = { obj: { x: 'y' }, arr: [2, 3] };

    it.each([
      ['$.absent1 == $.absent2', true],
      ['$.absent1 <= $.absent2', true],
      ["$.absent == 'g'", false],
      ['$.absent1 != $.absent2', false],
      ["$.absent != 'g'", true],
      ['1 <= 2', true],
      ['1 > 2', false],
      ["13 == '13'", false],
      ["'a' <= 'b'", true],
      ["'a' > 'b'", false],
      ['$.obj == $.arr', false],
      ['$.obj != $.arr', true],
      ['$.obj == $.obj', true],
      ['$.obj != $.obj', false],
      ['$.arr == $.arr', true],
      ['$.arr != $.arr', false],
      ['$.obj == 17', false],
      ['$.obj != 17', true],
      ['$.obj <= $.arr', false],
      ['$.obj < $.arr', false],
      ['$.obj <= $.obj', true],
      ['$.arr <= $.arr', true],
      ['1 <= $.arr', false],
      ['1 >= $.arr', false],
      ['1 > $.arr', false],
      ['1 < $.arr', false],
      ['true <= true', true],
      ['true > true', false],
    ])('evaluates %s to %s', (comparison, expected) => {
      expect(queryJsonPath(`$[?${comparison}]`, doc)).toHaveLength(expected ? 2 : 0);
    });

    it('tells a missing member from a null one', () => {
      expect(queryJsonPath('$[?@.a == null]', [{ a: null }, {}])).toEqual([{ a: null }]);
      expect(queryJsonPath('$[?@.a != null]', [{ a: null }, {}])).toEqual([{}]);
    });
  });

  describe('functions (RFC 9535 section 2.4)', () => {
    it('counts code points, elements or members with length(), and nothing else', () => {
      const doc = ['☺☺', '𝄞𝄞', 'abc', [1, 2], { a: 1, b: 2 }, 2, true, null];
      expect(queryJsonPath('$[?length(@) == 2]', doc)).toEqual(['☺☺', '𝄞𝄞', [1, 2], { a: 1, b: 2 }]);
      expect(queryJsonPath('$[?length(@.absent) == $.absent]', [1])).toEqual([1]);
    });

    it('counts nodes with count() and takes a single node with value()', () => {
      const doc = [{ a: [1, 2, 3] }, { a: [1], d: 'f' }, { a: 1, d: 'f' }];
      expect(queryJsonPath('$[?count(@..*) > 2]', doc)).toEqual([doc[0], doc[1]]);
      expect(queryJsonPath("$[?count(@['a','d']) > 1]", doc)).toEqual([doc[1], doc[2]]);
      expect(queryJsonPath('$[?value(@.*) == 4]', [[4], { foo: 4 }, [4, 4], [5]])).toEqual([[4], { foo: 4 }]);
      expect(queryJsonPath('$[?value(@..color) == "red"]', [store.store])).toEqual([store.store]);
    });

    it('matches a whole string with match() and any part with search()', () => {
      const doc = [{ a: 'ab' }, { a: 'xab' }, { a: 'abx' }, { a: 1 }, {}];
      expect(queryJsonPath("$[?match(@.a, 'a.*')]", doc)).toEqual([doc[0], doc[2]]);
      expect(queryJsonPath("$[?search(@.a, 'ab')]", doc)).toEqual([doc[0], doc[1], doc[2]]);
      expect(queryJsonPath("$[?!match(@.a, 'a.*')]", doc)).toEqual([doc[1], doc[3], doc[4]]);
      expect(
        queryJsonPath('$[?search(@.author, "[BR]ob")]', [{ author: 'Bob' }, { author: 'Rebecca' }]),
      ).toEqual([{ author: 'Bob' }]);
    });

    it('reads I-Regexp: dot without line breaks, code points, categories, classes and ^ $ anchors', () => {
      expect(queryJsonPath("$[?match(@, 'a.b')]", ['a𐄁b', 'a\nb', 'a\u2028b', 'ab'])).toEqual([
        'a𐄁b',
        'a\u2028b',
      ]);
      expect(queryJsonPath("$[?match(@, '\\\\p{Lu}+')]", ['ЖЖ', 'жЖ', 'AB'])).toEqual(['ЖЖ', 'AB']);
      expect(queryJsonPath("$[?match(@, '[^a-z\\\\-]{2}')]", ['A1', 'a1', '--', '😀😀'])).toEqual([
        'A1',
        '😀😀',
      ]);
      expect(queryJsonPath("$[?match(@, 'a[.b]c|x{2,3}')]", ['abc', 'a.c', 'axc', 'xx', 'xxxx'])).toEqual([
        'abc',
        'a.c',
        'xx',
      ]);
      expect(queryJsonPath("$[?search(@, '^ab')]", ['abc', 'cab'])).toEqual(['abc']);
      expect(queryJsonPath("$[?match(@, '1974-05-..')]", ['1974-05-01', '1974-06-01'])).toEqual([
        '1974-05-01',
      ]);
    });

    it('takes a pattern from the document and matches nothing when it is not an I-Regexp', () => {
      const doc = { regex: 'b.?b', bad: '\\d+', values: ['abc', 'bab', 'bbab', '12', 1] };
      expect(queryJsonPath('$.values[?match(@, $.regex)]', doc)).toEqual(['bab']);
      expect(queryJsonPath('$.values[?search(@, $.regex)]', doc)).toEqual(['bab', 'bbab']);
      expect(queryJsonPath('$.values[?match(@, $.bad)]', doc)).toEqual([]);
    });
  });

  it('answers object members in insertion order and keeps duplicates a union selects twice', () => {
    expect(queryJsonPath("$['b', 'a', 'b']", { a: 1, b: 2 })).toEqual([2, 1, 2]);
    expect(queryJsonPath('$.*', { z: 1, a: 2 })).toEqual([1, 2]);
  });

  it('accepts blank space where the RFC allows it', () => {
    const doc = { a: { b: [1, 2, 3] } };
    expect(queryJsonPath("$ .a\n['b'] [ 0 , -1 ]", doc)).toEqual([1, 3]);
    expect(queryJsonPath('$.a.b[? @ > 1 &&\t@ < 3 ]', doc)).toEqual([2]);
    expect(queryJsonPath('$[?count( @.* ) == 1]', [{ x: 1 }, {}])).toEqual([{ x: 1 }]);
  });

  it('parses a query once and reuses it', () => {
    const query = parseJsonPath('$.a[?@.b > 1]');
    expect(parseJsonPath('$.a[?@.b > 1]')).toBe(query);
    expect(queryJsonPath(query, { a: [{ b: 1 }, { b: 2 }] })).toEqual([{ b: 2 }]);
    expect(query.source).toBe('$.a[?@.b > 1]');
  });
});

describe('parseJsonPath', () => {
  it.each([
    [' $', 1, 'expected "$" at the start, got " "'],
    ['$ ', 2, 'a path cannot end with blank space'],
    ['a.b', 1, 'expected "$" at the start, got "a"'],
    ['@.a', 1, '@ (the current node) only exists inside a filter [?…]; a path starts with $'],
    ['$.', 3, 'expected a name or "*" after ".", got end of path'],
    ['$..', 4, 'expected a name or "*" after "..", got end of path'],
    ['$. a', 3, 'expected a name or "*" after ".", got " "'],
    ['$.tags.0', 8, 'an index goes in brackets: [0], not .0'],
    [
      '$.foo-bar',
      6,
      `expected ".", "[" or the end of the path, got "-"; a name with other characters goes in brackets: ['foo-bar']`,
    ],
    ['$[]', 3, 'expected a selector (a quoted name, an index, a slice, "*" or "?" and a filter), got "]"'],
    ['$[a]', 3, "names in brackets are quoted: ['a']"],
    ['$[@.a]', 3, 'a query in brackets needs a filter: [?@…]'],
    ['$[0 2]', 5, 'expected "," or "]", got "2"'],
    ["$['a'", 6, 'expected "]" to close "[" at 2, got end of path'],
    ["$['a", 5, "expected ' to close the string at 3, got end of path"],
    ['$["\\x41"]', 4, 'invalid escape \\x in a double-quoted string'],
    ['$["\\uD800"]', 4, 'a high surrogate escape must be followed by a low one'],
    ['$[01]', 3, 'integers have no leading zeros'],
    ['$[-0]', 3, '-0 is not an integer here'],
    ['$[1.5]', 3, 'indexes and slice bounds are integers'],
    ['$[9007199254740992]', 3, 'an index must be between -(2^53-1) and 2^53-1'],
    ['$[1:2:3:4]', 8, 'expected "," or "]", got ":"'],
    ['$[?]', 4, 'expected a query (@ or $), a literal or a function call, got "]"'],
    ['$[?(@.a]', 8, 'expected ")" to close "(" at 4, got "]"'],
    ['$[?@.a = 1]', 8, 'expected "==" to compare, got "="'],
    ['$[?@.a & @.b]', 8, 'expected "&&", "||", "," or "]" after the filter, got "&"'],
    ['$[?@.a == 01]', 11, 'numbers have no leading zeros'],
    ['$[?@.a == 1.]', 13, 'expected a digit after "."'],
    ['$[?true]', 4, 'a literal alone is not a test; compare it with a query, e.g. @.a == 1'],
    ['$[?@ == True]', 9, 'expected @ or $ before "True": write @.True for a member of the current node'],
    ['$[?!@.a == 1]', 4, '! negates a test; negate a comparison as !(...)'],
    [
      '$[?@.* == 1]',
      4,
      'a comparison needs a singular query: names and indexes only, no wildcards, slices, filters or ..',
    ],
    [
      '$[?@..a == $[0:1]]',
      4,
      'a comparison needs a singular query: names and indexes only, no wildcards, slices, filters or ..',
    ],
  ])('refuses %j at %i: %s', (path, position, detail) => {
    const error = syntaxError(path);
    expect(error).toBeInstanceOf(ValidationError);
    expect({ position: error.position, detail: error.detail }).toEqual({ position, detail });
    expect(error.message).toBe(`${position}: ${detail}`);
  });

  it.each([
    ['$[?length(@.a)]', 4, 'length() answers a value, not true or false; compare it, e.g. length(…) > 0'],
    ['$[?value(@..color)]', 4, 'value() answers a value, not true or false; compare it, e.g. value(…) > 0'],
    [
      "$[?match(@.a, 'a.*') == true]",
      4,
      'match() answers true or false and cannot be compared; use it alone or after !',
    ],
    [
      '$[?length(@.*) < 3]',
      11,
      'argument 1 of length() must be a value: a literal, a singular query (names and indexes only) or a function answering a value',
    ],
    ['$[?count(1) == 1]', 10, 'argument 1 of count() must be a query (@… or $…)'],
    [
      '$[?length(@.a == 1) > 2]',
      11,
      'argument 1 of length() must be a value: a literal, a singular query (names and indexes only) or a function answering a value, not a logical expression',
    ],
    ['$[?match(@.a)]', 4, 'match() takes 2 arguments, got 1'],
    ['$[?value(@.a, @.b) == 1]', 15, 'value() takes 1 argument'],
    ['$[?count (@.*) == 1]', 9, 'no blank space may come between count and "("'],
    [
      '$[?foo(@.a)]',
      4,
      'unknown function foo(); the functions are length(), count(), match(), search() and value()',
    ],
    [
      '$[?constructor(@)]',
      4,
      'unknown function constructor(); the functions are length(), count(), match(), search() and value()',
    ],
  ])('type-checks functions as RFC 9535 section 2.4.3 requires: %j', (path, position, detail) => {
    expect(syntaxError(path).message).toBe(`${position}: ${detail}`);
  });

  it.each([
    [
      "$[?match(@, '\\\\d+')]",
      13,
      '\\d is not I-Regexp; write a class such as [0-9] or \\p{L} (character 1 of the pattern)',
    ],
    [
      "$[?search(@, '(?:ab)')]",
      14,
      '(?…) groups and lookarounds are not I-Regexp; use (…) (character 1 of the pattern)',
    ],
    [
      "$[?match(@, 'a*?')]",
      13,
      'a quantifier cannot follow a quantifier; lazy (*?) and possessive (*+) forms are not I-Regexp (character 3 of the pattern)',
    ],
    ["$[?match(@, '[z-a]')]", 13, 'a range in the class is out of order (character 1 of the pattern)'],
    ["$[?match(@, 'a{3,1}')]", 13, 'a repetition {3,1} needs its minimum first (character 2 of the pattern)'],
    ["$[?match(@, '(ab')]", 13, 'expected ")" to close "(" at character 1 (character 4 of the pattern)'],
  ])('refuses a literal pattern that is not an I-Regexp: %j', (path, position, detail) => {
    const name = path.includes('search') ? 'search' : 'match';
    expect(syntaxError(path).message).toBe(`${position}: ${name}() needs an I-Regexp (RFC 9485): ${detail}`);
  });

  it.each([
    ['$..book^', 8, 'the parent operator ^ is a jsonpath-plus extension, not JSONPath (RFC 9535)'],
    ['$.store.*~', 10, '~ for property names is a jsonpath-plus extension, not JSONPath (RFC 9535)'],
    ['$..*[?(@property === "price")]', 8, '@property is a jsonpath-plus extension, not JSONPath (RFC 9535)'],
    ['$..*[?(@path)]', 8, '@path is a jsonpath-plus extension, not JSONPath (RFC 9535)'],
    ['$[?(@parent.x)]', 5, '@parent is a jsonpath-plus extension, not JSONPath (RFC 9535)'],
    [
      '$..book[(@.length-1)]',
      9,
      'a script expression [(...)] is a jsonpath-plus extension, not JSONPath (RFC 9535); use [-1] for the last element',
    ],
    ['$.`a', 3, "backtick escapes are a jsonpath-plus extension; quote the name instead: ['name']"],
    ['$[?(@.price === 8.95)]', 13, '=== is JavaScript; JSONPath compares with =='],
    ['$[?(@.a !== 1)]', 9, '!== is JavaScript; JSONPath compares with !='],
    [
      '$[?(@.title.match(/Moby/))]',
      12,
      'JavaScript method calls such as .match() are not JSONPath; its functions are length(), count(), match(), search() and value()',
    ],
    [
      '$[?(@.tags.length > 1)]',
      11,
      `".length" is not JSONPath: use length(@.a) in a filter, or ['length'] for a member named "length"`,
    ],
    [
      '$.tags.length',
      7,
      `".length" is not JSONPath: use length(@.a) in a filter, or ['length'] for a member named "length"`,
    ],
    [
      '$[?@.a == /x/]',
      11,
      '/…/ regular expression literals are JavaScript; use match(@.a, "…") or search(@.a, "…")',
    ],
  ])(
    'refuses the jsonpath-plus or JavaScript construct in %j, never evaluating it',
    (path, position, detail) => {
      expect(syntaxError(path).message).toBe(`${position}: ${detail}`);
    },
  );

  it("reads ['length'] as a member name, which arrays do not have", () => {
    expect(queryJsonPath("$.a['length']", { a: { length: 3 } })).toEqual([3]);
    expect(queryJsonPath("$.a['length']", { a: [1, 2] })).toEqual([]);
  });
});

describe('JSONPath safety', () => {
  it('selects own members only, so prototype names match only own keys', () => {
    const parsed = JSON.parse('{"__proto__": {"x": 1}, "constructor": "own"}') as unknown;
    expect(queryJsonPath('$.__proto__.x', parsed)).toEqual([1]);
    expect(queryJsonPath('$.constructor', parsed)).toEqual(['own']);
    expect(queryJsonPath('$.constructor', {})).toEqual([]);
    expect(queryJsonPath("$['__proto__', 'toString', 'hasOwnProperty']", {})).toEqual([]);
    expect(queryJsonPath('$[?@.constructor]', [{}, { constructor: 1 }])).toEqual([{ constructor: 1 }]);
    const inheriting = Object.assign(Object.create({ inherited: 1 }) as object, { own: 2 });
    expect(queryJsonPath('$.*', inheriting)).toEqual([2]);
    expect(queryJsonPath('$..inherited', { x: inheriting })).toEqual([]);
  });

  it('refuses a query longer than the limit', () => {
    const error = syntaxError(`$${'.a'.repeat(500)}`);
    expect(error.message).toBe(
      `1001: a JSONPath is at most ${JSONPATH_LIMITS.maxLength} characters, got 1001`,
    );
  });

  it('refuses filters nested deeper than the limit', () => {
    const depth = JSONPATH_LIMITS.maxNesting + 1;
    const error = syntaxError(`$[?${'('.repeat(depth)}@${')'.repeat(depth)}]`);
    expect(error.detail).toBe('filters, parentheses and function calls nest deeper than 32 levels');
    expect(queryJsonPath(`$[?${'('.repeat(20)}@${')'.repeat(20)}]`, [1])).toEqual([1]);
  });

  it('stops a query whose work grows with the square of the document', () => {
    const items = Array.from({ length: 2_000 }, (_, i) => ({ i }));
    expect(() => queryJsonPath('$[*][?count($..*) > 0]', items)).toThrow(JsonPathLimitError);
    expect(() => queryJsonPath('$[*][?count($..*) > 0]', items)).toThrow(
      `JSONPath query needs more than ${JSONPATH_LIMITS.maxSteps} steps (nodes visited, values compared)`,
    );
    expect(queryJsonPath('$[?@.i < 2]', items)).toEqual([{ i: 0 }, { i: 1 }]);
  });

  it('walks and compares documents nested deeper than the call stack', () => {
    const nest = (depth: number): unknown => {
      let value: unknown = 'leaf';
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    };
    const deep = nest(100_000);
    expect(queryJsonPath('$..*', deep)).toHaveLength(100_000);
    expect(queryJsonPath('$[?@ == $[1]]', [deep, nest(100_000)])).toHaveLength(2);
  });

  it('matches patterns in linear time, including ones a backtracking engine takes exponential time on', () => {
    const text = `${'a'.repeat(5_000)}c`;
    expect(queryJsonPath("$[?match(@, '(a+)+b')]", [text])).toEqual([]);
    expect(queryJsonPath("$[?search(@, '(a|aa)*b')]", [text])).toEqual([]);
    expect(queryJsonPath("$[?match(@, '(a|aa)*c')]", [text])).toEqual([text]);
  });

  it('refuses patterns whose counted repetitions expand beyond the limit', () => {
    expect(syntaxError("$[?match(@, '(a{100}){100}')]").message).toBe(
      `13: the pattern "(a{100}){100}" needs more than ${JSONPATH_LIMITS.maxRegexStates} states; use smaller counted repetitions`,
    );
    expect(() => queryJsonPath('$.v[?match(@, $.p)]', { p: '(a{100}){100}', v: ['a'] })).toThrow(
      JsonPathLimitError,
    );
    expect(() => queryJsonPath('$.v[?match(@, $.p)]', { p: 'a'.repeat(1_001), v: ['a'] })).toThrow(
      'a regular expression is at most 1000 characters, got 1001',
    );
  });
});
