/**
 * The one selector schema. A selector says which breadcrumbs a definition cares about; trigger selectors are
 * compiled into the definition's EventBridge rule (`shared/routing/compiler.ts`), context selectors say what to
 * fetch when a trigger fires.
 *
 * The seeds wrote selectors three ways; all of them load unchanged and are normalized here into one shape:
 * - `fetch` as a bare method (`"fetch": "event_data"`) becomes `{ method }`;
 * - a top-level `limit` moves into `fetch.limit` (method `latest` for 1, `recent` for more, as the seed executor
 *   returned one item for `latest` and a list otherwise);
 * - `priority` is accepted and dropped: nothing in crumbs orders selectors.
 * Unknown extra keys are tolerated (stripped), so annotated definitions keep loading.
 *
 * Values are checked per op here, so a bad selector is refused when the definition is written, with a path such
 * as `subscriptions.selectors[1].context_match[0].value`, instead of when its rule is compiled.
 */
import { SchemaNameSchema, TagSchema } from './breadcrumb.ts';
import {
  AGENT_CONTEXT_SCHEMA,
  AGENT_DEF_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  CONTEXT_CONFIG_SCHEMA,
  SYSTEM_MESSAGE_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  USER_MESSAGE_SCHEMA,
} from './protocol.ts';
import { valueWord } from './words.ts';
import * as z from './zod.ts';

export const CONTEXT_MATCH_OPS = [
  'eq',
  'ne',
  'contains_any',
  'in',
  'gt',
  'gte',
  'lt',
  'lte',
  'exists',
  'prefix',
] as const;
export type ContextMatchOp = (typeof CONTEXT_MATCH_OPS)[number];

export const NUMERIC_OPS = ['gt', 'gte', 'lt', 'lte'] as const;

export const FETCH_METHODS = ['event_data', 'latest', 'recent', 'vector'] as const;
export type FetchMethod = (typeof FETCH_METHODS)[number];

export const ROLES = ['trigger', 'context'] as const;
export type SelectorRole = (typeof ROLES)[number];

/** Schemas whose selectors are triggers unless the selector says otherwise (as in the seeds). */
export const TRIGGER_SCHEMAS: readonly string[] = [
  USER_MESSAGE_SCHEMA,
  AGENT_CONTEXT_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  SYSTEM_MESSAGE_SCHEMA,
  AGENT_REQUEST_SCHEMA,
];

/** The seeds' friendly names for fetched context; other schemas use the schema name with `.` → `_`. */
export const CONTEXT_KEYS: Readonly<Record<string, string>> = {
  [USER_MESSAGE_SCHEMA]: 'user_message',
  [AGENT_RESPONSE_SCHEMA]: 'agent_responses',
  [TOOL_RESPONSE_SCHEMA]: 'tool_results',
  'tool.catalog.v1': 'tool_catalog',
  'browser.page.context.v1': 'browser_context',
  [AGENT_DEF_SCHEMA]: 'agent_definition',
  [CONTEXT_CONFIG_SCHEMA]: 'context_config',
};

/**
 * EventBridge compares numbers only between -5.0e9 and 5.0e9 (15 significant digits, 6 after the point); a
 * comparison outside that range would be refused by PutRule, so it is refused here first.
 */
export const MAX_NUMERIC_MAGNITUDE = 5e9;

// ---------------------------------------------------------------------------------------------------------------
// Paths

const ARRAY_PATH = /[[\]*]/;

/**
 * A context path: `$.a.b`, `$.a`, or the same without `$.`. Normalized to the `$.` form. Array steps (`[0]`,
 * `[*]`) are refused: EventBridge has no array indexing; it matches an array field when any element matches, so
 * select the array field itself (`$.items` with `contains_any` or `eq`).
 */
export const ContextPathSchema = z.pipe(
  z.string({ error: 'expected a path string like "$.a.b"' }),
  z.transform((raw, ctx) => {
    const path = raw.trim();
    if (ARRAY_PATH.test(path)) {
      ctx.issues.push({
        code: 'custom',
        input: raw,
        message: `array paths are not supported ("${raw}"): EventBridge cannot index arrays; match the array field itself (it matches when any element matches)`,
      });
      return z.NEVER;
    }
    const body = path.startsWith('$.') ? path.slice(2) : path;
    const segments = body.split('.');
    if (body === '' || body === '$' || segments.some((s) => s === '')) {
      ctx.issues.push({
        code: 'custom',
        input: raw,
        message: `expected a path like "$.a.b" with non-empty steps, got "${raw}"`,
      });
      return z.NEVER;
    }
    // No stored context holds a `__proto__` key (refused on write), and JavaScript readers would take the step for
    // the object's prototype: a selector naming it could only ever match nothing or reach what is not data.
    if (segments.includes('__proto__')) {
      ctx.issues.push({
        code: 'custom',
        input: raw,
        message: `path step "__proto__" cannot be matched: no context holds a "__proto__" key`,
      });
      return z.NEVER;
    }
    const dollar = segments.find((s) => s.startsWith('$'));
    if (dollar !== undefined) {
      ctx.issues.push({
        code: 'custom',
        input: raw,
        message: `path step "${dollar}" starts with "$", which EventBridge reserves for operators such as $or`,
      });
      return z.NEVER;
    }
    return `$.${segments.join('.')}`;
  }),
);

/** The steps of a normalized or raw path: `$.a.b` → `["a", "b"]`. */
export function pathSegments(path: string): string[] {
  const body = path.startsWith('$.') ? path.slice(2) : path;
  return body.split('.');
}

/** Reads `$.a.b` from an object; undefined when any step is missing or not an object. */
export function getPath(obj: unknown, path: string): unknown {
  let current: unknown = obj;
  for (const segment of pathSegments(path)) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    if (!Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

// ---------------------------------------------------------------------------------------------------------------
// context_match

const ScalarSchema = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const EqValueSchema = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'eq needs a string, number, boolean or null: EventBridge cannot match an object or array exactly',
});

const NeValueSchema = z.union([z.string(), z.number()], {
  error: 'ne needs a string or a number (EventBridge "anything-but" compares only those)',
});

const InValueSchema = z
  .array(ScalarSchema, { error: 'in needs a non-empty array of strings, numbers, booleans or nulls' })
  .check(z.minLength(1, 'in needs a non-empty array of strings, numbers, booleans or nulls'));

/**
 * A `contains_any` string is one word (`words.ts`): on a text field the op matches words, so a phrase could never
 * match there and is refused rather than left to fail silently. `in` matches an array element or a whole value
 * equal to a phrase.
 */
const ContainsAnyStringSchema = z.string().check(
  z.minLength(1, 'contains_any cannot contain an empty string'),
  z.superRefine((value, ctx) => {
    if (value.length === 0) return;
    const result = valueWord(value);
    if ('word' in result) return;
    ctx.addIssue({
      code: 'custom',
      input: value,
      message:
        result.words.length === 0
          ? `"${value}" holds no word: contains_any matches the words of text fields (letters or digits)`
          : `"${value}" is ${result.words.length} words (${result.words.join(', ')}): contains_any matches single words of text fields; list them as separate values, or use "in" to match an array element or a whole value equal to "${value}"`,
    });
  }),
);

const ContainsAnyValueSchema = z
  .array(z.union([ContainsAnyStringSchema, z.number(), z.boolean()]), {
    error: 'contains_any needs a non-empty array of strings, numbers or booleans',
  })
  .check(z.minLength(1, 'contains_any needs a non-empty array of strings, numbers or booleans'));

const NumericValueSchema = z.number({ error: 'numeric comparisons need a finite number' }).check(
  z.refine((n) => Math.abs(n) <= MAX_NUMERIC_MAGNITUDE, {
    message: `EventBridge compares numbers only between -${MAX_NUMERIC_MAGNITUDE} and ${MAX_NUMERIC_MAGNITUDE}`,
  }),
);

const ExistsValueSchema = z.boolean({ error: 'exists needs true or false' });

const PrefixValueSchema = z
  .string({ error: 'prefix needs a non-empty string' })
  .check(z.minLength(1, 'prefix needs a non-empty string'));

const matchOf = <Op extends ContextMatchOp, V extends z.ZodMiniType>(op: Op, value: V) =>
  z.object({ path: ContextPathSchema, op: z.literal(op), value });

export const ContextMatchSchema = z.discriminatedUnion(
  'op',
  [
    matchOf('eq', EqValueSchema),
    matchOf('ne', NeValueSchema),
    matchOf('in', InValueSchema),
    matchOf('contains_any', ContainsAnyValueSchema),
    matchOf('gt', NumericValueSchema),
    matchOf('gte', NumericValueSchema),
    matchOf('lt', NumericValueSchema),
    matchOf('lte', NumericValueSchema),
    matchOf('exists', ExistsValueSchema),
    matchOf('prefix', PrefixValueSchema),
  ],
  { error: `unknown op; expected one of ${CONTEXT_MATCH_OPS.join(', ')}` },
);
export type ContextMatch = z.infer<typeof ContextMatchSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Selector

const PositiveIntSchema = z
  .number({ error: 'expected a positive whole number' })
  .check(
    z.int('expected a positive whole number'),
    z.minimum(1, 'expected a positive whole number'),
    z.maximum(1000, 'at most 1000'),
  );

export const FetchSchema = z.object({
  method: z.enum(FETCH_METHODS, { error: `expected one of ${FETCH_METHODS.join(', ')}` }),
  limit: z.optional(PositiveIntSchema),
  nn: z.optional(PositiveIntSchema),
});
export type Fetch = z.infer<typeof FetchSchema>;

const TagListSchema = z
  .array(TagSchema, { error: 'expected an array of tags' })
  .check(z.minLength(1, 'list at least one tag, or leave the field out'));

const selectorFields = {
  schema_name: z.optional(SchemaNameSchema),
  any_tags: z.optional(TagListSchema),
  all_tags: z.optional(TagListSchema),
  context_match: z.optional(z.array(ContextMatchSchema, { error: 'expected an array of matches' })),
  role: z.optional(z.enum(ROLES, { error: 'expected "trigger" or "context"' })),
  fetch: z.optional(FetchSchema),
  key: z.optional(
    z
      .string({ error: 'expected a string' })
      .check(z.regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'expected an identifier like "tool_results"')),
  ),
  comment: z.optional(z.string({ error: 'expected a string' })),
};

/** The one shape every selector is normalized to. */
export const NormalizedSelectorSchema = z.object(selectorFields, { error: 'expected a selector object' });

/** Accepts the seed variants and normalizes them; the output is a `NormalizedSelectorSchema` value. */
export const SelectorSchema = z.pipe(
  z.object(
    {
      ...selectorFields,
      fetch: z.optional(
        z.union([z.enum(FETCH_METHODS), FetchSchema], {
          error: `expected a fetch method (${FETCH_METHODS.join(', ')}) or { method, limit?, nn? }`,
        }),
      ),
      /** Seed variant: `limit` beside `fetch` instead of inside it. */
      limit: z.optional(PositiveIntSchema),
      /** Seed variant: accepted, not used. */
      priority: z.optional(z.number({ error: 'expected a number' })),
    },
    { error: 'expected a selector object' },
  ),
  z.transform(({ fetch, limit, priority: _priority, ...rest }): z.output<typeof NormalizedSelectorSchema> => {
    let normalized: Fetch | undefined = typeof fetch === 'string' ? { method: fetch } : fetch;
    if (limit !== undefined) {
      if (normalized === undefined) normalized = { method: limit === 1 ? 'latest' : 'recent', limit };
      else if (normalized.limit === undefined) normalized = { ...normalized, limit };
    }
    return normalized === undefined ? rest : { ...rest, fetch: normalized };
  }),
);
export type Selector = z.output<typeof SelectorSchema>;
export type SelectorInput = z.input<typeof SelectorSchema>;

/** Explicit role wins; otherwise trigger iff the schema is one of the seeds' trigger schemas. */
export function inferRole(selector: Pick<Selector, 'role' | 'schema_name'>): SelectorRole {
  if (selector.role) return selector.role;
  return selector.schema_name !== undefined && TRIGGER_SCHEMAS.includes(selector.schema_name)
    ? 'trigger'
    : 'context';
}

/** Where a context selector's fetched breadcrumbs go in the assembled context. */
export function contextKey(selector: Pick<Selector, 'key' | 'schema_name'>): string {
  if (selector.key) return selector.key;
  if (selector.schema_name === undefined) return 'context';
  return CONTEXT_KEYS[selector.schema_name] ?? selector.schema_name.replace(/\./g, '_');
}
