/**
 * What every store adapter does the same way when it builds, stores and reads records, so the DynamoDB and the
 * in-memory adapters cannot drift: the first version of a created record and the next version a patch makes
 * (`applyPatch`), If-Match, the stored record's derived fields (checksum, `updated_at` never before `created_at`),
 * the storable-shape check, expired heads read as gone, schema-level `llm_hints` defaults kept from `schema.def.v1`
 * breadcrumbs tagged `defines:<schema>`, the context view, and the paging both stores answer (cursors, history
 * pages, the unscoped listing refused). Pure: the stores do the IO.
 */
import {
  type Breadcrumb,
  type ContextView,
  type CreateBreadcrumb,
  checksumOf,
  isExpired,
  jsonBytes,
  storableJsonIssues,
  toEpochSeconds,
  type UpdateBreadcrumb,
} from '#shared/domain/breadcrumb.ts';
import {
  BadRequestError,
  NotFoundError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import type { StepBudget } from '#shared/domain/lang/template.ts';
import { applyLlmHints, type LlmHints, LlmHintsSchema } from '#shared/domain/llm-hints.ts';
import { SCHEMA_DEF } from '#shared/domain/protocol.ts';

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
    ...(fields.claimed_by !== undefined ? { claimed_by: fields.claimed_by } : {}),
    ...(fields.llm_hints !== undefined ? { llm_hints: fields.llm_hints } : {}),
    ...(fields.expires_at !== undefined ? { expires_at: fields.expires_at } : {}),
    ...(fields.causation !== undefined ? { causation: fields.causation } : {}),
  };
  assertStorable(record);
  return record;
}

/** Who writes and when: what every write stamps on the version it makes. */
export interface WriteStamp {
  readonly now: Date;
  readonly principal: string;
  readonly causation?: Breadcrumb['causation'];
}

/** Version 1 of a breadcrumb created from `input`; the store decides its expiry (a schema's TTL default or none). */
export function firstVersion(
  workspace: string,
  id: string,
  input: CreateBreadcrumb,
  expiresAt: number | undefined,
  stamp: WriteStamp,
): Breadcrumb {
  return buildRecord({
    id,
    workspace,
    schema_name: input.schema_name,
    title: input.title,
    tags: input.tags,
    context: input.context,
    llm_hints: input.llm_hints,
    expires_at: expiresAt,
    version: 1,
    created_at: stamp.now.toISOString(),
    updated_at: stamp.now.toISOString(),
    created_by: stamp.principal,
    updated_by: stamp.principal,
    causation: stamp.causation,
  });
}

/**
 * The next version of `current` under `patch`: a field the patch leaves out keeps its value, `null` clears
 * `llm_hints` or `expires_at`, and causation is the writer's or else kept.
 */
export function applyPatch(current: Breadcrumb, patch: UpdateBreadcrumb, stamp: WriteStamp): Breadcrumb {
  return buildRecord({
    ...current,
    title: patch.title ?? current.title,
    tags: patch.tags ?? current.tags,
    context: patch.context ?? current.context,
    llm_hints: patch.llm_hints === null ? undefined : (patch.llm_hints ?? current.llm_hints),
    expires_at:
      patch.expires_at === null
        ? undefined
        : patch.expires_at === undefined
          ? current.expires_at
          : toEpochSeconds(patch.expires_at),
    version: current.version + 1,
    updated_at: stamp.now.toISOString(),
    updated_by: stamp.principal,
    causation: stamp.causation ?? current.causation,
  });
}

/** The context view of `record` under `hints`; `budget`, the template steps its read has left (`applyLlmHints`). */
export function toContextView(
  record: Breadcrumb,
  hints: LlmHints | undefined,
  budget?: StepBudget,
): ContextView {
  return {
    id: record.id,
    schema_name: record.schema_name,
    title: record.title,
    tags: record.tags,
    version: record.version,
    updated_at: record.updated_at,
    context: applyLlmHints(record.context, hints, budget),
  };
}

/** The schemas a `schema.def.v1` breadcrumb gives llm_hints defaults for (its `defines:<schema>` tags). */
export function definedSchemas(record: Breadcrumb | undefined): string[] {
  return record?.schema_name === SCHEMA_DEF
    ? record.tags.filter((t) => t.startsWith(DEFINES_PREFIX)).map((t) => t.slice(DEFINES_PREFIX.length))
    : [];
}

/** The longest per-schema default expiry: ten years. */
export const MAX_TTL_SECONDS = 10 * 365 * 24 * 60 * 60;
/** Serialized size of what a user controls in one record; the rest of the 400 KB item is bookkeeping. */
export const MAX_RECORD_BYTES = 380 * 1024;

/** What a `schema.def.v1` sets for the schemas it defines. */
export interface SchemaSettings {
  hints: LlmHints | undefined;
  ttlSeconds: number | undefined;
}

/**
 * The settings a `schema.def.v1` carries: `context.llm_hints` defaults and `context.ttl_seconds` (the expiry
 * given to breadcrumbs of the schema written without one). Invalid ones refuse the write.
 */
export function schemaDefSettings(record: Breadcrumb): SchemaSettings {
  const issues: { path: string; message: string }[] = [];
  let hints: LlmHints | undefined;
  const raw = record.context.llm_hints;
  if (raw !== undefined) {
    const parsed = LlmHintsSchema.safeParse(raw);
    if (parsed.success) hints = parsed.data;
    else {
      issues.push(
        ...parsed.error.issues.map((i) => ({
          path: ['context', 'llm_hints', ...i.path].join('.'),
          message: i.message,
        })),
      );
    }
  }
  const ttl = record.context.ttl_seconds;
  if (
    ttl !== undefined &&
    !(typeof ttl === 'number' && Number.isInteger(ttl) && ttl > 0 && ttl <= MAX_TTL_SECONDS)
  ) {
    issues.push({
      path: 'context.ttl_seconds',
      message: `expected whole seconds from 1 to ${MAX_TTL_SECONDS} (ten years), got ${JSON.stringify(ttl)}`,
    });
  }
  if (issues.length > 0) throw new ValidationError(issues);
  return { hints, ttlSeconds: typeof ttl === 'number' ? ttl : undefined };
}

/** The llm_hints defaults a `schema.def.v1` carries in `context.llm_hints`; invalid ones refuse the write. */
export function schemaDefHints(record: Breadcrumb): LlmHints | undefined {
  return schemaDefSettings(record).hints;
}

/**
 * Every write goes through here, whoever built the record (API, executors, tools, adopted plain puts): a value
 * DynamoDB would refuse, or that would not read back as written, is a ValidationError naming its path — never an
 * SDK error surfacing as a 5xx or an endless retry.
 */
function assertStorable(record: Breadcrumb): void {
  const issues = [
    ...storableJsonIssues(record.context, ['context'], 1),
    ...(record.llm_hints !== undefined ? storableJsonIssues(record.llm_hints, ['llm_hints'], 1) : []),
    ...storableJsonIssues(record.title, ['title']),
    ...storableJsonIssues(record.tags, ['tags'], 1),
  ];
  if (issues.length > 0) throw new ValidationError(issues);
  const bytes = jsonBytes([record.context, record.llm_hints ?? null, record.title, record.tags]);
  if (bytes > MAX_RECORD_BYTES) {
    throw new ValidationError([
      {
        path: record.llm_hints !== undefined ? 'llm_hints' : 'context',
        message: `context, llm_hints, title and tags together are ${Math.ceil(bytes / 1024)} KB serialized; at most ${MAX_RECORD_BYTES / 1024} KB (DynamoDB items are capped at 400 KB)`,
      },
    ]);
  }
}

/** A listing names a schema, a tag or both: a whole workspace is never scanned. */
export function refuseUnscopedListing(): never {
  throw new BadRequestError('listing needs schema_name, tag, or both', [
    {
      path: 'schema_name',
      message: 'give schema_name and/or tag: listing a whole workspace is not supported',
    },
  ]);
}

/** Cursors are opaque to callers: base64url of JSON, checked again when they come back. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursorJson(cursor: string): unknown {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new BadRequestError('cursor is not valid', [
      { path: 'cursor', message: 'expected a cursor from next_cursor' },
    ]);
  }
}

/**
 * The versions one history page holds, newest first, from the cursor's version (or the head's) down, `limit` of
 * them, and the cursor of the next page (none once version 1 is on this one).
 */
export function historyPage(
  headVersion: number,
  page: { limit: number; cursor?: string },
): { versions: number[]; next_cursor: string | null } {
  const from = page.cursor === undefined ? headVersion : decodeHistoryCursor(page.cursor, headVersion);
  const to = Math.max(1, from - page.limit + 1);
  const versions: number[] = [];
  for (let v = from; v >= to; v--) versions.push(v);
  return { versions, next_cursor: to > 1 ? encodeCursor({ v: to - 1 }) : null };
}

/** If-Match: with an expected version, any other stored version is a conflict (and nothing is written). */
export function assertExpectedVersion(expected: number | undefined, current: Breadcrumb): void {
  if (expected !== undefined && current.version !== expected) {
    throw new VersionConflictError(expected, current.version);
  }
}

/** A stored head as readers see it: gone when missing or past its `expires_at`. */
export function liveOrGone(
  record: Breadcrumb | undefined,
  workspace: string,
  id: string,
  nowMs: number,
): Breadcrumb {
  if (!record) throw new NotFoundError(`no breadcrumb ${id} in workspace ${workspace}`);
  if (isExpired(record, nowMs)) {
    throw new NotFoundError(`no breadcrumb ${id} in workspace ${workspace} (it expired)`);
  }
  return record;
}

/** The version a history page starts from: a whole number from 1 to the current version. */
export function decodeHistoryCursor(cursor: string, current: number): number {
  const value = decodeCursorJson(cursor) as { v?: unknown } | null;
  const v = value?.v;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > current) {
    throw new BadRequestError('cursor is not valid', [
      { path: 'cursor', message: 'expected a cursor from next_cursor' },
    ]);
  }
  return v;
}
