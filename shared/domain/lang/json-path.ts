/**
 * JSONPath (RFC 9535) for `llm_hints` `extract` rules: queries are parsed into a small AST and evaluated by walking
 * it. Replaces `jsonpath-plus`, which put ~24 KB (with a JavaScript-subset evaluator for filters) into every
 * function bundle. Here no code is evaluated, lookups see own properties only, and query length, nesting and work
 * are bounded, so a rule written by one user cannot read prototypes or stall a Lambda on someone else's read.
 *
 * Supported, with RFC 9535 semantics (checked against the RFC's examples and the JSONPath compliance test suite):
 *   $  .name  ['name']  ["name"] (JSON escapes, \' in single quotes)  .*  [*]  [1]  [-1]  [start:end:step]
 *   [a, 'b', 1:3]  ..name  ..*  ..[…]  blank space where the RFC allows it
 *   filters [?…] with @ and $ queries, == != < <= > >= (deep equality; a missing value is Nothing), && || !,
 *   parentheses (so the legacy spelling [?(@.price < 10)] works), literals "s" 's' 1 -1.5e3 true false null,
 *   existence tests [?@.isbn], and the functions length() count() match() search() value(), type-checked as the RFC
 *   requires (a comparison needs a singular query; match() cannot be compared; count() needs a query; ...)
 *
 * The result is the nodelist's values in document order; object members come in insertion order, which the RFC
 * leaves open.
 *
 * Deliberate differences from RFC 9535:
 * - `.length` is refused (write ['length'] for a member of that name): jsonpath-plus answered the length of an
 *   array for `$.a.length`, RFC JSONPath answers nothing for it, and a rule silently changing meaning is worse than
 *   one refused when written.
 * - A match() or search() pattern written as a literal must be a valid I-Regexp when the query is parsed; the RFC
 *   would accept the query and never match. A pattern read from the document follows the RFC (invalid → no match).
 * - ^ and $ in patterns are anchors, as the compliance test suite and every RegExp-based implementation treat them,
 *   not the plain characters RFC 9485's grammar makes of them.
 * - Refused with a message naming the construct: jsonpath-plus extensions (^ parent, ~ property names, @property,
 *   @path and other @names, [(…)] script expressions, backtick escapes) and JavaScript in filters (===, method calls
 *   such as .match(), /regex/ literals).
 * - Limits (JSONPATH_LIMITS): query length, filter nesting, work per evaluation and regular expression size;
 *   exceeding one is an error, never a partial answer.
 *
 * Where jsonpath-plus, which `extract` rules used before, answers otherwise (it reads filters as JavaScript and
 * some selectors as JavaScript property access), a rule written for it can select something else here. Everything
 * else agrees: test/unit/domain/lang/json-path.differential.test.ts compares the two on generated queries and documents
 * and asserts each of these differences:
 * - Filters: an existence test [?(@.flag)] holds for a member that is false, 0 or "" (jsonpath-plus: truthiness);
 *   == is strict
 *   ("1" == 1 is false); null, booleans and mixed types are not ordered (jsonpath-plus: null < 1 is true); a
 *   missing member is not null; a member of null or of a missing member selects nothing (jsonpath-plus failed the
 *   query); [?@.x] needs no parentheses (jsonpath-plus answered nothing).
 * - Selectors: an index selects array elements only, not the key "0" of an object or a character of a string, and a
 *   name selects object members only, not array elements; [-1] selects the last element (jsonpath-plus: nothing);
 *   unions of quoted names and of negative indexes select each one; [0:0] is empty and negative steps select
 *   backwards (jsonpath-plus: everything and nothing).
 *
 * Patterns run on an own matcher (a Thompson NFA stepped over code points), not on RegExp: a backtracking engine
 * can take exponential time on a pattern such as (a+)+ and cannot be interrupted. Time is linear in the text times
 * the pattern's size; RegExp only tests single characters against character classes and \p{…} categories.
 */
import { JsonPathLimitError, JsonPathSyntaxError } from '../errors.ts';

export const JSONPATH_LIMITS = Object.freeze({
  /** Characters of query text, and of a pattern read from the document. A rule's path is short. */
  maxLength: 1_000,
  /** Filters, parentheses and function calls inside each other. Keeps parsing and evaluation off the stack limit. */
  maxNesting: 32,
  /**
   * Work per evaluation: nodes selected or visited, values compared, 64-character chunks of strings compared or
   * counted, regex states stepped per character. A linear query over the largest context (350 KB, fewer than
   * 200,000 values) stays below; a query comparing every node with every other does not.
   */
  maxSteps: 1_000_000,
  /** States of a compiled pattern (counted repetitions expand); each character of text may step every state. */
  maxRegexStates: 1_000,
});

// ---------------------------------------------------------------------------------------------------------------
// AST

type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';
type FunctionName = 'length' | 'count' | 'match' | 'search' | 'value';

type Selector =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'wildcard' }
  | { readonly kind: 'index'; readonly index: number }
  | SliceSelector
  | { readonly kind: 'filter'; readonly test: LogicalExpression };
interface SliceSelector {
  readonly kind: 'slice';
  readonly start: number | undefined;
  readonly end: number | undefined;
  readonly step: number | undefined;
}
interface Segment {
  readonly descendant: boolean;
  readonly selectors: readonly Selector[];
}
interface Query {
  /** `$` (the document) rather than `@` (the node a filter is testing). */
  readonly root: boolean;
  readonly segments: readonly Segment[];
  /** Names and indexes only: selects at most one node, so it can be compared. */
  readonly singular: boolean;
}

type Operand =
  | { readonly kind: 'literal'; readonly value: unknown }
  | { readonly kind: 'query'; readonly query: Query }
  | { readonly kind: 'call'; readonly call: Call };
interface Call {
  readonly name: FunctionName;
  readonly args: readonly Operand[];
}
type LogicalExpression =
  | { readonly kind: 'or' | 'and'; readonly items: readonly LogicalExpression[] }
  | { readonly kind: 'not'; readonly expression: LogicalExpression }
  | { readonly kind: 'exists'; readonly query: Query }
  | { readonly kind: 'test'; readonly call: Call }
  | { readonly kind: 'compare'; readonly op: CompareOp; readonly left: Operand; readonly right: Operand };

/** A parsed query; immutable, so one parse can serve many evaluations. */
export interface JsonPathQuery extends Query {
  readonly source: string;
}

/** RFC 9535 function types: a value (or Nothing), true/false, or a nodelist. */
type ParamType = 'value' | 'nodes';
const FUNCTIONS: Readonly<
  Record<FunctionName, { readonly params: readonly ParamType[]; readonly result: 'value' | 'logical' }>
> = {
  length: { params: ['value'], result: 'value' },
  count: { params: ['nodes'], result: 'value' },
  match: { params: ['value', 'value'], result: 'logical' },
  search: { params: ['value', 'value'], result: 'logical' },
  value: { params: ['nodes'], result: 'value' },
};
const FUNCTION_LIST = 'length(), count(), match(), search() and value()';
const EXTENSION = ' is a jsonpath-plus extension, not JSONPath (RFC 9535)';

const WILDCARD: Selector = { kind: 'wildcard' };
/** The RFC's "Nothing": what a singular query answers when it selects no node, distinct from null. */
const NOTHING: unique symbol = Symbol('Nothing');

// ---------------------------------------------------------------------------------------------------------------
// API

// Parsed queries by source. Rules are validated on write and, for schema defaults, again on read; sharing the
// cache with evaluation means a warm Lambda parses each query once. Bounded: the oldest entry goes first.
const QUERY_CACHE_SIZE = 500;
const queryCache = new Map<string, JsonPathQuery>();

/** Parses and type-checks a query; throws JsonPathSyntaxError with the 1-based position of the problem. */
export function parseJsonPath(source: string): JsonPathQuery {
  let query = queryCache.get(source);
  if (!query) {
    query = parse(source);
    remember(queryCache, source, query, QUERY_CACHE_SIZE);
  }
  return query;
}

/**
 * The values of the nodes a query selects from `value`, in document order. Throws JsonPathSyntaxError for a bad
 * query and JsonPathLimitError when the evaluation exceeds a limit.
 */
export function queryJsonPath(query: JsonPathQuery | string, value: unknown): unknown[] {
  const parsed = typeof query === 'string' ? parseJsonPath(query) : query;
  return nodesOf(parsed, value, { root: value, steps: 0 });
}

function remember<V>(cache: Map<string, V>, key: string, value: V, size: number): void {
  const oldest = cache.keys().next();
  if (cache.size >= size && !oldest.done) cache.delete(oldest.value);
  cache.set(key, value);
}

// ---------------------------------------------------------------------------------------------------------------
// Parser: recursive descent over the RFC 9535 grammar; positions in errors are 1-based UTF-16 offsets.

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isBlank = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';
// name-first: ALPHA / "_" / any code point from U+0080 except surrogates; name-char adds DIGIT.
const isNameChar = (cp: number, first: boolean): boolean =>
  (cp >= 0x61 && cp <= 0x7a) ||
  (cp >= 0x41 && cp <= 0x5a) ||
  cp === 0x5f ||
  (!first && cp >= 0x30 && cp <= 0x39) ||
  (cp >= 0x80 && (cp < 0xd800 || cp > 0xdfff));
const isSingular = (segments: readonly Segment[]): boolean =>
  segments.every(
    (s) =>
      !s.descendant &&
      s.selectors.length === 1 &&
      (s.selectors[0]?.kind === 'name' || s.selectors[0]?.kind === 'index'),
  );

function parse(text: string): JsonPathQuery {
  let pos = 0;
  let depth = 0;

  // A declaration, not an arrow function, so that TypeScript narrows after calls that never return.
  function fail(detail: string, at = pos): never {
    throw new JsonPathSyntaxError(detail, at + 1);
  }
  const peek = (offset = 0): string | undefined => text[pos + offset];
  const got = (): string =>
    pos < text.length ? JSON.stringify(String.fromCodePoint(text.codePointAt(pos) ?? 0)) : 'end of path';
  const skipBlanks = (): void => {
    while (isBlank(text[pos])) pos++;
  };
  const nest = (): void => {
    if (++depth > JSONPATH_LIMITS.maxNesting) {
      fail(`filters, parentheses and function calls nest deeper than ${JSONPATH_LIMITS.maxNesting} levels`);
    }
  };
  // Constructs people bring from jsonpath-plus, named so that the error says what to do instead.
  // Where the last .name ended, so that `$.foo-bar` can be answered with ['foo-bar'].
  let nameStart = -1;
  let nameEnd = -1;
  const bracketHint = (): string => {
    if (pos !== nameEnd) return '';
    const name = /^[^.[\]\s]*/.exec(text.slice(nameStart))?.[0] ?? '';
    return `; a name with other characters goes in brackets: ['${name}']`;
  };
  const refuseExtension = (): void => {
    const c = peek();
    if (c === '^') fail(`the parent operator ^${EXTENSION}`);
    if (c === '~') fail(`~ for property names${EXTENSION}`);
    if (c === '`') fail("backtick escapes are a jsonpath-plus extension; quote the name instead: ['name']");
  };

  const query = (): Query => {
    const root = peek() === '$';
    const start = pos;
    pos++;
    if (!root) {
      const word = /^[A-Za-z_]\w*/.exec(text.slice(pos))?.[0];
      if (word) fail(`@${word}${EXTENSION}`, start);
    }
    const list: Segment[] = [];
    for (;;) {
      const before = pos;
      skipBlanks();
      const c = peek();
      if (c === '[') list.push({ descendant: false, selectors: bracketed() });
      else if (c === '.') list.push(dotted());
      else {
        pos = before;
        break;
      }
    }
    return { root, segments: list, singular: isSingular(list) };
  };

  const dotted = (): Segment => {
    const dot = pos;
    pos++;
    const descendant = peek() === '.';
    if (descendant) pos++;
    if (peek() === '*') {
      pos++;
      return { descendant, selectors: [WILDCARD] };
    }
    if (descendant && peek() === '[') return { descendant, selectors: bracketed() };
    const start = pos;
    while (pos < text.length && isNameChar(text.codePointAt(pos) ?? 0, pos === start)) {
      pos += (text.codePointAt(pos) ?? 0) > 0xffff ? 2 : 1;
    }
    const name = text.slice(start, pos);
    if (name === '') {
      const digits = /^\d+/.exec(text.slice(pos))?.[0];
      if (digits) fail(`an index goes in brackets: [${digits}], not .${digits}`);
      if (peek() === '[') fail('expected a name or "*" after "."; write [...] without the dot');
      refuseExtension();
      fail(`expected a name or "*" after "${descendant ? '..' : '.'}", got ${got()}`);
    }
    if (name === 'length' && peek() !== '(') {
      fail(
        `".length" is not JSONPath: use length(@.a) in a filter, or ['length'] for a member named "length"`,
        dot,
      );
    }
    if (peek() === '(') {
      fail(
        `JavaScript method calls such as .${name}() are not JSONPath; its functions are ${FUNCTION_LIST}`,
        dot,
      );
    }
    nameStart = start;
    nameEnd = pos;
    return { descendant, selectors: [{ kind: 'name', name }] };
  };

  const bracketed = (): Selector[] => {
    const open = pos;
    pos++;
    const selectors: Selector[] = [];
    for (;;) {
      skipBlanks();
      const item = selector();
      selectors.push(item);
      skipBlanks();
      const c = peek();
      if (c === ']') {
        pos++;
        return selectors;
      }
      if (c === ',') {
        pos++;
        continue;
      }
      refuseExtension();
      if (c === undefined) fail(`expected "]" to close "[" at ${open + 1}, got end of path`);
      fail(
        item.kind === 'filter'
          ? `expected "&&", "||", "," or "]" after the filter, got ${got()}${bracketHint()}`
          : `expected "," or "]", got ${got()}`,
      );
    }
  };

  const selector = (): Selector => {
    const c = peek();
    if (c === "'" || c === '"') return { kind: 'name', name: string() };
    if (c === '*') {
      pos++;
      return WILDCARD;
    }
    if (c === '?') {
      pos++;
      skipBlanks();
      return { kind: 'filter', test: logical() };
    }
    if (c === ':' || c === '-' || isDigit(c)) return indexOrSlice();
    if (c === '(') {
      fail(`a script expression [(...)]${EXTENSION}; use [-1] for the last element`);
    }
    if (c === '@' || c === '$') fail(`a query in brackets needs a filter: [?${c}…]`);
    const word = /^[A-Za-z_]\w*/.exec(text.slice(pos))?.[0];
    if (word) fail(`names in brackets are quoted: ['${word}']`);
    refuseExtension();
    return fail(
      `expected a selector (a quoted name, an index, a slice, "*" or "?" and a filter), got ${got()}`,
    );
  };

  const indexOrSlice = (): Selector => {
    const start = peek() === ':' ? undefined : integer();
    skipBlanks();
    if (start !== undefined && peek() !== ':') return { kind: 'index', index: start };
    pos++;
    skipBlanks();
    const end = peek() === '-' || isDigit(peek()) ? integer() : undefined;
    skipBlanks();
    let step: number | undefined;
    if (peek() === ':') {
      pos++;
      skipBlanks();
      step = peek() === '-' || isDigit(peek()) ? integer() : undefined;
    }
    return { kind: 'slice', start, end, step };
  };

  const integer = (): number => {
    const start = pos;
    if (peek() === '-') pos++;
    if (peek() === '0') {
      pos++;
      if (pos - start === 2) fail('-0 is not an integer here', start);
    } else {
      if (!isDigit(peek())) fail(`expected a digit, got ${got()}`);
      while (isDigit(peek())) pos++;
    }
    if (isDigit(peek())) fail('integers have no leading zeros', start);
    if (peek() === '.' || peek() === 'e' || peek() === 'E')
      fail('indexes and slice bounds are integers', start);
    const value = Number(text.slice(start, pos));
    if (!Number.isSafeInteger(value)) fail('an index must be between -(2^53-1) and 2^53-1', start);
    return value;
  };

  const string = (): string => {
    const quote = peek();
    const open = pos;
    pos++;
    let out = '';
    for (;;) {
      const c = peek();
      if (c === undefined) fail(`expected ${quote} to close the string at ${open + 1}, got end of path`);
      if (c === quote) {
        pos++;
        return out;
      }
      const code = text.charCodeAt(pos);
      if (c === '\\') {
        out += stringEscape(quote);
        continue;
      }
      if (code < 0x20)
        fail(`control character U+${code.toString(16).padStart(4, '0')} must be escaped in a string`);
      if (code >= 0xd800 && code <= 0xdfff) {
        const low = text.charCodeAt(pos + 1);
        if (code > 0xdbff || !(low >= 0xdc00 && low <= 0xdfff)) fail('unpaired surrogate in a string');
        out += text.slice(pos, pos + 2);
        pos += 2;
        continue;
      }
      out += c;
      pos++;
    }
  };

  const stringEscape = (quote: string | undefined): string => {
    const at = pos;
    const c = peek(1);
    pos += 2;
    switch (c) {
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '/':
      case '\\':
        return c;
      case 'u': {
        const unit = hex4(at);
        if (unit >= 0xdc00 && unit <= 0xdfff) fail('unpaired surrogate escape', at);
        if (unit < 0xd800 || unit > 0xdbff) return String.fromCharCode(unit);
        let low = -1;
        if (peek() === '\\' && peek(1) === 'u') {
          pos += 2;
          low = hex4(pos - 2);
        }
        if (!(low >= 0xdc00 && low <= 0xdfff))
          fail('a high surrogate escape must be followed by a low one', at);
        return String.fromCharCode(unit, low);
      }
    }
    if (c !== undefined && c === quote) return c;
    return fail(`invalid escape \\${c ?? ''} in a ${quote === '"' ? 'double' : 'single'}-quoted string`, at);
  };

  const hex4 = (at: number): number => {
    const digits = text.slice(pos, pos + 4);
    if (!/^[0-9A-Fa-f]{4}$/.test(digits)) fail('expected 4 hex digits after \\u', at);
    pos += 4;
    return Number.parseInt(digits, 16);
  };

  // logical-expr: || binds looser than &&, which binds looser than ! and parentheses.
  const logical = (): LogicalExpression => {
    nest();
    const items = [conjunction()];
    for (;;) {
      const before = pos;
      skipBlanks();
      if (!text.startsWith('||', pos)) {
        pos = before;
        break;
      }
      pos += 2;
      skipBlanks();
      items.push(conjunction());
    }
    depth--;
    return items.length === 1 ? (items[0] as LogicalExpression) : { kind: 'or', items };
  };

  const conjunction = (): LogicalExpression => {
    const items = [basic()];
    for (;;) {
      const before = pos;
      skipBlanks();
      if (!text.startsWith('&&', pos)) {
        pos = before;
        break;
      }
      pos += 2;
      skipBlanks();
      items.push(basic());
    }
    return items.length === 1 ? (items[0] as LogicalExpression) : { kind: 'and', items };
  };

  const basic = (): LogicalExpression => {
    const start = pos;
    if (peek() === '!' && peek(1) !== '=') {
      pos++;
      skipBlanks();
      if (peek() === '(') return { kind: 'not', expression: parenthesized() };
      const expression = comparisonOrTest();
      if (expression.kind === 'compare') fail('! negates a test; negate a comparison as !(...)', start);
      return { kind: 'not', expression };
    }
    return peek() === '(' ? parenthesized() : comparisonOrTest();
  };

  const parenthesized = (): LogicalExpression => {
    const open = pos;
    pos++;
    skipBlanks();
    const expression = logical();
    skipBlanks();
    if (peek() !== ')') {
      refuseExtension();
      fail(`expected ")" to close "(" at ${open + 1}, got ${got()}`);
    }
    pos++;
    return expression;
  };

  const comparisonOrTest = (): LogicalExpression => {
    const start = pos;
    const left = operand();
    const before = pos;
    skipBlanks();
    const op = comparisonOp();
    if (!op) {
      pos = before;
      if (left.kind === 'query') return { kind: 'exists', query: left.query };
      if (left.kind === 'call' && FUNCTIONS[left.call.name].result === 'logical') {
        return { kind: 'test', call: left.call };
      }
      return fail(
        left.kind === 'call'
          ? `${left.call.name}() answers a value, not true or false; compare it, e.g. ${left.call.name}(…) > 0`
          : 'a literal alone is not a test; compare it with a query, e.g. @.a == 1',
        start,
      );
    }
    comparable(left, start);
    skipBlanks();
    const rightStart = pos;
    const right = operand();
    comparable(right, rightStart);
    return { kind: 'compare', op, left, right };
  };

  const comparisonOp = (): CompareOp | undefined => {
    for (const js of ['===', '!==']) {
      if (text.startsWith(js, pos)) fail(`${js} is JavaScript; JSONPath compares with ${js.slice(0, 2)}`);
    }
    for (const op of ['==', '!=', '<=', '>=', '<', '>'] as const) {
      if (text.startsWith(op, pos)) {
        pos += op.length;
        return op;
      }
    }
    if (peek() === '=') fail('expected "==" to compare, got "="');
    return undefined;
  };

  const comparable = (operand: Operand, at: number): void => {
    if (operand.kind === 'query' && !operand.query.singular) {
      fail(
        'a comparison needs a singular query: names and indexes only, no wildcards, slices, filters or ..',
        at,
      );
    }
    if (operand.kind === 'call' && FUNCTIONS[operand.call.name].result !== 'value') {
      fail(
        `${operand.call.name}() answers true or false and cannot be compared; use it alone or after !`,
        at,
      );
    }
  };

  const operand = (): Operand => {
    const c = peek();
    if (c === '@' || c === '$') return { kind: 'query', query: query() };
    if (c === "'" || c === '"') return { kind: 'literal', value: string() };
    if (c === '-' || isDigit(c)) return { kind: 'literal', value: number() };
    const start = pos;
    const word = /^[A-Za-z_]\w*/.exec(text.slice(pos))?.[0];
    if (word) {
      pos += word.length;
      if (peek() === '(') return { kind: 'call', call: call(word, start) };
      if (word === 'true' || word === 'false') return { kind: 'literal', value: word === 'true' };
      if (word === 'null') return { kind: 'literal', value: null };
      skipBlanks();
      if (peek() === '(') fail(`no blank space may come between ${word} and "("`, start + word.length);
      fail(`expected @ or $ before "${word}": write @.${word} for a member of the current node`, start);
    }
    if (c === '/')
      fail('/…/ regular expression literals are JavaScript; use match(@.a, "…") or search(@.a, "…")');
    refuseExtension();
    return fail(`expected a query (@ or $), a literal or a function call, got ${got()}`);
  };

  const number = (): number => {
    const start = pos;
    const literal = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/.exec(text.slice(pos))?.[0];
    if (!literal) return fail(`expected a number, got ${got()}`);
    pos += literal.length;
    if (isDigit(peek())) fail('numbers have no leading zeros', start);
    if (peek() === '.' || peek() === 'e' || peek() === 'E') fail(`expected a digit after ${got()}`, pos + 1);
    return Number(literal);
  };

  const call = (word: string, start: number): Call => {
    if (!Object.hasOwn(FUNCTIONS, word))
      fail(`unknown function ${word}(); the functions are ${FUNCTION_LIST}`, start);
    const name = word as FunctionName;
    const { params } = FUNCTIONS[name];
    nest();
    pos++;
    skipBlanks();
    const args: Operand[] = [];
    while (peek() !== ')') {
      if (args.length > 0) {
        if (peek() !== ',') fail(`expected "," or ")" in ${name}(), got ${got()}`);
        pos++;
        skipBlanks();
      }
      args.push(argument(name, args.length));
      skipBlanks();
    }
    pos++;
    if (args.length !== params.length) arity(name, start, `, got ${args.length}`);
    depth--;
    return { name, args };
  };

  // function-argument: literal, filter query, function call or logical expression, checked against the
  // parameter's type (RFC 9535 2.4.3). No standard function takes a logical expression.
  const argument = (name: FunctionName, index: number): Operand => {
    const at = pos;
    const type = FUNCTIONS[name].params[index];
    const nth = `argument ${index + 1} of ${name}()`;
    const expected =
      type === 'nodes'
        ? 'a query (@… or $…)'
        : 'a value: a literal, a singular query (names and indexes only) or a function answering a value';
    if (type === undefined) arity(name, at, '');
    if (peek() === '!' || peek() === '(') fail(`${nth} must be ${expected}, not a logical expression`);
    const value = operand();
    const before = pos;
    skipBlanks();
    if (comparisonOp() || text.startsWith('&&', pos) || text.startsWith('||', pos)) {
      fail(`${nth} must be ${expected}, not a logical expression`, at);
    }
    pos = before;
    if (type === 'nodes' ? value.kind !== 'query' : !isValueOperand(value))
      fail(`${nth} must be ${expected}`, at);
    const pattern = (name === 'match' || name === 'search') && index === 1 && value.kind === 'literal';
    if (pattern && typeof value.value === 'string') {
      let program: RegexProgram | string;
      try {
        program = regexProgram(value.value);
      } catch (error) {
        if (!(error instanceof JsonPathLimitError)) throw error;
        return fail(error.message, at);
      }
      if (typeof program === 'string') fail(`${name}() needs an I-Regexp (RFC 9485): ${program}`, at);
    }
    return value;
  };

  const arity = (name: FunctionName, at: number, got: string): never => {
    const count = FUNCTIONS[name].params.length;
    return fail(`${name}() takes ${count} argument${count === 1 ? '' : 's'}${got}`, at);
  };

  const isValueOperand = (value: Operand): boolean =>
    value.kind === 'literal' ||
    (value.kind === 'query' && value.query.singular) ||
    (value.kind === 'call' && FUNCTIONS[value.call.name].result === 'value');

  if (text.length > JSONPATH_LIMITS.maxLength) {
    fail(
      `a JSONPath is at most ${JSONPATH_LIMITS.maxLength} characters, got ${text.length}`,
      JSONPATH_LIMITS.maxLength,
    );
  }
  if (peek() !== '$') {
    if (peek() === '@') fail('@ (the current node) only exists inside a filter [?…]; a path starts with $');
    fail(`expected "$" at the start, got ${got()}`);
  }
  const parsed = query();
  if (pos < text.length) {
    refuseExtension();
    if (isBlank(peek())) {
      const rest = pos;
      skipBlanks();
      if (pos === text.length) fail('a path cannot end with blank space', rest);
    }
    fail(`expected ".", "[" or the end of the path, got ${got()}${bracketHint()}`);
  }
  return { ...parsed, source: text };
}

// ---------------------------------------------------------------------------------------------------------------
// Evaluation

interface Evaluation {
  readonly root: unknown;
  steps: number;
}

function charge(evaluation: Evaluation, steps: number): void {
  evaluation.steps += steps;
  if (evaluation.steps > JSONPATH_LIMITS.maxSteps) {
    throw new JsonPathLimitError(
      `JSONPath query needs more than ${JSONPATH_LIMITS.maxSteps} steps (nodes visited, values compared)`,
    );
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Own enumerable members only: nothing on a prototype is ever selected.
const childrenOf = (value: unknown): readonly unknown[] =>
  Array.isArray(value) ? value : isObject(value) ? Object.values(value) : [];

function nodesOf(query: Query, current: unknown, evaluation: Evaluation): unknown[] {
  let nodes = [query.root ? evaluation.root : current];
  for (const segment of query.segments) {
    const next: unknown[] = [];
    for (const node of nodes) {
      if (!segment.descendant) {
        select(segment.selectors, node, next, evaluation);
        continue;
      }
      // Descendants in document order, the node before its children; a stack, not recursion, so a deeply
      // nested document cannot overflow the call stack.
      const pending = [node];
      while (pending.length > 0) {
        const visited = pending.pop();
        charge(evaluation, 1);
        select(segment.selectors, visited, next, evaluation);
        const children = childrenOf(visited);
        for (let i = children.length - 1; i >= 0; i--) pending.push(children[i]);
      }
    }
    nodes = next;
  }
  return nodes;
}

function select(selectors: readonly Selector[], node: unknown, out: unknown[], evaluation: Evaluation): void {
  const emit = (value: unknown): void => {
    charge(evaluation, 1);
    out.push(value);
  };
  for (const selector of selectors) {
    switch (selector.kind) {
      case 'name':
        if (isObject(node) && Object.hasOwn(node, selector.name)) emit(node[selector.name]);
        break;
      case 'wildcard':
        for (const child of childrenOf(node)) emit(child);
        break;
      case 'index':
        if (Array.isArray(node)) {
          const i = selector.index < 0 ? node.length + selector.index : selector.index;
          if (i >= 0 && i < node.length) emit(node[i]);
        }
        break;
      case 'slice':
        if (Array.isArray(node)) slice(node, selector, emit);
        break;
      case 'filter':
        for (const child of childrenOf(node)) if (test(selector.test, child, evaluation)) emit(child);
        break;
    }
  }
}

// RFC 9535 2.3.4.2.2: bounds are normalized and clamped so that any step walks only inside the array.
function slice(array: readonly unknown[], selector: SliceSelector, emit: (value: unknown) => void): void {
  const length = array.length;
  const step = selector.step ?? 1;
  const normalize = (i: number): number => (i >= 0 ? i : length + i);
  if (step > 0) {
    const lower = Math.min(Math.max(normalize(selector.start ?? 0), 0), length);
    const upper = Math.min(Math.max(normalize(selector.end ?? length), 0), length);
    for (let i = lower; i < upper; i += step) emit(array[i]);
  } else if (step < 0) {
    const upper = Math.min(Math.max(normalize(selector.start ?? length - 1), -1), length - 1);
    const lower = Math.min(Math.max(normalize(selector.end ?? -length - 1), -1), length - 1);
    for (let i = upper; lower < i; i += step) emit(array[i]);
  }
}

function test(expression: LogicalExpression, current: unknown, evaluation: Evaluation): boolean {
  switch (expression.kind) {
    case 'or':
      return expression.items.some((item) => test(item, current, evaluation));
    case 'and':
      return expression.items.every((item) => test(item, current, evaluation));
    case 'not':
      return !test(expression.expression, current, evaluation);
    case 'exists':
      return nodesOf(expression.query, current, evaluation).length > 0;
    case 'test':
      return evaluate(expression.call, current, evaluation) === true;
    case 'compare': {
      const a = operandValue(expression.left, current, evaluation);
      const b = operandValue(expression.right, current, evaluation);
      switch (expression.op) {
        case '==':
          return equal(a, b, evaluation);
        case '!=':
          return !equal(a, b, evaluation);
        case '<':
          return less(a, b, evaluation);
        case '>':
          return less(b, a, evaluation);
        case '<=':
          return less(a, b, evaluation) || equal(a, b, evaluation);
        case '>=':
          return less(b, a, evaluation) || equal(a, b, evaluation);
      }
    }
  }
}

/** A value-typed operand: the value, or NOTHING when a query selects no node or a function has no answer. */
function operandValue(operand: Operand | undefined, current: unknown, evaluation: Evaluation): unknown {
  if (operand === undefined) return NOTHING;
  if (operand.kind === 'literal') return operand.value;
  if (operand.kind === 'call') return evaluate(operand.call, current, evaluation);
  const nodes = nodesOf(operand.query, current, evaluation);
  return nodes.length === 1 ? nodes[0] : NOTHING;
}

function nodesArgument(operand: Operand | undefined, current: unknown, evaluation: Evaluation): unknown[] {
  return operand?.kind === 'query' ? nodesOf(operand.query, current, evaluation) : [];
}

function evaluate(call: Call, current: unknown, evaluation: Evaluation): unknown {
  const [first, second] = call.args;
  switch (call.name) {
    case 'count':
      return nodesArgument(first, current, evaluation).length;
    case 'value': {
      const nodes = nodesArgument(first, current, evaluation);
      return nodes.length === 1 ? nodes[0] : NOTHING;
    }
    case 'length': {
      const value = operandValue(first, current, evaluation);
      if (typeof value === 'string') {
        charge(evaluation, value.length >> 6);
        return codePointLength(value);
      }
      if (Array.isArray(value)) return value.length;
      return isObject(value) ? Object.keys(value).length : NOTHING;
    }
    case 'match':
    case 'search': {
      const text = operandValue(first, current, evaluation);
      const pattern = operandValue(second, current, evaluation);
      if (typeof text !== 'string' || typeof pattern !== 'string') return false;
      const program = regexProgram(pattern);
      return typeof program !== 'string' && runRegex(program, text, call.name === 'match', evaluation);
    }
  }
}

function codePointLength(value: string): number {
  let length = value.length;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    const next = value.charCodeAt(i + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      length--;
      i++;
    }
  }
  return length;
}

// RFC 9535 2.3.5.2.2: numbers by value, strings and literals as such, arrays element by element, objects member
// by member regardless of order; Nothing equals only Nothing. Iterative, so deep documents cannot overflow.
function equal(a: unknown, b: unknown, evaluation: Evaluation): boolean {
  const pending = [a, b];
  while (pending.length > 0) {
    const y = pending.pop();
    const x = pending.pop();
    charge(evaluation, 1);
    if (typeof x === 'string' && typeof y === 'string') charge(evaluation, Math.min(x.length, y.length) >> 6);
    if (x === y) continue;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pending.push(x[i], y[i]);
      continue;
    }
    if (!isObject(x) || !isObject(y)) return false;
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const key of keys) {
      if (!Object.hasOwn(y, key)) return false;
      pending.push(x[key], y[key]);
    }
  }
  return true;
}

// Only numbers and strings are ordered; strings by Unicode code point, which differs from JavaScript's UTF-16
// order when a surrogate pair (a code point above U+FFFF) meets a character in U+E000–U+FFFF.
function less(a: unknown, b: unknown, evaluation: Evaluation): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a < b;
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  charge(evaluation, 1 + (Math.min(a.length, b.length) >> 6));
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointOrder(x) < codePointOrder(y);
  }
  return a.length < b.length;
}

const codePointOrder = (unit: number): number =>
  unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;

// ---------------------------------------------------------------------------------------------------------------
// I-Regexp (RFC 9485), matched by a Thompson NFA: every state is stepped at most once per character, so time is
// linear in the text whatever the pattern (a backtracking RegExp is exponential on (a+)+b).

type CodePointTest = (codePoint: number) => boolean;
type RegexNode =
  | { readonly kind: 'char'; readonly test: CodePointTest }
  | { readonly kind: 'anchor'; readonly end: boolean }
  | { readonly kind: 'seq' | 'alt'; readonly items: readonly RegexNode[] }
  | { readonly kind: 'repeat'; readonly item: RegexNode; readonly min: number; readonly max: number };

/** A test consumes one code point; an anchor asserts the start or the end; otherwise the state splits. */
interface RegexState {
  readonly test?: CodePointTest;
  readonly anchor?: 'start' | 'end';
  out: number;
  readonly out2: number;
}
interface RegexProgram {
  readonly states: readonly RegexState[];
  readonly start: number;
}
const ACCEPT = 0;

// Compiled patterns, or why a pattern is not an I-Regexp. Patterns may come from documents, hence the bound.
const REGEX_CACHE_SIZE = 200;
const regexCache = new Map<string, RegexProgram | string>();

function regexProgram(pattern: string): RegexProgram | string {
  let program = regexCache.get(pattern);
  if (program === undefined) {
    program = compilePattern(pattern);
    remember(regexCache, pattern, program, REGEX_CACHE_SIZE);
  }
  return program;
}

function compilePattern(pattern: string): RegexProgram | string {
  if (pattern.length > JSONPATH_LIMITS.maxLength) {
    throw new JsonPathLimitError(
      `a regular expression is at most ${JSONPATH_LIMITS.maxLength} characters, got ${pattern.length}`,
    );
  }
  let node: RegexNode;
  try {
    node = parseIRegexp(pattern);
  } catch (error) {
    if (!(error instanceof JsonPathSyntaxError)) throw error;
    return `${error.detail} (character ${error.position} of the pattern)`;
  }
  if (regexSize(node) > JSONPATH_LIMITS.maxRegexStates) {
    throw new JsonPathLimitError(
      `the pattern ${JSON.stringify(pattern)} needs more than ${JSONPATH_LIMITS.maxRegexStates} states; use smaller counted repetitions`,
    );
  }
  const states: RegexState[] = [{ out: -1, out2: -1 }];
  const add = (state: RegexState): number => states.push(state) - 1;
  // Builds `node` so that it continues at state `next`; answers its first state.
  const build = (node: RegexNode, next: number): number => {
    switch (node.kind) {
      case 'char':
        return add({ test: node.test, out: next, out2: -1 });
      case 'anchor':
        return add({ anchor: node.end ? 'end' : 'start', out: next, out2: -1 });
      case 'seq':
        return node.items.reduceRight((at, item) => build(item, at), next);
      case 'alt':
        return node.items
          .slice(0, -1)
          .reduceRight(
            (at, item) => add({ out: build(item, next), out2: at }),
            build(node.items.at(-1) as RegexNode, next),
          );
      case 'repeat': {
        let at = next;
        if (node.max === Number.POSITIVE_INFINITY) {
          const loop = add({ out: -1, out2: next });
          (states[loop] as RegexState).out = build(node.item, loop);
          at = loop;
        } else {
          for (let i = node.min; i < node.max; i++) at = add({ out: build(node.item, at), out2: next });
        }
        for (let i = 0; i < node.min; i++) at = build(node.item, at);
        return at;
      }
    }
  };
  return { states, start: build(node, ACCEPT) };
}

function regexSize(node: RegexNode): number {
  switch (node.kind) {
    case 'char':
    case 'anchor':
      return 1;
    case 'seq':
    case 'alt':
      return node.items.reduce((sum, item) => sum + regexSize(item), node.items.length);
    case 'repeat': {
      const item = regexSize(node.item);
      return node.max === Number.POSITIVE_INFINITY ? item * (node.min + 1) + 1 : item * node.max + node.max;
    }
  }
}

/** `whole`: match() must consume the entire text; search() accepts a match anywhere in it. */
function runRegex(program: RegexProgram, text: string, whole: boolean, evaluation: Evaluation): boolean {
  const { states, start } = program;
  const marks = new Int32Array(states.length).fill(-1);
  let generation = 0;
  let position = 0;
  // Follows splits and anchors from `first` and collects the states that wait for a character (or accept).
  const add = (into: number[], first: number): void => {
    const stack = [first];
    while (stack.length > 0) {
      const index = stack.pop() as number;
      if (index < 0 || marks[index] === generation) continue;
      marks[index] = generation;
      const state = states[index] as RegexState;
      if (state.test || index === ACCEPT) into.push(index);
      else if (!state.anchor) stack.push(state.out2, state.out);
      else if (state.anchor === 'start' ? position === 0 : position === text.length) stack.push(state.out);
    }
  };
  let threads: number[] = [];
  add(threads, start);
  while (position < text.length) {
    if (!whole && marks[ACCEPT] === generation) return true;
    const codePoint = text.codePointAt(position) ?? 0;
    position += codePoint > 0xffff ? 2 : 1;
    charge(evaluation, threads.length);
    generation++;
    const next: number[] = [];
    for (const index of threads) {
      const state = states[index] as RegexState;
      if (state.test?.(codePoint)) add(next, state.out);
    }
    if (!whole) add(next, start);
    else if (next.length === 0) return false;
    threads = next;
  }
  return marks[ACCEPT] === generation;
}

const SINGLE_CHAR_ESCAPES = '()*+-.?[\\]^{|}';
const CATEGORY = /^(?:L[lmotu]?|M[cen]?|N[dlo]?|P[c-fios]?|Z[lps]?|S[ckmo]?|C[cfno]?)$/;
const notLineBreak: CodePointTest = (codePoint) => codePoint !== 0x0a && codePoint !== 0x0d;

/** Parses RFC 9485 I-Regexp syntax; positions in errors count code points. */
function parseIRegexp(pattern: string): RegexNode {
  const chars = Array.from(pattern);
  let i = 0;
  function fail(detail: string, at = i): never {
    throw new JsonPathSyntaxError(detail, at + 1);
  }
  const literal = (c: string, at: number): RegexNode => {
    const codePoint = c.codePointAt(0) ?? 0;
    if (codePoint >= 0xd800 && codePoint <= 0xdfff) fail('unpaired surrogate', at);
    return { kind: 'char', test: (x) => x === codePoint };
  };
  // A character class or \p{…} category becomes a one-character RegExp: the syntax I-Regexp allows there means
  // the same in a JavaScript `u` class, and one character cannot backtrack.
  const oneCharacter = (source: string, at: number): RegexNode => {
    let regex: RegExp;
    try {
      regex = new RegExp(`^${source}$`, 'u');
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      return fail('a range in the class is out of order', at);
    }
    return { kind: 'char', test: (x) => regex.test(String.fromCodePoint(x)) };
  };
  // After a backslash: a code point, or the source of a \p{…} / \P{…} category.
  const regexEscape = (at: number): string | { readonly category: string } => {
    const c = chars[i++];
    if (c === 'p' || c === 'P') {
      const close = chars.indexOf('}', i);
      const name = chars.slice(i + 1, close).join('');
      if (chars[i] !== '{' || close < 0 || !CATEGORY.test(name)) {
        fail(`expected a Unicode category such as \\${c}{L} or \\${c}{Lu}`, at);
      }
      i = close + 1;
      return { category: `\\${c}{${name}}` };
    }
    if (c === 'n') return '\n';
    if (c === 'r') return '\r';
    if (c === 't') return '\t';
    if (c !== undefined && SINGLE_CHAR_ESCAPES.includes(c)) return c;
    return fail(
      c === undefined
        ? 'a pattern cannot end with \\'
        : /[dDwWsSbB]/.test(c)
          ? `\\${c} is not I-Regexp; write a class such as [0-9] or \\p{L}`
          : `\\${c} is not an I-Regexp escape`,
      at,
    );
  };
  const alternation = (): RegexNode => {
    const items = [branch()];
    while (chars[i] === '|') {
      i++;
      items.push(branch());
    }
    return items.length === 1 ? (items[0] as RegexNode) : { kind: 'alt', items };
  };
  const branch = (): RegexNode => {
    const items: RegexNode[] = [];
    while (i < chars.length && chars[i] !== '|' && chars[i] !== ')') items.push(piece());
    return items.length === 1 ? (items[0] as RegexNode) : { kind: 'seq', items };
  };
  const piece = (): RegexNode => {
    const item = atom();
    const at = i;
    let min = 0;
    let max = Number.POSITIVE_INFINITY;
    switch (chars[i]) {
      case '*':
        break;
      case '+':
        min = 1;
        break;
      case '?':
        max = 1;
        break;
      case '{':
        i++;
        min = quantity();
        max = min;
        if (chars[i] === ',') {
          i++;
          max = chars[i] === '}' ? Number.POSITIVE_INFINITY : quantity();
        }
        if (chars[i] !== '}') fail('expected "}" to close the repetition');
        if (max < min) fail(`a repetition {${min},${max}} needs its minimum first`, at);
        break;
      default:
        return item;
    }
    i++;
    if ('*+?{'.includes(chars[i] ?? '_')) {
      fail('a quantifier cannot follow a quantifier; lazy (*?) and possessive (*+) forms are not I-Regexp');
    }
    return { kind: 'repeat', item, min, max };
  };
  const quantity = (): number => {
    const start = i;
    while (isDigit(chars[i])) i++;
    if (i === start) fail('expected a number in {…}');
    return Number(chars.slice(start, i).join(''));
  };
  const atom = (): RegexNode => {
    const at = i;
    const c = chars[i++] as string;
    switch (c) {
      case '(': {
        if (chars[i] === '?') fail('(?…) groups and lookarounds are not I-Regexp; use (…)', at);
        const inner = alternation();
        if (chars[i] !== ')') fail(`expected ")" to close "(" at character ${at + 1}`);
        i++;
        return inner;
      }
      case '.':
        return { kind: 'char', test: notLineBreak };
      case '^':
      case '$':
        return { kind: 'anchor', end: c === '$' };
      case '[':
        return characterClass(at);
      case '\\': {
        const escaped = regexEscape(at);
        return typeof escaped === 'string' ? literal(escaped, at) : oneCharacter(escaped.category, at);
      }
      case '*':
      case '+':
      case '?':
      case '{':
        return fail(`"${c}" has nothing to repeat`, at);
      case ']':
      case '}':
        return fail(`"${c}" must be escaped as \\${c}`, at);
    }
    return literal(c, at);
  };
  // charClassExpr: "[" ["^"] ("-" / CCE1) *CCE1 ["-"] "]", where CCE1 is a character, a range or \p{…}.
  const characterClass = (open: number): RegexNode => {
    if (chars[i] === '^') i++;
    const first = i;
    for (;;) {
      const c = chars[i];
      if (c === undefined) fail(`expected "]" to close "[" at character ${open + 1}`);
      if (c === ']' && i > first) break;
      if (c === '-') {
        if (i > first && chars[i + 1] !== ']') fail('"-" in a class comes first, last, or escaped as \\-');
        i++;
        continue;
      }
      if (c === '\\' && (chars[i + 1] === 'p' || chars[i + 1] === 'P')) {
        i++;
        regexEscape(i - 1);
        continue;
      }
      classCharacter();
      if (chars[i] === '-' && chars[i + 1] !== ']' && chars[i + 1] !== undefined) {
        i++;
        classCharacter();
      }
    }
    i++;
    return oneCharacter(chars.slice(open, i).join(''), open);
  };
  const classCharacter = (): void => {
    const at = i;
    const c = chars[i++];
    if (c === '\\') {
      if (typeof regexEscape(at) !== 'string') fail('a range cannot start or end with a category', at);
      return;
    }
    if (c === '[' || c === ']' || c === '-') fail(`"${c}" in a class must be escaped as \\${c}`, at);
    literal(c ?? '', at);
  };

  const node = alternation();
  if (i < chars.length) fail('unmatched ")"');
  return node;
}
