/**
 * I-Regexp (RFC 9485), the pattern language of JSONPath's match() and search(), matched by a Thompson NFA: every
 * state is stepped at most once per character, so time is linear in the text whatever the pattern (a backtracking
 * RegExp is exponential on (a+)+b). Every character's step over the live states is charged to the caller's budget.
 *
 * Why not the shared linear engine (`../linear-regex.ts`, re2js): re2js cannot be metered or interrupted, and one
 * search() of a 350 KB string with a pattern near the state limit takes seconds there; here the same work is
 * charged step by step and stops at JSONPATH_LIMITS.maxSteps. RegExp only tests single characters against
 * character classes and \p{…} categories, which cannot backtrack.
 */
import { JsonPathLimitError, JsonPathSyntaxError } from '../../errors.ts';
import { JSONPATH_LIMITS, remember } from './limits.ts';

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

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
export interface RegexProgram {
  readonly states: readonly RegexState[];
  readonly start: number;
}
const ACCEPT = 0;

// Compiled patterns, or why a pattern is not an I-Regexp. Patterns may come from documents, hence the bound.
const REGEX_CACHE_SIZE = 200;
const regexCache = new Map<string, RegexProgram | string>();

export function regexProgram(pattern: string): RegexProgram | string {
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
export function runRegex(
  program: RegexProgram,
  text: string,
  whole: boolean,
  charge: (steps: number) => void,
): boolean {
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
    charge(threads.length);
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
