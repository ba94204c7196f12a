/**
 * The breadcrumb: a versioned JSON record with a schema name, tags and a context. One zod schema per shape
 * (create input, patch input, stored record); types come from `z.infer`.
 *
 * The rule: every value must be storable as written, so a write is refused up front (422, with the path) rather
 * than failing in DynamoDB. Limits, and why:
 * - `context` ≤ 50 MB serialized; above the attachments room's inline threshold (96 KB) the item keeps a reference
 *   to a blob holding it (claim check: DynamoDB items are capped at 400 KB). Without a blob store, ≤ 380 KB.
 * - ≤ 50 tags of ≤ 128 characters: each tag is an index entry written in the same transaction as the record.
 * - ids and workspaces never contain `#` or `/`: `#` separates key parts in the table, `/` separates URL parts.
 * - schema names ≤ 256 characters: they are part of index keys (DynamoDB caps a key at 2048 bytes).
 * - values: what DynamoDB stores and gives back unchanged (`storableJsonIssues`).
 */
import { createHash } from 'node:crypto';
import { CausationSchema } from './change-event.ts';
import { type FieldIssue, ValidationError } from './errors.ts';
import { LlmHintsSchema } from './llm-hints.ts';
import * as z from './zod.ts';

export const SCHEMA_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*\.v[0-9]+$/;
export const WORKSPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
export const BREADCRUMB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const PRINCIPAL_PATTERN = /^[a-z][a-z0-9-]*:[^\s]{1,256}$/;

/**
 * The writer of a plain put (a record written straight into the table) that names no person, or names one of
 * crumbs' own writers. A `user:` principal, since only people write the table, but nobody in particular: it
 * approves nothing (orchestration/authority.ts).
 */
export const PLAIN_PUT_PRINCIPAL = 'user:plain-put';

/** Whether a principal is a person (`user:<someone>`, not the plain put that names nobody): only people approve. */
export function isPerson(principal: string | undefined): principal is string {
  return (
    typeof principal === 'string' &&
    principal.startsWith('user:') &&
    principal.length > 'user:'.length &&
    principal !== PLAIN_PUT_PRINCIPAL
  );
}

export const LIMITS = {
  maxSchemaNameLength: 256,
  maxTags: 50,
  maxTagLength: 128,
  maxTitleLength: 512,
  /** What one item holds of a context (runs, which the engine writes in place, stay within it). */
  maxContextBytes: 350 * 1024,
  /**
   * The largest context a breadcrumb may have: above the attachments room's inline threshold it is stored as a blob
   * and the item keeps a reference (`shared/rooms/attachments/spill.ts`); the operator may set a lower limit
   * (`CRUMBS_ATTACHMENT_MAX_CONTEXT_BYTES`). A stage without a blob store keeps the item's limit.
   */
  maxLargeContextBytes: 50 * 1024 * 1024,
  /**
   * Requests above this are refused before parsing (413): a Lambda request carries at most 6 MB, event included.
   * Larger contexts are written by executors, or as attachments (presigned uploads).
   */
  maxBodyBytes: 5.5 * 1024 * 1024,
} as const;

export const SchemaNameSchema = z
  .string({ error: 'expected a string' })
  .check(
    z.maxLength(
      LIMITS.maxSchemaNameLength,
      `a schema name has at most ${LIMITS.maxSchemaNameLength} characters`,
    ),
    z.regex(
      SCHEMA_NAME_PATTERN,
      'expected a schema name like "domain.noun.v1" (lowercase, dot-separated, ending .vN)',
    ),
  );

export const WorkspaceSchema = z
  .string({ error: 'expected a string' })
  .check(
    z.regex(
      WORKSPACE_PATTERN,
      'expected 1-64 characters: letters, digits, "_" or "-", starting with a letter or digit',
    ),
  );

export const BreadcrumbIdSchema = z
  .string({ error: 'expected a string' })
  .check(z.regex(BREADCRUMB_ID_PATTERN, 'expected 1-128 characters: letters, digits, ".", "_", ":" or "-"'));

export const PrincipalSchema = z
  .string()
  .check(z.regex(PRINCIPAL_PATTERN, 'expected a principal like "user:alice", "agent:helper", "tool:echo"'));

export const TagSchema = z.string({ error: 'expected a string' }).check(
  z.minLength(1, 'a tag cannot be empty'),
  z.maxLength(LIMITS.maxTagLength, `a tag has at most ${LIMITS.maxTagLength} characters`),
  z.refine((t) => ![...t].some((c) => c.charCodeAt(0) < 0x20), 'a tag cannot contain control characters'),
);

export const TagsSchema = z.pipe(
  z
    .array(TagSchema, { error: 'expected an array of strings' })
    .check(z.maxLength(LIMITS.maxTags, `at most ${LIMITS.maxTags} tags`)),
  z.transform((tags) => [...new Set(tags)]),
);

export const TitleSchema = z
  .string({ error: 'expected a string' })
  .check(z.maxLength(LIMITS.maxTitleLength, `a title has at most ${LIMITS.maxTitleLength} characters`));

export type JsonObject = Record<string, unknown>;

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** DynamoDB's number range (magnitudes) and nesting limit; see `storableJsonIssues`. */
export const DYNAMODB_VALUES = {
  minMagnitude: 1e-130,
  /** Exclusive. */
  maxMagnitude: 1e126,
  /** Levels of maps and lists below a top-level attribute (DynamoDB allows 32 including the attribute). */
  maxDepth: 31,
} as const;

/** At most this many storability issues are reported for one value (a hostile body could have thousands). */
const MAX_STORABLE_ISSUES = 10;

/**
 * Why `value` cannot be stored as written (empty when it can), JSON values only:
 * - numbers 0 or of magnitude 1e-130 to below 1e126 (DynamoDB's range; every such JavaScript number round-trips
 *   exactly), at most 31 levels of nesting below the attribute;
 * - well-formed Unicode (no lone surrogates) in strings and keys, no empty keys (DynamoDB refuses empty attribute
 *   names) and no `__proto__` key (JavaScript readers, the SDK's included, would turn it into a prototype and lose
 *   it).
 * `depth` is the nesting level of `value` itself (0 for a request body, whose fields are top-level attributes).
 * Bounded recursion: it stops descending past the limit, so a hostile, deeply nested body cannot exhaust the stack
 * here or in a later `JSON.stringify`.
 */
export function storableJsonIssues(
  value: unknown,
  path: readonly PropertyKey[] = [],
  depth = 0,
): FieldIssue[] {
  return unstorable(value, path, depth).map((i) => ({ path: formatPath(i.path), message: i.message }));
}

/** Unicode mode reads a string by code points, so only a surrogate without its partner matches. */
const LONE_SURROGATE = /\p{Cs}/u;

function unstorable(
  value: unknown,
  path: readonly PropertyKey[],
  depth: number,
): { path: PropertyKey[]; message: string }[] {
  const issues: { path: PropertyKey[]; message: string }[] = [];
  const add = (at: readonly PropertyKey[], message: string) => {
    if (issues.length < MAX_STORABLE_ISSUES) issues.push({ path: [...at], message });
  };
  const walk = (v: unknown, at: readonly PropertyKey[], level: number): void => {
    if (issues.length >= MAX_STORABLE_ISSUES) return;
    switch (typeof v) {
      case 'string':
        if (LONE_SURROGATE.test(v)) add(at, 'is not well-formed Unicode (it contains a lone surrogate)');
        return;
      case 'boolean':
      // Not stored: JSON and the document client (removeUndefinedValues) leave an undefined field out.
      case 'undefined':
        return;
      case 'number': {
        const magnitude = Math.abs(v);
        if (!Number.isFinite(v)) add(at, 'expected a finite number');
        else if (
          magnitude !== 0 &&
          (magnitude < DYNAMODB_VALUES.minMagnitude || magnitude >= DYNAMODB_VALUES.maxMagnitude)
        ) {
          add(
            at,
            `${v} is outside the range that can be stored: 0, or a magnitude from 1e-130 to below 1e126`,
          );
        }
        return;
      }
      case 'object': {
        if (v === null) return;
        if (level > DYNAMODB_VALUES.maxDepth) {
          add(at, `nested more than ${DYNAMODB_VALUES.maxDepth} levels deep (DynamoDB's limit)`);
          return;
        }
        if (Array.isArray(v)) {
          for (const [i, item] of v.entries()) walk(item, [...at, i], level + 1);
          return;
        }
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          add(at, 'expected a JSON value');
          return;
        }
        for (const key of Object.keys(v)) {
          if (key === '') add([...at, key], 'an empty key cannot be stored (DynamoDB refuses empty names)');
          else if (key === '__proto__') add([...at, key], '"__proto__" cannot be used as a key');
          else if (LONE_SURROGATE.test(key))
            add([...at, key], 'the key is not well-formed Unicode (a lone surrogate)');
          walk((v as Record<string, unknown>)[key], [...at, key], level + 1);
        }
        return;
      }
      default:
        add(at, 'expected a JSON value');
    }
  };
  walk(value, path, depth);
  return issues;
}

/** A zod check running `storableJsonIssues` on the raw input (before zod copies it and drops `__proto__`). */
function storable(depth: number) {
  return z.unknown().check(
    z.superRefine((value, ctx) => {
      for (const issue of unstorable(value, [], depth)) {
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: value });
      }
    }),
  );
}

export const ContextSchema = z.pipe(
  storable(1),
  z.record(z.string(), z.unknown(), { error: 'expected a JSON object' }).check(
    z.refine((c) => jsonBytes(c) <= LIMITS.maxLargeContextBytes, {
      message: `context is larger than ${LIMITS.maxLargeContextBytes / 1024 / 1024} MB serialized (the largest context a breadcrumb may have)`,
    }),
  ),
);

/** The latest expiry accepted: the end of year 9999. */
export const MAX_EXPIRES_AT = 253_402_300_799;

/** Absolute expiry: an ISO-8601 date-time or epoch seconds. Stored as epoch seconds (DynamoDB TTL). */
export const ExpiresAtSchema = z
  .union([
    z.iso.datetime({ offset: true, error: 'expected an ISO-8601 date-time or epoch seconds' }),
    z.number().check(z.int(), z.positive()),
  ])
  .check(
    z.refine(
      (v) => {
        const seconds = toEpochSeconds(v);
        return Number.isFinite(seconds) && seconds > 0 && seconds <= MAX_EXPIRES_AT;
      },
      { message: 'expected a date-time (or epoch seconds) between 1970 and the end of year 9999' },
    ),
  );

export const CreateBreadcrumbFields = z.strictObject({
  schema_name: SchemaNameSchema,
  title: z._default(TitleSchema, ''),
  tags: z._default(TagsSchema, []),
  context: ContextSchema,
  llm_hints: z.optional(LlmHintsSchema),
  expires_at: z.optional(ExpiresAtSchema),
});
/** A create request: storable as written (checked on the raw body, every field), then the fields. */
export const CreateBreadcrumbSchema = z.pipe(storable(0), CreateBreadcrumbFields);
export type CreateBreadcrumbInput = z.input<typeof CreateBreadcrumbFields>;
export type CreateBreadcrumb = z.output<typeof CreateBreadcrumbFields>;

export const UpdateBreadcrumbFields = z
  .strictObject({
    title: z.optional(TitleSchema),
    tags: z.optional(TagsSchema),
    context: z.optional(ContextSchema),
    llm_hints: z.optional(z.nullable(LlmHintsSchema)),
    expires_at: z.optional(z.nullable(ExpiresAtSchema)),
  })
  .check(
    z.refine((p) => Object.keys(p).length > 0, {
      message: 'expected at least one of title, tags, context, llm_hints, expires_at',
    }),
  );
export const UpdateBreadcrumbSchema = z.pipe(storable(0), UpdateBreadcrumbFields);
export type UpdateBreadcrumbInput = z.input<typeof UpdateBreadcrumbFields>;
export type UpdateBreadcrumb = z.output<typeof UpdateBreadcrumbFields>;

/** The stored record: the full view. */
export const BreadcrumbSchema = z.object({
  id: BreadcrumbIdSchema,
  workspace: WorkspaceSchema,
  schema_name: SchemaNameSchema,
  title: z.string(),
  tags: z.array(z.string()),
  context: z.record(z.string(), z.unknown()),
  llm_hints: z.optional(LlmHintsSchema),
  version: z.number().check(z.int(), z.minimum(1)),
  checksum: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  created_by: z.string(),
  updated_by: z.string(),
  /**
   * On a version adopted from a plain put whose `created_by` named one of crumbs' own writers (`system:…`,
   * `agent:…`, `tool:…`): what it claimed. Its writer is then `user:plain-put`.
   */
  claimed_by: z.optional(z.string()),
  expires_at: z.optional(z.number().check(z.int())),
  causation: z.optional(CausationSchema),
});
export type Breadcrumb = z.infer<typeof BreadcrumbSchema>;

/** The context view: what an LLM (and an executor) reads. `llm_hints` already applied. */
export interface ContextView {
  id: string;
  schema_name: string;
  title: string;
  tags: string[];
  version: number;
  updated_at: string;
  context: unknown;
}

/** One entry of a breadcrumb's history: the record as it was at that version. */
export type BreadcrumbVersion = Breadcrumb;

/** Turns zod issues into field issues with readable paths like `tags[3]` or `context`. */
export function toFieldIssues(error: z.core.$ZodError, prefix = ''): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: formatPath([...(prefix ? [prefix] : []), ...issue.path]),
    message: issue.message,
  }));
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

/** Parses with a schema or throws ValidationError naming every bad field. */
export function parseOrThrow<S extends z.ZodMiniType>(schema: S, value: unknown, prefix = ''): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(toFieldIssues(result.error, prefix));
  return result.data;
}

/** JSON with object keys sorted, so equal values serialize identically (checksums, hashes). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

export function checksumOf(context: unknown): string {
  return createHash('sha256').update(canonicalJson(context)).digest('hex');
}

export function toEpochSeconds(expiresAt: string | number): number {
  return typeof expiresAt === 'number' ? expiresAt : Math.floor(Date.parse(expiresAt) / 1000);
}

export function isExpired(record: { expires_at?: number | undefined }, nowMs: number): boolean {
  return record.expires_at !== undefined && record.expires_at * 1000 <= nowMs;
}
