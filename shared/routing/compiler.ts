/**
 * The selector compiler: turns selectors into EventBridge event patterns over the change event
 * (`shared/domain/change-event.ts`). The compiled pattern is what runs everywhere — in EventBridge on AWS, in the
 * local EventBridge, and in the executor's re-check (`matchesSelector`) — so a selector has one meaning.
 *
 * Rules it keeps: a text `contains_any` matches whole words (which EventBridge indexes), never wildcards; events
 * whose context or words were cut match and are re-checked against the stored breadcrumb; a rule's selectors
 * expand into one flat `$or`; a definition is never triggered by its own write; a pattern over the account's
 * size quota (2048 characters by default) is invalid, naming the selector that contributes most.
 * The mapping of each selector field and operator, and the reasons: `compiler.md` beside this file.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, PrincipalSchema, toFieldIssues, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { CHANGE_SOURCE, DETAIL_TYPES, encodeTagKey, tagMap } from '#shared/domain/change-event.ts';
import { type FieldIssue, ValidationError } from '#shared/domain/errors.ts';
import {
  type ContextMatch,
  pathSegments,
  type Selector,
  type SelectorInput,
  SelectorSchema,
} from '#shared/domain/selector.ts';
import { contextWords, NO_WORD_LIMITS, valueWord } from '#shared/domain/words.ts';
import {
  type CompiledPattern,
  compileEventPattern,
  InvalidEventPatternError,
  MAX_EVENT_PATTERN_LENGTH,
  validateEventPattern,
} from './event-pattern.ts';

export { canonicalJson };

/** EventBridge's default quota for the event pattern size, in characters. */
export const DEFAULT_MAX_PATTERN_LENGTH = 2048;

/** A JSON event pattern (or a fragment of one). */
export type EventPattern = Record<string, unknown>;

type Matchers = unknown[];

/** One field of a pattern: its path from `detail` (`["context", "a", "b"]`) and its matchers. */
interface FieldCondition {
  readonly segments: readonly string[];
  readonly matchers: Matchers;
}

/** One conjunctive alternative: fields keyed by their joined path. */
type Alternative = Map<string, FieldCondition>;

interface CompiledSelector {
  /** schema_name / tags / tag_map: shared by every alternative. */
  readonly base: EventPattern;
  /** Plain alternatives (no `$or` inside); empty when the selector has no context_match. */
  readonly alternatives: readonly EventPattern[];
}

const NUMERIC_SYMBOL = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
type NumericOp = keyof typeof NUMERIC_SYMBOL;

function isNumericOp(op: ContextMatch['op']): op is NumericOp {
  return op in NUMERIC_SYMBOL;
}

function fail(path: string, message: string): never {
  throw new ValidationError([{ path, message }]);
}

function parseSelector(selector: SelectorInput | Selector, at: string): Selector {
  const result = SelectorSchema.safeParse(selector);
  if (!result.success) throw new ValidationError(toFieldIssues(result.error, at));
  return result.data;
}

function join(at: string, field: string): string {
  return at ? `${at}.${field}` : field;
}

/** Merges gt/gte/lt/lte on one path into one `numeric` range (the tightest bounds). */
function numericRange(
  matches: readonly { op: NumericOp; value: number; index: number }[],
  at: string,
  path: string,
): Matchers {
  let lower: { symbol: '>' | '>='; n: number } | undefined;
  let upper: { symbol: '<' | '<='; n: number } | undefined;
  for (const m of matches) {
    const symbol = NUMERIC_SYMBOL[m.op];
    if (symbol === '>' || symbol === '>=') {
      if (!lower || m.value > lower.n || (m.value === lower.n && symbol === '>'))
        lower = { symbol, n: m.value };
    } else if (!upper || m.value < upper.n || (m.value === upper.n && symbol === '<')) {
      upper = { symbol, n: m.value };
    }
  }
  if (lower && upper) {
    const empty =
      lower.n > upper.n || (lower.n === upper.n && (lower.symbol === '>' || upper.symbol === '<'));
    if (empty) {
      const last = matches[matches.length - 1];
      fail(
        join(at, `context_match[${last?.index ?? 0}]`),
        `the comparisons on ${path} (${lower.symbol} ${lower.n} and ${upper.symbol} ${upper.n}) can never both hold`,
      );
    }
    return [{ numeric: [lower.symbol, lower.n, upper.symbol, upper.n] }];
  }
  const bound = lower ?? upper;
  return bound ? [{ numeric: [bound.symbol, bound.n] }] : [];
}

/** The alternatives (each one field condition) for one condition on a context path. */
function conditionAlternatives(match: ContextMatch): FieldCondition[] {
  const segments = pathSegments(match.path);
  const onContext = (matchers: Matchers): FieldCondition => ({
    segments: ['context', ...segments],
    matchers,
  });
  switch (match.op) {
    case 'eq':
      return [onContext([match.value])];
    case 'ne':
      return [onContext([{ 'anything-but': match.value }]), onContext([{ exists: false }])];
    case 'in':
      return [onContext([...new Set(match.value)])];
    case 'contains_any': {
      const values = [...new Set(match.value)];
      const words = [...new Set(values.flatMap((v) => (typeof v === 'string' ? [wordOf(v)] : [])))];
      const options = [onContext(values)];
      if (words.length > 0) options.push({ segments: ['words', ...segments], matchers: words });
      return options;
    }
    case 'exists':
      return [onContext([{ exists: match.value }])];
    case 'prefix':
      return [onContext([{ prefix: match.value }])];
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return [onContext([{ numeric: [NUMERIC_SYMBOL[match.op], match.value] }])];
  }
}

/** The word a `contains_any` string stands for; the selector schema has already refused values that are not one word. */
function wordOf(value: string): string {
  const result = valueWord(value);
  if ('word' in result) return result.word;
  throw new ValidationError([{ path: 'context_match', message: `"${value}" is not one word` }]);
}

function hasTextContainsAny(matches: readonly ContextMatch[]): boolean {
  return matches.some((m) => m.op === 'contains_any' && m.value.some((v) => typeof v === 'string'));
}

/**
 * Path steps are context keys, data: `constructor` or `prototype` name a field like any other. Only own properties
 * are read and written, so a step never reaches `Object` or its prototype (the selector schema refuses `__proto__`).
 */
function patternTree(alternative: Alternative): EventPattern {
  const root: EventPattern = {};
  for (const { segments, matchers } of alternative.values()) {
    let node = root;
    for (const segment of segments.slice(0, -1)) {
      if (!Object.hasOwn(node, segment)) setOwn(node, segment, {});
      node = node[segment] as EventPattern;
    }
    setOwn(node, segments[segments.length - 1] as string, matchers);
  }
  return root;
}

function setOwn(node: EventPattern, key: string, value: unknown): void {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

function compileContextMatch(matches: readonly ContextMatch[], at: string): EventPattern[] {
  // Group conditions by path, remembering where each came from for error paths.
  const groups = new Map<string, { match: ContextMatch; index: number }[]>();
  matches.forEach((match, index) => {
    const group = groups.get(match.path);
    if (group) group.push({ match, index });
    else groups.set(match.path, [{ match, index }]);
  });

  // A path and one of its prefixes cannot both be matched: one would need a value, the other an object.
  const paths = [...groups.keys()];
  for (const path of paths) {
    const nested = paths.find((other) => other.startsWith(`${path}.`));
    if (nested !== undefined) {
      const index = groups.get(nested)?.[0]?.index ?? 0;
      fail(
        join(at, `context_match[${index}].path`),
        `${nested} lies inside ${path}, which is also matched; EventBridge cannot match a field both as a value and as an object`,
      );
    }
  }

  let alternatives: Alternative[] = [new Map()];
  for (const [path, group] of groups) {
    let options: FieldCondition[];
    const first = group[0];
    if (group.length === 1 && first) {
      options = conditionAlternatives(first.match);
    } else {
      const numeric: { op: NumericOp; value: number; index: number }[] = [];
      for (const { match, index } of group) {
        if (!isNumericOp(match.op)) {
          // Point at the condition that makes it a conflict: the second one on the path if this is the first.
          const culprit = index === first?.index ? (group[1]?.index ?? index) : index;
          fail(
            join(at, `context_match[${culprit}].op`),
            `several conditions on ${path}: they can only be combined when all are numeric comparisons (gt, gte, lt, lte); use one "in" or split the selector`,
          );
        }
        numeric.push({ op: match.op, value: match.value as number, index });
      }
      options = [{ segments: ['context', ...pathSegments(path)], matchers: numericRange(numeric, at, path) }];
    }
    alternatives = alternatives.flatMap((alt) =>
      options.map((option) => new Map([...alt, [option.segments.join('\u0000'), option]])),
    );
  }
  return alternatives.map(patternTree);
}

function compileParsed(selector: Selector, at: string): CompiledSelector {
  const base: EventPattern = {};
  if (selector.schema_name !== undefined) base.schema_name = [selector.schema_name];
  if (selector.any_tags !== undefined) base.tags = [...new Set(selector.any_tags)];
  if (selector.all_tags !== undefined) {
    base.tag_map = Object.fromEntries(selector.all_tags.map((t) => [encodeTagKey(t), [true]]));
  }
  const matches = selector.context_match ?? [];
  if (matches.length === 0) {
    if (Object.keys(base).length === 0) {
      fail(
        at,
        'a selector must name at least one of schema_name, any_tags, all_tags or context_match; an empty selector would match every change in the workspace',
      );
    }
    return { base, alternatives: [] };
  }
  // Too large a context is left out of the event, and too many words are cut: match such events anyway and let the
  // executor re-check against the stored breadcrumb.
  return {
    base,
    alternatives: [
      ...compileContextMatch(matches, at),
      ...(hasTextContainsAny(matches) ? [{ words_truncated: [true] }] : []),
      { context_omitted: [true] },
    ],
  };
}

function toFragment(compiled: CompiledSelector): EventPattern {
  const [only, ...rest] = compiled.alternatives;
  if (only === undefined) return { ...compiled.base };
  if (rest.length === 0) return { ...compiled.base, ...only };
  return { ...compiled.base, $or: compiled.alternatives };
}

function expand(compiled: CompiledSelector): EventPattern[] {
  if (compiled.alternatives.length === 0) return [{ ...compiled.base }];
  return compiled.alternatives.map((alt) => ({ ...compiled.base, ...alt }));
}

function translatePatternError(error: unknown, at: string): never {
  if (error instanceof InvalidEventPatternError) {
    throw new ValidationError(
      [{ path: at, message: `EventBridge would refuse the pattern: ${error.message}` }],
      undefined,
      {
        cause: error,
      },
    );
  }
  throw error;
}

/**
 * The EventBridge pattern fragment for the change event's `detail` object. Accepts raw (unparsed) selectors too;
 * every problem is a ValidationError whose paths are relative to the selector (`context_match[0].value`).
 */
export function compileSelector(selector: SelectorInput | Selector): EventPattern {
  const fragment = toFragment(compileParsed(parseSelector(selector, ''), ''));
  try {
    validateEventPattern({ detail: fragment });
  } catch (error) {
    translatePatternError(error, '');
  }
  return fragment;
}

export interface TriggerPatternInput {
  readonly workspace: string;
  /** The definition's principal (`agent:helper`); changes it wrote itself (`updated_by`) never trigger it. */
  readonly principal: string;
  readonly selectors: readonly (SelectorInput | Selector)[];
  /** Where each selector sits in the definition, for error paths; default `selectors[i]`. */
  readonly selectorPaths?: readonly string[];
  /** The account's "Event pattern size" quota; default 2048, at most 4096 (the PutRule maximum). */
  readonly maxPatternLength?: number;
}

/** The full rule pattern for a definition: its trigger selectors OR-ed, pinned to its workspace, minus its own writes. */
export function compileTriggerPattern(input: TriggerPatternInput): EventPattern {
  const issues: FieldIssue[] = [];
  const workspace = WorkspaceSchema.safeParse(input.workspace);
  if (!workspace.success) issues.push(...toFieldIssues(workspace.error, 'workspace'));
  const principal = PrincipalSchema.safeParse(input.principal);
  if (!principal.success) issues.push(...toFieldIssues(principal.error, 'principal'));
  if (input.selectors.length === 0) {
    issues.push({ path: 'selectors', message: 'no trigger selectors: the definition would never run' });
  }
  if (issues.length > 0) throw new ValidationError(issues);

  const pathOf = (i: number): string => input.selectorPaths?.[i] ?? `selectors[${i}]`;
  const compiled = input.selectors.map((selector, i) => {
    const at = pathOf(i);
    return compileParsed(parseSelector(selector, at), at);
  });

  const detail: EventPattern = {
    workspace: [input.workspace],
    updated_by: [{ 'anything-but': input.principal }],
  };
  const [single, ...others] = compiled;
  if (single && others.length === 0) {
    Object.assign(detail, toFragment(single));
  } else {
    const seen = new Set<string>();
    const branches: EventPattern[] = [];
    for (const c of compiled) {
      for (const branch of expand(c)) {
        const key = canonicalJson(branch);
        if (!seen.has(key)) {
          seen.add(key);
          branches.push(branch);
        }
      }
    }
    if (branches.length === 1) Object.assign(detail, branches[0]);
    else detail.$or = branches;
  }

  const pattern: EventPattern = {
    source: [CHANGE_SOURCE],
    'detail-type': [DETAIL_TYPES.created, DETAIL_TYPES.updated],
    detail,
  };
  const limit = Math.min(input.maxPatternLength ?? DEFAULT_MAX_PATTERN_LENGTH, MAX_EVENT_PATTERN_LENGTH);
  const length = JSON.stringify(pattern).length;
  if (length > limit) {
    const sizes = compiled.map((c) => JSON.stringify(expand(c)).length);
    const largest = sizes.reduce((best, size, i) => (size > (sizes[best] ?? 0) ? i : best), 0);
    throw new ValidationError([
      {
        path: pathOf(largest),
        message: `the compiled event pattern is ${length} characters, over EventBridge's limit of ${limit}; this selector contributes the most (${sizes[largest]} characters): use fewer values or tags, or split the definition`,
      },
    ]);
  }

  // Validate selector by selector first, so an error names the selector it comes from.
  compiled.forEach((result, i) => {
    try {
      validateEventPattern({ detail: toFragment(result) });
    } catch (error) {
      translatePatternError(error, pathOf(i));
    }
  });
  try {
    validateEventPattern(pattern);
  } catch (error) {
    translatePatternError(error, 'selectors');
  }
  return pattern;
}

/** sha256 (hex) of the pattern's canonical JSON: equal patterns hash equally whatever their key order. */
export function patternHash(pattern: unknown): string {
  return createHash('sha256').update(canonicalJson(pattern)).digest('hex');
}

/** What `matchesSelector` needs of a breadcrumb (a stored Breadcrumb or a change event's detail fits). */
export interface SelectorSubject {
  readonly schema_name: string;
  readonly tags: readonly string[];
  readonly context?: Record<string, unknown> | undefined;
  readonly [field: string]: unknown;
}

const MATCHER_CACHE_LIMIT = 500;
const matcherCache = new Map<string, CompiledPattern>();

function matcherFor(selector: SelectorInput | Selector): CompiledPattern {
  const key = canonicalJson(selector);
  const cached = matcherCache.get(key);
  if (cached) return cached;
  const compiled = compileEventPattern({ detail: compileSelector(selector) });
  if (matcherCache.size >= MATCHER_CACHE_LIMIT) matcherCache.clear();
  matcherCache.set(key, compiled);
  return compiled;
}

/**
 * The change event detail as the publisher would build it for `subject` had every limit been lifted: the full
 * context, every word of it (`words.ts`, no limits), `context_omitted` and `words_truncated` false. What the
 * re-check and `explain` match, so they give the answer EventBridge would give had everything fitted in the event.
 */
export function routingDetail(subject: SelectorSubject): SelectorSubject {
  const context = subject.context ?? {};
  return {
    ...subject,
    tags: [...subject.tags],
    tag_map: tagMap(subject.tags),
    context,
    context_omitted: false,
    words: contextWords(context, NO_WORD_LIMITS).words,
    words_truncated: false,
  };
}

/**
 * The executor's re-check: does the stored breadcrumb (full context) match the selector? Runs the selector's
 * compiled pattern on the change event `routingDetail` synthesizes.
 */
export function matchesSelector(selector: SelectorInput | Selector, subject: SelectorSubject): boolean {
  return matcherFor(selector).matches({
    source: CHANGE_SOURCE,
    'detail-type': DETAIL_TYPES.updated,
    detail: routingDetail(subject),
  });
}
