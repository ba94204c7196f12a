/**
 * Regular expressions written in definitions and data (JSON Schema `pattern` / `patternProperties`, JSONata
 * `/regex/` literals) run here, on re2js: a linear-time engine (RE2's automata), so no pattern can make a match take
 * exponential time — V8's backtracking RegExp takes minutes on `(a+)+$` and cannot be interrupted.
 *
 * Patterns are written in JavaScript's syntax (what JSON Schema and JSONata specify) and translated here to RE2's
 * (re2js reads RE2 syntax only), so they keep their JavaScript meaning: `\s` and `.` keep JavaScript's sets,
 * `\uXXXX` and `\u{…}` are code points, `[^]` is any character. What RE2 cannot run in linear time is refused
 * naming the construct: lookaround, backreferences, counted repetitions above 1000. Remaining differences (the
 * differential test holds the rest against V8): `^`/`$` under `m` see only `\n` as a line end; a repeated group
 * that can match the empty string may stop a repetition earlier; outside the BMP a character is one, also
 * without the `u` flag; case folding is Unicode's simple folding.
 *
 * `withLinearRegExp` exists for libraries that build a RegExp from pattern text with the global constructor and
 * offer no hook (@cfworker/json-schema, JSONata's `$toMillis` picture): see its comment.
 */
import { RE2JS } from 're2js';

export class RegexSyntaxError extends Error {
  constructor(
    readonly pattern: string,
    readonly problem: string,
  ) {
    super(`${JSON.stringify(pattern)} is not a usable regular expression: ${problem}`);
    this.name = 'RegexSyntaxError';
  }
}

/** RE2's own ceiling for `{n,m}`; JavaScript allows more, and the automaton grows with the count. */
export const MAX_REPEAT = 1000;

// JavaScript's \s: WhiteSpace and LineTerminator (ECMA-262 22.2.2.9), as code point ranges.
const SPACE: readonly (readonly [number, number])[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const MAX_CODE_POINT = 0x10ffff;

const hex = (cp: number) => `\\x{${cp.toString(16)}}`;
const ranges = (list: readonly (readonly [number, number])[]) =>
  list.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('');
const complement = (list: readonly (readonly [number, number])[]) => {
  const out: [number, number][] = [];
  let next = 0;
  for (const [a, b] of list) {
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
};
const SPACE_RANGES = ranges(SPACE);
const NON_SPACE_RANGES = ranges(complement(SPACE));
const ANY = `[\\x{0}-\\x{10ffff}]`;
const NOTHING = `[^\\x{0}-\\x{10ffff}]`;
// JavaScript's `.` without the s flag: anything but a LineTerminator.
const DOT = `[^\\n\\r\\x{2028}\\x{2029}]`;
const SYNTAX = new Set([...'\\^$.|?*+()[]{}-/']);
const CONTROL: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b };

/** The RE2 pattern meaning what `source` means as a JavaScript RegExp with `flags`. Throws RegexSyntaxError. */
export function toRe2Syntax(source: string, flags = ''): string {
  const unicode = flags.includes('u') || flags.includes('v');
  const dotAll = flags.includes('s');
  const fail = (problem: string): never => {
    throw new RegexSyntaxError(source, problem);
  };
  let out = '';
  let i = 0;
  const chars = [...source];
  const literal = (c: string) => {
    const cp = c.codePointAt(0) as number;
    if (cp < 0x80 && SYNTAX.has(c)) return `\\${c}`;
    return cp < 0x20 || (cp >= 0xd800 && cp <= 0xdfff) ? hex(cp) : c;
  };
  const hexDigits = (from: number, count: number): number | undefined => {
    const text = chars.slice(from, from + count).join('');
    return text.length === count && /^[0-9a-fA-F]+$/.test(text) ? Number.parseInt(text, 16) : undefined;
  };

  /** One escape at chars[i] === '\\'; returns RE2 text and advances i. `inClass` changes \b and \s. */
  const escapeSequence = (inClass: boolean): string => {
    const c = chars[i + 1];
    if (c === undefined) return fail('it ends with a lone backslash');
    i += 2;
    switch (c) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
        return `\\${c}`;
      case 's':
        return inClass ? SPACE_RANGES : `[${SPACE_RANGES}]`;
      case 'S':
        return inClass ? NON_SPACE_RANGES : `[${NON_SPACE_RANGES}]`;
      case 'b':
        return inClass ? hex(8) : '\\b';
      case 'B':
        return inClass ? fail('\\B inside a character class') : '\\B';
      case 'n':
      case 'r':
      case 't':
      case 'f':
      case 'v':
        return hex(CONTROL[c] as number);
      case '0':
        if (/[0-9]/.test(chars[i] ?? ''))
          return fail('octal escapes (\\0 followed by digits) are not supported');
        return hex(0);
      case 'c': {
        const letter = chars[i];
        if (letter === undefined || !/[a-zA-Z]/.test(letter)) return fail('\\c must be followed by a letter');
        i++;
        return hex(letter.charCodeAt(0) % 32);
      }
      case 'x': {
        const cp = hexDigits(i, 2);
        if (cp === undefined) return unicode ? fail('\\x needs two hex digits') : literal('x');
        i += 2;
        return hex(cp);
      }
      case 'u': {
        if (chars[i] === '{' && unicode) {
          const end = chars.indexOf('}', i);
          const digits = chars.slice(i + 1, end).join('');
          if (end < 0 || !/^[0-9a-fA-F]+$/.test(digits)) return fail('\\u{…} needs hex digits');
          i = end + 1;
          return hex(Number.parseInt(digits, 16));
        }
        const cp = hexDigits(i, 4);
        if (cp === undefined) return unicode ? fail('\\u needs four hex digits') : literal('u');
        i += 4;
        // A surrogate pair written as two escapes is one code point.
        if (cp >= 0xd800 && cp <= 0xdbff && chars[i] === '\\' && chars[i + 1] === 'u') {
          const low = hexDigits(i + 2, 4);
          if (low !== undefined && low >= 0xdc00 && low <= 0xdfff) {
            i += 6;
            return hex(0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00));
          }
        }
        if (cp >= 0xd800 && cp <= 0xdfff) return fail('a lone surrogate (\\uD800-\\uDFFF) cannot be matched');
        return hex(cp);
      }
      case 'p':
      case 'P': {
        if (!unicode) return literal(c);
        const end = chars.indexOf('}', i);
        if (chars[i] !== '{' || end < 0) return fail(`\\${c} needs a {property}`);
        const body = chars.slice(i + 1, end).join('');
        i = end + 1;
        // RE2 names categories and scripts directly: \p{Lu}, \p{Greek}.
        const name = body.replace(/^(General_Category|gc|Script|sc|Script_Extensions|scx)=/, '');
        return `\\${c}{${name}}`;
      }
      case 'k':
        if (unicode || source.includes('(?<')) {
          return fail('backreferences (\\k<name>) are not supported: patterns run on a linear-time engine');
        }
        return literal('k');
      default:
        if (/[1-9]/.test(c)) {
          return fail(`backreferences (\\${c}) are not supported: patterns run on a linear-time engine`);
        }
        // Any other escaped character stands for itself (`\/`, `\-`, and in non-unicode patterns `\a`).
        return literal(c);
    }
  };

  const characterClass = (): string => {
    // chars[i] === '['
    i++;
    let negated = false;
    if (chars[i] === '^') {
      negated = true;
      i++;
    }
    if (chars[i] === ']') {
      i++;
      return negated ? ANY : NOTHING;
    }
    let body = '';
    for (;;) {
      const c = chars[i];
      if (c === undefined) return fail('a character class is not closed with ]');
      if (c === ']') {
        i++;
        break;
      }
      if (c === '\\') body += escapeSequence(true);
      else {
        body += c === '-' ? '-' : literal(c);
        i++;
      }
    }
    return `[${negated ? '^' : ''}${body}]`;
  };

  const quantifierEnd = (from: number): number | undefined => {
    // `{n}`, `{n,}`, `{n,m}` at chars[from] === '{'; undefined when it is a literal brace.
    const rest = chars.slice(from, from + 24).join('');
    const m = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    if (!m) return undefined;
    const counts = [m[1], m[3]].filter((n) => n !== undefined && n !== '').map(Number);
    if (counts.some((n) => n > MAX_REPEAT)) {
      fail(`a counted repetition may be at most {${MAX_REPEAT}} (it says ${m[0]})`);
    }
    return from + [...m[0]].length;
  };

  while (i < chars.length) {
    const c = chars[i] as string;
    switch (c) {
      case '\\':
        out += escapeSequence(false);
        break;
      case '[':
        out += characterClass();
        break;
      case '.':
        out += dotAll ? ANY : DOT;
        i++;
        break;
      case '(': {
        const next = chars.slice(i + 1, i + 4).join('');
        if (next.startsWith('?=') || next.startsWith('?!')) {
          fail('lookahead ((?=…), (?!…)) is not supported: patterns run on a linear-time engine');
        }
        if (next.startsWith('?<=') || next.startsWith('?<!')) {
          fail('lookbehind ((?<=…), (?<!…)) is not supported: patterns run on a linear-time engine');
        }
        out += '(';
        i++;
        break;
      }
      case '{': {
        const end = quantifierEnd(i);
        if (end === undefined) {
          out += '\\{';
          i++;
        } else {
          out += chars.slice(i, end).join('');
          i = end;
        }
        break;
      }
      case '}':
      case ']':
        out += `\\${c}`;
        i++;
        break;
      case '^':
      case '$':
      case '|':
      case ')':
      case '*':
      case '+':
      case '?':
        out += c;
        i++;
        break;
      default:
        out += literal(c);
        i++;
    }
  }
  return out;
}

interface Compiled {
  readonly re2: RE2JS;
}
const compiledCache = new Map<string, Compiled>();
const CACHE_SIZE = 1000;

/** re2js for `source` read as a JavaScript RegExp with `flags`; throws RegexSyntaxError. Cached. */
function compiled(source: string, flags: string): Compiled {
  const key = `${flags}/${source}`;
  const hit = compiledCache.get(key);
  if (hit) return hit;
  // JavaScript must accept it too: the dialect is JavaScript's, and RE2 accepts some things it does not.
  try {
    new NativeRegExp(source, flags.replace(/[gy]/g, ''));
  } catch (error) {
    throw new RegexSyntaxError(source, error instanceof Error ? error.message : String(error));
  }
  const translated = toRe2Syntax(source, flags);
  let re2: RE2JS;
  try {
    re2 = RE2JS.compile(
      translated,
      (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes('m') ? RE2JS.MULTILINE : 0),
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new RegexSyntaxError(source, message.replace(/^error parsing regexp: /, ''));
  }
  if (compiledCache.size >= CACHE_SIZE) {
    const oldest = compiledCache.keys().next();
    if (!oldest.done) compiledCache.delete(oldest.value);
  }
  const entry = { re2 };
  compiledCache.set(key, entry);
  return entry;
}

/** Why `source` (JavaScript syntax, with `flags`) cannot be used, or undefined when it can. */
export function linearRegexProblem(source: string, flags = ''): string | undefined {
  try {
    compiled(source, flags);
    return undefined;
  } catch (error) {
    if (error instanceof RegexSyntaxError) return error.problem;
    throw error;
  }
}

const NativeRegExp = RegExp;

/**
 * A RegExp look-alike on re2js: `exec`, `test`, `lastIndex` with the `g` and `y` flags, `source`, `flags`. Enough
 * for JSONata (its RegexEngine option) and for libraries that only call `test` / `exec`.
 */
export class LinearRegExp {
  readonly source: string;
  readonly flags: string;
  readonly global: boolean;
  readonly sticky: boolean;
  readonly ignoreCase: boolean;
  readonly multiline: boolean;
  lastIndex = 0;
  readonly #re2: RE2JS;

  constructor(pattern: string | RegExp | LinearRegExp, flags?: string) {
    const source = typeof pattern === 'string' ? pattern : pattern.source;
    this.flags = flags ?? (typeof pattern === 'string' ? '' : pattern.flags);
    this.source = source;
    this.global = this.flags.includes('g');
    this.sticky = this.flags.includes('y');
    this.ignoreCase = this.flags.includes('i');
    this.multiline = this.flags.includes('m');
    this.#re2 = compiled(source, this.flags).re2;
  }

  exec(input: string): RegExpExecArray | null {
    const text = String(input);
    const stateful = this.global || this.sticky;
    const from = stateful ? this.lastIndex : 0;
    if (from > text.length) {
      this.lastIndex = 0;
      return null;
    }
    const matcher = this.#re2.matcher(text);
    if (!matcher.find(from) || (this.sticky && matcher.start() !== from)) {
      if (stateful) this.lastIndex = 0;
      return null;
    }
    const groups: (string | undefined)[] = [];
    for (let g = 0; g <= matcher.groupCount(); g++) groups.push(matcher.group(g) ?? undefined);
    const result = Object.assign(groups, { index: matcher.start(), input: text, groups: undefined });
    if (stateful) this.lastIndex = matcher.end();
    return result as unknown as RegExpExecArray;
  }

  test(input: string): boolean {
    if (this.global || this.sticky) return this.exec(input) !== null;
    return this.#re2.test(String(input));
  }

  toString(): string {
    return `/${this.source}/${this.flags}`;
  }
}

/**
 * Runs `fn` with the global `RegExp` constructor replaced by LinearRegExp, and puts it back before returning.
 *
 * Why: @cfworker/json-schema calls `new RegExp(pattern, 'u')` for `pattern` and `patternProperties`, and JSONata
 * builds a RegExp from a `$toMillis` picture, both with the global constructor and no option to substitute an
 * engine. Both are synchronous, so for the duration of the call no other code runs and nothing else can see the
 * swap; regex literals (`/…/`) in that code are unaffected (they do not look the global up). Forking either
 * library to add a hook would be the alternative; this keeps them as published.
 */
export function withLinearRegExp<T>(fn: () => T): T {
  const global = globalThis as { RegExp: unknown };
  const saved = global.RegExp;
  global.RegExp = LinearRegExp;
  try {
    return fn();
  } finally {
    global.RegExp = saved;
  }
}
