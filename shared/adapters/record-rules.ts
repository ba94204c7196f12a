/**
 * What every store adapter does the same way when it builds, stores and reads records, so the DynamoDB and the
 * in-memory adapters cannot drift: the stored record's derived fields (checksum, `updated_at` never before
 * `created_at`), the storable-shape check, schema-level `llm_hints` defaults kept from `schema.def.v1`
 * breadcrumbs tagged `defines:<schema>`, and the context view.
 */
import { type Breadcrumb, type ContextView, checksumOf } from '#shared/domain/breadcrumb.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { applyLlmHints, type LlmHints, LlmHintsSchema } from '#shared/domain/llm-hints.ts';

/** DynamoDB nests maps and lists at most 32 levels deep; the record itself uses one level for `context`. */
export const MAX_CONTEXT_DEPTH = 31;
export const SCHEMA_DEF = 'schema.def.v1';
export const DEFINES_PREFIX = 'defines:';

/** The stored record for these fields: checksum added, field order fixed, storability checked. */
export function buildRecord(fields: Omit<Breadcrumb, 'checksum'>): Breadcrumb {
  const updatedAt = fields.updated_at;
  const record: Breadcrumb = {
    id: fields.id,
    workspace: fields.workspace,
    schema_name: fields.schema_name,
    title: fields.title,
    tags: fields.tags,
    context: fields.context,
    version: fields.version,
    checksum: checksumOf(fields.context),
    created_at: fields.created_at,
    // ISO-8601 strings of one format compare like the instants they name.
    updated_at: updatedAt < fields.created_at ? fields.created_at : updatedAt,
    created_by: fields.created_by,
    updated_by: fields.updated_by,
    ...(fields.llm_hints !== undefined ? { llm_hints: fields.llm_hints } : {}),
    ...(fields.expires_at !== undefined ? { expires_at: fields.expires_at } : {}),
    ...(fields.causation !== undefined ? { causation: fields.causation } : {}),
  };
  assertStorable(record);
  return record;
}

export function toContextView(record: Breadcrumb, hints: LlmHints | undefined): ContextView {
  return {
    id: record.id,
    schema_name: record.schema_name,
    title: record.title,
    tags: record.tags,
    version: record.version,
    updated_at: record.updated_at,
    context: applyLlmHints(record.context, hints),
  };
}

/** The schemas a `schema.def.v1` breadcrumb gives llm_hints defaults for (its `defines:<schema>` tags). */
export function definedSchemas(record: Breadcrumb | undefined): string[] {
  return record?.schema_name === SCHEMA_DEF
    ? record.tags.filter((t) => t.startsWith(DEFINES_PREFIX)).map((t) => t.slice(DEFINES_PREFIX.length))
    : [];
}

/** The llm_hints defaults a `schema.def.v1` carries in `context.llm_hints`; invalid ones refuse the write. */
export function schemaDefHints(record: Breadcrumb): LlmHints | undefined {
  const raw = record.context.llm_hints;
  if (raw === undefined) return undefined;
  const parsed = LlmHintsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ValidationError(
      parsed.error.issues.map((i) => ({
        path: ['context', 'llm_hints', ...i.path].join('.'),
        message: i.message,
      })),
    );
  }
  return parsed.data;
}

function assertStorable(record: Breadcrumb): void {
  const depth = nestingDepth(record.context);
  if (depth > MAX_CONTEXT_DEPTH) {
    throw new ValidationError([
      {
        path: 'context',
        message: `nested ${depth} levels deep; at most ${MAX_CONTEXT_DEPTH} (DynamoDB's limit)`,
      },
    ]);
  }
}

function nestingDepth(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let max = 0;
  for (const v of Object.values(value)) max = Math.max(max, nestingDepth(v));
  return max + 1;
}
