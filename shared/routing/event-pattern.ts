/**
 * Amazon EventBridge event-pattern validation and matching, following aws/event-ruler (EventBridge's engine):
 * JsonRuleCompiler for validation, `rulesForJSONEvent` for array-consistent matching. This matcher is what runs
 * locally and in the executor's re-check, so it must refuse and match exactly what EventBridge does.
 *
 * Model: a pattern compiles to one or more *branches* (the `$or` cross product, as event-ruler does), each a map
 * from a flattened field path to the value matchers for that field. An event is flattened to leaves (path,
 * primitive value, array membership). A branch matches when every field has a leaf matching one of its matchers,
 * never combining leaves from different elements of one array (event-ruler's "array consistency"), or the field
 * allows `{"exists": false}` and has no leaf at all.
 *
 * The decisions taken where EventBridge's documentation is silent (numbers, `anything-but`, IP addresses, `$or`,
 * wildcard complexity, pattern size), following event-ruler's source unless said otherwise: `event-pattern.md`.
 */

export class InvalidEventPatternError extends Error {
  readonly path: string;
  constructor(message: string, path = '') {
    super(path ? `${message} (at ${path})` : message);
    this.name = 'InvalidEventPatternError';
    this.path = path;
  }
}

export const MAX_EVENT_PATTERN_LENGTH = 4096;

/** A primitive event value at a flattened path, with the (array id, element index) pairs it sits inside. */
export interface Leaf {
  readonly value: string | number | boolean | null;
  readonly membership: readonly (readonly [number, number])[];
}

/** An event flattened to its leaves, keyed by dotted path. */
export type FlatEvent = ReadonlyMap<string, readonly Leaf[]>;

export type ValueMatcher =
  | { readonly kind: 'exact-string'; readonly value: string; readonly ip?: bigint | undefined }
  | { readonly kind: 'exact-number'; readonly value: number }
  | { readonly kind: 'exact-literal'; readonly value: boolean | null }
  | { readonly kind: 'prefix'; readonly value: string; readonly ignoreCase: boolean }
  | { readonly kind: 'suffix'; readonly value: string; readonly ignoreCase: boolean }
  | { readonly kind: 'equals-ignore-case'; readonly value: string }
  | { readonly kind: 'wildcard'; readonly regex: RegExp; readonly source: string }
  | {
      readonly kind: 'numeric';
      readonly lo: number;
      readonly loOpen: boolean;
      readonly hi: number;
      readonly hiOpen: boolean;
    }
  | { readonly kind: 'cidr'; readonly v6: boolean; readonly lo: bigint; readonly hi: bigint }
  | { readonly kind: 'exists'; readonly exists: boolean }
  | {
      readonly kind: 'anything-but';
      readonly strings: ReadonlySet<string>;
      readonly numbers: ReadonlySet<number>;
    }
  | {
      readonly kind: 'anything-but-op';
      readonly op: 'prefix' | 'suffix' | 'equals-ignore-case' | 'wildcard';
      readonly values: readonly string[];
      readonly regexes: readonly RegExp[];
    };

export interface CompiledField {
  readonly path: string;
  readonly matchers: readonly ValueMatcher[];
  /** true when one of the matchers is `{"exists": false}`. */
  readonly allowsAbsent: boolean;
}

export interface CompiledBranch {
  readonly fields: readonly CompiledField[];
}

export interface CompiledPattern {
  matches(event: unknown): boolean;
  /** Match an event already flattened with {@link flattenEvent} (lets callers flatten once for many patterns). */
  matchesFlat(event: FlatEvent): boolean;
  /** The `$or`-expanded alternatives; the pattern matches when any branch does. */
  readonly branches: readonly CompiledBranch[];
}

// ---------------------------------------------------------------------------------------------------------------
// Validation / compilation

const OR = '$or';
const RESERVED_IN_OR = new Set([
  'exactly',
  'equals-ignore-case',
  'prefix',
  'suffix',
  'anything-but',
  'exists',
  'wildcard',
  'numeric',
  'cidr',
  'html',
  '=',
  '<',
  '<=',
  '>',
  '>=',
  'regex',
  'not-wildcard',
  'not-equals-ignore-case',
  'date-after',
  'date-on-or-after',
  'date-before',
  'date-on-or-before',
  'in-date-range',
  'ip-address-in-range',
  'ip-address-not-in-range',
]);

type Branch = Map<string, CompiledField>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function fail(message: string, path: string): never {
  throw new InvalidEventPatternError(message, path || '<root>');
}

function parsePattern(pattern: unknown): unknown {
  let text: string;
  let parsed: unknown;
  if (typeof pattern === 'string') {
    text = pattern;
    try {
      parsed = JSON.parse(pattern);
    } catch (e) {
      throw new InvalidEventPatternError(`Event pattern is not valid JSON: ${(e as Error).message}`);
    }
  } else {
    parsed = pattern;
    try {
      text = JSON.stringify(pattern) ?? '';
    } catch {
      throw new InvalidEventPatternError('Event pattern is not JSON-serialisable');
    }
  }
  if (!isPlainObject(parsed)) throw new InvalidEventPatternError('Event pattern must be a JSON object');
  if (text.length > MAX_EVENT_PATTERN_LENGTH) {
    throw new InvalidEventPatternError(
      `Event pattern is ${text.length} characters; the maximum is ${MAX_EVENT_PATTERN_LENGTH}`,
    );
  }
  return parsed;
}

function compileObject(
  obj: Record<string, unknown>,
  path: string,
  branches: Branch[],
  inOr: boolean,
  expandOr = true,
): Branch[] {
  const keys = Object.keys(obj);
  if (keys.length === 0) fail('Empty objects are not allowed', path);
  let current = branches;
  for (const key of keys) {
    const value = obj[key];
    if (key === OR && expandOr) {
      current = compileOr(value, path, current);
      continue;
    }
    const fieldPath = join(path, key);
    if (inOr && RESERVED_IN_OR.has(key)) {
      fail(`"${key}" is a reserved word and cannot be used as a field name inside $or`, fieldPath);
    }
    if (Array.isArray(value)) {
      const field = compileField(value, fieldPath);
      for (const b of current) b.set(fieldPath, field);
    } else if (isPlainObject(value)) {
      current = compileObject(value, fieldPath, current, inOr, expandOr);
    } else {
      fail(`"${key}" must be an object or an array`, fieldPath);
    }
  }
  return current;
}

function compileOr(value: unknown, path: string, branches: Branch[]): Branch[] {
  const orPath = join(path, OR);
  if (!Array.isArray(value)) fail('$or must be followed by an array', orPath);
  if (value.length < 2) fail('$or must contain at least 2 objects', orPath);
  const out: Branch[] = [];
  value.forEach((alt, i) => {
    if (!isPlainObject(alt)) fail('Only JSON objects are allowed in a $or array', `${orPath}[${i}]`);
    const copies = branches.map((b) => new Map(b));
    out.push(...compileObject(alt, path, copies, true));
  });
  return out;
}

function compileField(values: unknown[], path: string): CompiledField {
  if (values.length === 0) fail('Empty arrays are not allowed', path);
  const matchers: ValueMatcher[] = [];
  values.forEach((v, i) => {
    const at = `${path}[${i}]`;
    if (typeof v === 'string') {
      matchers.push({ kind: 'exact-string', value: v, ip: ipLiteralValue(v) });
    } else if (typeof v === 'number') {
      matchers.push({ kind: 'exact-number', value: v });
    } else if (typeof v === 'boolean' || v === null) {
      matchers.push({ kind: 'exact-literal', value: v });
    } else if (isPlainObject(v)) {
      matchers.push(compileOperator(v, at));
    } else {
      fail('Match value must be a string, number, true, false, null or an operator object', at);
    }
  });
  return { path, matchers, allowsAbsent: matchers.some((m) => m.kind === 'exists' && !m.exists) };
}

function singleKey(obj: Record<string, unknown>, at: string, what: string): [string, unknown] {
  const keys = Object.keys(obj);
  if (keys.length === 0) fail(`${what} name not found`, at);
  if (keys.length > 1) fail(`Only one key allowed in ${what} (found ${keys.join(', ')})`, at);
  const k = keys[0]!;
  return [k, obj[k]];
}

function requireString(v: unknown, at: string, what: string): string {
  if (typeof v !== 'string') fail(`${what} match pattern must be a string`, at);
  return v;
}

function compileOperator(obj: Record<string, unknown>, at: string): ValueMatcher {
  const [op, arg] = singleKey(obj, at, 'match expression');
  const opAt = `${at}.${op}`;
  switch (op) {
    case 'exactly':
      return { kind: 'exact-string', value: requireString(arg, opAt, 'exactly') };
    case 'prefix':
    case 'suffix': {
      if (isPlainObject(arg)) {
        const [inner, innerArg] = singleKey(arg, opAt, `${op} expression`);
        if (inner !== 'equals-ignore-case') fail(`Unsupported ${op} pattern: ${inner}`, opAt);
        const s = requireString(innerArg, `${opAt}.${inner}`, 'equals-ignore-case');
        return { kind: op, value: s.toLowerCase(), ignoreCase: true };
      }
      return { kind: op, value: requireString(arg, opAt, op), ignoreCase: false };
    }
    case 'equals-ignore-case':
      return { kind: 'equals-ignore-case', value: requireString(arg, opAt, op) };
    case 'wildcard': {
      const w = requireString(arg, opAt, op);
      return { kind: 'wildcard', regex: wildcardRegex(w, opAt), source: w };
    }
    case 'exists':
      if (typeof arg !== 'boolean') fail('exists match pattern must be either true or false', opAt);
      return { kind: 'exists', exists: arg };
    case 'cidr':
      return compileCidr(requireString(arg, opAt, 'cidr'), opAt);
    case 'numeric':
      return compileNumeric(arg, opAt);
    case 'anything-but':
      return compileAnythingBut(arg, opAt);
    default:
      return fail(`Unrecognized match type ${op}`, opAt);
  }
}

function compileNumeric(arg: unknown, at: string): ValueMatcher {
  if (!Array.isArray(arg)) fail('Value of numeric must be an array', at);
  const operand = (i: number, op: string): number => {
    const v = arg[i];
    if (typeof v !== 'number') fail(`Value of ${op} must be numeric`, `${at}[${i}]`);
    if (!Number.isFinite(v)) fail(`Cannot compare number : ${v}`, `${at}[${i}]`);
    return v;
  };
  const op1 = arg[0];
  if (typeof op1 !== 'string')
    fail('Invalid member in numeric match: the first element must be an operator', at);
  const MIN = Number.NEGATIVE_INFINITY;
  const MAX = Number.POSITIVE_INFINITY;
  let range: { lo: number; loOpen: boolean; hi: number; hiOpen: boolean };
  if (op1 === '=' || op1 === '<' || op1 === '<=') {
    if (arg.length < 2) fail(`Value of ${op1} must be numeric`, at);
    const v = operand(1, op1);
    if (arg.length > 2) fail('Too many elements in numeric expression', at);
    if (op1 === '=') return { kind: 'numeric', lo: v, loOpen: false, hi: v, hiOpen: false };
    range = { lo: MIN, loOpen: false, hi: v, hiOpen: op1 === '<' };
  } else if (op1 === '>' || op1 === '>=') {
    if (arg.length < 2) fail(`Value of ${op1} must be numeric`, at);
    const lo = operand(1, op1);
    if (arg.length === 2) {
      range = { lo, loOpen: op1 === '>', hi: MAX, hiOpen: false };
    } else {
      const op2 = arg[2];
      if (typeof op2 !== 'string') fail('Bad value in numeric range: expected "<" or "<="', `${at}[2]`);
      if (op2 !== '<' && op2 !== '<=') fail(`Bad numeric range operator: ${op2}`, `${at}[2]`);
      if (arg.length < 4) fail(`Value of ${op2} must be numeric`, at);
      const hi = operand(3, op2);
      if (arg.length > 4) fail('Too many terms in numeric range expression', at);
      range = { lo, loOpen: op1 === '>', hi, hiOpen: op2 === '<' };
    }
  } else {
    return fail(`Unrecognized numeric range operator: ${op1}`, `${at}[0]`);
  }
  if (range.lo >= range.hi) fail('Bottom of a numeric range must be less than its top', at);
  return { kind: 'numeric', ...range };
}

function compileAnythingBut(arg: unknown, at: string): ValueMatcher {
  if (isPlainObject(arg)) {
    const [op, inner] = singleKey(arg, at, 'anything-but expression');
    const innerAt = `${at}.${op}`;
    if (op !== 'prefix' && op !== 'suffix' && op !== 'equals-ignore-case' && op !== 'wildcard') {
      fail(`Unsupported anything-but pattern: ${op}`, innerAt);
    }
    let list: unknown[];
    if (typeof inner === 'string') list = [inner];
    else if (Array.isArray(inner)) list = inner;
    else return fail(`Value of anything-but ${op} must be a string or an array of strings`, innerAt);
    const values: string[] = [];
    const regexes: RegExp[] = [];
    list.forEach((v, i) => {
      const vAt = Array.isArray(inner) ? `${innerAt}[${i}]` : innerAt;
      if (typeof v !== 'string') fail(`anything-but ${op} values must be strings`, vAt);
      if ((op === 'prefix' || op === 'suffix') && v === '') fail('Empty prefix/suffix not allowed', vAt);
      if (op === 'wildcard') regexes.push(wildcardRegex(v, vAt));
      values.push(v);
    });
    return { kind: 'anything-but-op', op, values, regexes };
  }
  let list: unknown[];
  if (typeof arg === 'string' || typeof arg === 'number') list = [arg];
  else if (Array.isArray(arg)) list = arg;
  else return fail('Value of anything-but must be an array or a single string/number value', at);
  const strings = new Set<string>();
  const numbers = new Set<number>();
  list.forEach((v, i) => {
    const vAt = Array.isArray(arg) ? `${at}[${i}]` : at;
    if (typeof v === 'string') strings.add(v);
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) fail(`Cannot compare number : ${v}`, vAt);
      numbers.add(v);
    } else fail('Inside anything-but, only strings or numbers are supported', vAt);
  });
  if (strings.size > 0 === numbers.size > 0) {
    fail('Inside anything-but list, values must be all numbers or all strings (and at least one)', at);
  }
  return { kind: 'anything-but', strings, numbers };
}

/** Wildcard syntax: `*` any run, `\*` a literal star, `\\` a backslash; `**` and other escapes are invalid. */
function wildcardRegex(w: string, at: string): RegExp {
  let re = '^';
  for (let i = 0; i < w.length; i++) {
    const c = w[i]!;
    if (c === '*') {
      if (w[i + 1] === '*') fail(`Consecutive wildcard characters at pos ${i}`, at);
      re += '[\\s\\S]*';
    } else if (c === '\\') {
      const n = w[i + 1];
      if (n !== '*' && n !== '\\') fail(`Invalid escape character at pos ${i}`, at);
      re += `\\${n}`;
      i++;
    } else {
      re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`${re}$`, 'u');
}

// ---------------------------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------------------------
// IP addresses

const IPV4_RE = /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/;
const IPV6_RE = /^[0-9a-fA-F:]*:[0-9a-fA-F:]*$/;

function parseIp(s: string): { v6: boolean; value: bigint } | undefined {
  if (IPV4_RE.test(s)) {
    let value = 0n;
    for (const part of s.split('.')) {
      const n = Number(part);
      if (part.length > 3 && !/^0*\d{1,3}$/.test(part)) return undefined;
      if (n > 255) return undefined;
      value = (value << 8n) | BigInt(n);
    }
    return { v6: false, value };
  }
  if (IPV6_RE.test(s)) {
    const halves = s.split('::');
    if (halves.length > 2) return undefined;
    const parse = (h: string): string[] | undefined => {
      if (h === '') return [];
      const groups = h.split(':');
      return groups.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g)) ? groups : undefined;
    };
    const head = parse(halves[0]!);
    const tail = halves.length === 2 ? parse(halves[1]!) : [];
    if (!head || !tail) return undefined;
    let groups: string[];
    if (halves.length === 2) {
      const missing = 8 - head.length - tail.length;
      if (missing < 1) return undefined;
      groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
    } else {
      groups = head;
    }
    if (groups.length !== 8) return undefined;
    let value = 0n;
    for (const g of groups) value = (value << 16n) | BigInt(Number.parseInt(g, 16));
    return { v6: true, value };
  }
  return undefined;
}

function ipLiteralValue(s: string): bigint | undefined {
  const ip = parseIp(s);
  return ip === undefined ? undefined : (ip.v6 ? 1n << 128n : 0n) | ip.value;
}

function compileCidr(s: string, at: string): ValueMatcher {
  const parts = s.split('/');
  if (parts.length !== 2) fail('Malformed CIDR, one "/" required', at);
  const bitsText = parts[1]!;
  if (!/^[+-]?\d+$/.test(bitsText)) fail('Malformed CIDR, mask bits must be an integer', at);
  const bits = Number(bitsText);
  if (bits < 0) fail('Malformed CIDR, mask bits must not be negative', at);
  const ip = parseIp(parts[0]!);
  if (!ip) fail(`Invalid IP address: ${parts[0]}`, at);
  const width = ip.v6 ? 128 : 32;
  if (bits > width - 1) fail(`${ip.v6 ? 'IPv6' : 'IPv4'} mask bits must be < ${width}`, at);
  const hostMask = (1n << BigInt(width - bits)) - 1n;
  return { kind: 'cidr', v6: ip.v6, lo: ip.value & ~hostMask, hi: ip.value | hostMask };
}

// ---------------------------------------------------------------------------------------------------------------
// Matching

function leafMatches(m: ValueMatcher, leaf: Leaf): boolean {
  const v = leaf.value;
  switch (m.kind) {
    case 'exact-string':
      if (typeof v !== 'string') return false;
      if (m.ip !== undefined) return ipLiteralValue(v) === m.ip;
      return v === m.value;
    case 'exact-number':
      if (typeof v !== 'number') return false;
      return v === m.value;
    case 'exact-literal':
      return v === m.value;
    case 'prefix':
      if (typeof v !== 'string') return false;
      return (m.ignoreCase ? v.toLowerCase() : v).startsWith(m.value);
    case 'suffix':
      if (typeof v !== 'string') return false;
      return (m.ignoreCase ? v.toLowerCase() : v).endsWith(m.value);
    case 'equals-ignore-case':
      return typeof v === 'string' && equalsIgnoreCase(v, m.value);
    case 'wildcard':
      return typeof v === 'string' && m.regex.test(v);
    case 'numeric': {
      if (typeof v !== 'number') return false;
      if (!Number.isFinite(v)) return false;
      const s = v;
      return (m.loOpen ? s > m.lo : s >= m.lo) && (m.hiOpen ? s < m.hi : s <= m.hi);
    }
    case 'cidr': {
      if (typeof v !== 'string') return false;
      const ip = parseIp(v);
      return ip !== undefined && ip.v6 === m.v6 && ip.value >= m.lo && ip.value <= m.hi;
    }
    case 'exists':
      return m.exists;
    case 'anything-but':
      if (typeof v === 'string') return !m.strings.has(v);
      if (typeof v === 'number') {
        return !m.numbers.has(v);
      }
      return true;
    case 'anything-but-op': {
      if (typeof v !== 'string') return true;
      switch (m.op) {
        case 'prefix':
          return !m.values.some((p) => v.startsWith(p));
        case 'suffix':
          return !m.values.some((p) => v.endsWith(p));
        case 'equals-ignore-case':
          return !m.values.some((p) => equalsIgnoreCase(v, p));
        case 'wildcard':
          return !m.regexes.some((r) => r.test(v));
      }
    }
  }
}

function equalsIgnoreCase(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase() || a.toUpperCase() === b.toUpperCase();
}

const EMPTY: readonly Leaf[] = [];

function branchMatches(branch: CompiledBranch, event: FlatEvent): boolean {
  // Fields whose only matching leaves sit inside arrays; they must agree on the array elements they use.
  let constrained: Leaf[][] | undefined;
  for (const field of branch.fields) {
    const leaves = event.get(field.path) ?? EMPTY;
    if (leaves.length === 0) {
      if (field.allowsAbsent) continue;
      return false;
    }
    let free = false;
    let inArrays: Leaf[] | undefined;
    for (const leaf of leaves) {
      if (!anyMatcher(field.matchers, leaf)) continue;
      if (leaf.membership.length === 0) {
        free = true;
        break;
      }
      if (inArrays) inArrays.push(leaf);
      else inArrays = [leaf];
    }
    if (free) continue;
    if (!inArrays) return false;
    if (constrained) constrained.push(inArrays);
    else constrained = [inArrays];
  }
  return constrained === undefined || constrained.length === 1 || consistent(constrained);
}

function anyMatcher(matchers: readonly ValueMatcher[], leaf: Leaf): boolean {
  for (const m of matchers) if (leafMatches(m, leaf)) return true;
  return false;
}

/** Array consistency: pick one leaf per field such that no two come from different elements of one array. */
function consistent(chosen: readonly (readonly Leaf[])[]): boolean {
  const assigned = new Map<number, number>();
  const visit = (i: number): boolean => {
    const candidates = chosen[i];
    if (candidates === undefined) return true;
    for (const leaf of candidates) {
      let ok = true;
      for (const [id, idx] of leaf.membership) {
        const prev = assigned.get(id);
        if (prev !== undefined && prev !== idx) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      const added: number[] = [];
      for (const [id, idx] of leaf.membership) {
        if (!assigned.has(id)) {
          assigned.set(id, idx);
          added.push(id);
        }
      }
      if (visit(i + 1)) return true;
      for (const id of added) assigned.delete(id);
    }
    return false;
  };
  return visit(0);
}

/** Parse (if a string) and flatten an event into leaves keyed by dotted path. Non-object events have no leaves. */
export function flattenEvent(event: unknown): FlatEvent {
  const parsed: unknown = typeof event === 'string' ? JSON.parse(event) : event;
  const out = new Map<string, Leaf[]>();
  if (!isPlainObject(parsed)) return out;
  let nextArrayId = 0;
  const walk = (v: unknown, path: string, membership: readonly (readonly [number, number])[]): void => {
    if (Array.isArray(v)) {
      const id = nextArrayId++;
      v.forEach((el, i) => {
        walk(el, path, [...membership, [id, i]]);
      });
    } else if (isPlainObject(v)) {
      for (const k of Object.keys(v)) walk(v[k], join(path, k), membership);
    } else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) {
      let list = out.get(path);
      if (!list) {
        list = [];
        out.set(path, list);
      }
      list.push({ value: v, membership });
    }
  };
  for (const k of Object.keys(parsed)) walk(parsed[k], k, []);
  return out;
}

const MAX_WILDCARD_COMPLEXITY = 10;
const STAR = -1;

/** A wildcard as event-ruler sees it: the UTF-8 bytes of the quoted value, STAR for an unescaped `*`. */
function wildcardTokens(w: string): number[] {
  const out: number[] = [0x22];
  const bytes = Buffer.from(w, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x5c) out.push(bytes[++i]!);
    else out.push(b === 0x2a ? STAR : b);
  }
  out.push(0x22);
  return out;
}

/**
 * How many positions past a wildcard of the given patterns can be live at once for the worst possible value:
 * a subset construction over the patterns' NFA (one state per pattern position, a `*` position looping on any
 * byte), maximising the number of live states that sit at or after a `*`. This is event-ruler's documented
 * criterion ("how many wildcard rule prefixes match a theoretical worst-case event"); EventBridge refuses a rule
 * above 10, which this measure reproduces for the cases on record: "*:*:*:*:*:event-bus/<star>" and four
 * "<star>.ext" alternatives are refused, "/Users/<star>/dir/dir/dir/dir/dir/doc.txt" and two
 * "<star>/datasync/<star>.ext" alternatives are accepted (<star> standing for the wildcard character).
 */
function wildcardComplexity(patterns: readonly string[]): number {
  const toks = patterns.map(wildcardTokens);
  const base: number[] = [];
  let total = 0;
  for (const t of toks) {
    base.push(total);
    total += t.length + 1;
  }
  const pastStar: boolean[] = [];
  const tokenAt: (number | undefined)[] = [];
  toks.forEach((t) => {
    let seen = false;
    for (let i = 0; i <= t.length; i++) {
      if (t[i] === STAR) seen = true;
      pastStar.push(seen);
      tokenAt.push(t[i]);
    }
  });
  const close = (ids: Set<number>): number[] => {
    const out = new Set(ids);
    for (const id of out) if (tokenAt[id] === STAR) out.add(id + 1);
    return [...out].sort((a, b) => a - b);
  };
  const alphabet = new Set<number>([256]);
  for (const t of toks) for (const b of t) if (b !== STAR) alphabet.add(b);
  const start = close(new Set(base));
  const seen = new Set<string>([start.join(',')]);
  const pending = [start];
  let max = 0;
  while (pending.length > 0) {
    const current = pending.pop()!;
    for (const byte of alphabet) {
      const next = new Set<number>();
      for (const id of current) {
        const t = tokenAt[id];
        if (t === STAR) next.add(id);
        else if (t === byte) next.add(id + 1);
      }
      if (next.size === 0) continue;
      const closed = close(next);
      let live = 0;
      for (const id of closed) if (pastStar[id]) live++;
      if (live > max) max = live;
      if (max > MAX_WILDCARD_COMPLEXITY) return max;
      const key = closed.join(',');
      if (!seen.has(key)) {
        if (seen.size > 20_000) return Number.POSITIVE_INFINITY;
        seen.add(key);
        pending.push(closed);
      }
    }
  }
  return max;
}

function checkWildcardComplexity(branches: readonly Branch[]): void {
  const byPath = new Map<string, Set<string>>();
  for (const b of branches) {
    for (const field of b.values()) {
      for (const m of field.matchers) {
        const ws =
          m.kind === 'wildcard'
            ? [m.source]
            : m.kind === 'anything-but-op' && m.op === 'wildcard'
              ? m.values
              : [];
        if (ws.length === 0) continue;
        let set = byPath.get(field.path);
        if (!set) {
          set = new Set();
          byPath.set(field.path, set);
        }
        for (const w of ws) set.add(w);
      }
    }
  }
  for (const [path, set] of byPath) {
    if (wildcardComplexity([...set]) > MAX_WILDCARD_COMPLEXITY) {
      fail(
        'Rule is too complex - try using fewer wildcard characters or fewer repeating character sequences after a wildcard character',
        path,
      );
    }
  }
}

const MAX_OR_COMBINATIONS = 1000;

/** The product of the lengths of every `$or` array (nested ones multiplied in), as EventBridge counts them. */
function orCombinations(node: unknown): number {
  if (!isPlainObject(node)) return 1;
  let product = 1;
  for (const [key, value] of Object.entries(node)) {
    if (key === OR && Array.isArray(value)) {
      product *= Math.max(value.length, 1);
      for (const member of value) product *= orCombinations(member);
    } else if (isPlainObject(value)) {
      product *= orCombinations(value);
    }
    if (product > MAX_OR_COMBINATIONS) return product;
  }
  return product;
}

function compileBranches(parsed: Record<string, unknown>): Branch[] {
  if (orCombinations(parsed) > MAX_OR_COMBINATIONS) {
    throw new InvalidEventPatternError(
      `Event pattern contains more than ${MAX_OR_COMBINATIONS} rule combinations (the $or arrays multiply out)`,
    );
  }
  try {
    return compileObject(parsed, '', [new Map()], false);
  } catch (e) {
    // EventBridge retries a pattern its $or-aware compiler refuses with the older compiler, which reads "$or"
    // as an ordinary field name (event-ruler's documented backward compatibility); only if that also fails is
    // the pattern invalid, and then the $or-aware error is the one reported.
    if (!(e instanceof InvalidEventPatternError) || !JSON.stringify(parsed).includes('"$or"')) throw e;
    try {
      return compileObject(parsed, '', [new Map()], false, false);
    } catch {
      throw e;
    }
  }
}

export function compileEventPattern(pattern: unknown): CompiledPattern {
  const parsed = parsePattern(pattern) as Record<string, unknown>;
  const compiled = compileBranches(parsed);
  checkWildcardComplexity(compiled);
  const branches: CompiledBranch[] = compiled.map((b) => ({
    fields: [...b.values()],
  }));
  const matchesFlat = (event: FlatEvent): boolean => branches.some((b) => branchMatches(b, event));
  return {
    branches,
    matchesFlat,
    matches: (event: unknown): boolean => matchesFlat(flattenEvent(event)),
  };
}

export function validateEventPattern(pattern: unknown): void {
  compileEventPattern(pattern);
}

export function matchesEventPattern(pattern: unknown, event: unknown): boolean {
  return compileEventPattern(pattern).matches(event);
}
