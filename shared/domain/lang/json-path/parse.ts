/**
 * The JSONPath parser: recursive descent over the RFC 9535 grammar into an immutable AST, type-checking function
 * arguments as the RFC requires and refusing jsonpath-plus and JavaScript constructs by name. Positions in errors
 * are 1-based UTF-16 offsets. A literal match()/search() pattern is compiled here, so a bad one fails the query.
 */
import { JsonPathLimitError, JsonPathSyntaxError } from '../../errors.ts';
import { type RegexProgram, regexProgram } from './i-regexp.ts';
import { JSONPATH_LIMITS } from './limits.ts';

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';
export type FunctionName = 'length' | 'count' | 'match' | 'search' | 'value';

export type Selector =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'wildcard' }
  | { readonly kind: 'index'; readonly index: number }
  | SliceSelector
  | { readonly kind: 'filter'; readonly test: LogicalExpression };
export interface SliceSelector {
  readonly kind: 'slice';
  readonly start: number | undefined;
  readonly end: number | undefined;
  readonly step: number | undefined;
}
export interface Segment {
  readonly descendant: boolean;
  readonly selectors: readonly Selector[];
}
export interface Query {
  /** `$` (the document) rather than `@` (the node a filter is testing). */
  readonly root: boolean;
  readonly segments: readonly Segment[];
  /** Names and indexes only: selects at most one node, so it can be compared. */
  readonly singular: boolean;
}

export type Operand =
  | { readonly kind: 'literal'; readonly value: unknown }
  | { readonly kind: 'query'; readonly query: Query }
  | { readonly kind: 'call'; readonly call: Call };
export interface Call {
  readonly name: FunctionName;
  readonly args: readonly Operand[];
}
export type LogicalExpression =
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

export function parse(text: string): JsonPathQuery {
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
