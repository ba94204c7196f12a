/**
 * The change event: what the publisher puts on the crumbs bus for every breadcrumb write, and what compiled
 * selector patterns match. An event describes one version, which never changes: when its context (with the
 * record's llm_hints) fits `MAX_EVENT_CONTEXT_BYTES` it carries the whole record (`recordOf` rebuilds it) and the
 * executor it triggers reads nothing more; a larger context is left out (`context_omitted: true`) and executors
 * read the breadcrumb.
 *
 * Envelope (EventBridge):
 *   source:      "crumbs"
 *   detail-type: "Breadcrumb Created" | "Breadcrumb Updated" | "Breadcrumb Deleted"
 *   detail:      ChangeDetail (below)
 *
 * Fields exist for what EventBridge patterns cannot say: `tag_map` for "all of these tags", `words` for "contains
 * this word" (see their docs in `ChangeDetailSchema`).
 */
import type { Breadcrumb } from './breadcrumb.ts';
import { contextWords } from './words.ts';
import * as z from './zod.ts';

export const CHANGE_SOURCE = 'crumbs';

export const DETAIL_TYPES = {
  created: 'Breadcrumb Created',
  updated: 'Breadcrumb Updated',
  deleted: 'Breadcrumb Deleted',
} as const;
export type DetailType = (typeof DETAIL_TYPES)[keyof typeof DETAIL_TYPES];

/**
 * Serialized `context` (plus the record's `llm_hints`) above this many bytes is left out of the event: with the
 * routing fields it stays within one 64 KB EventBridge billing chunk, far under the 1 MB event limit (EventBridge and
 * SQS took 256 KB until January 2026): events are references plus routing fields.
 */
export const MAX_EVENT_CONTEXT_BYTES = 48 * 1024;

export const CausationSchema = z.object({
  caused_by: z.string().check(z.regex(/^[^@\s]+@\d+$/, 'expected "<breadcrumb id>@<version>"')),
  thread: z.string().check(z.minLength(1), z.maxLength(128)),
  hop: z.number().check(z.int(), z.minimum(0)),
});
export type Causation = z.infer<typeof CausationSchema>;

export const ChangeDetailSchema = z.object({
  workspace: z.string(),
  id: z.string(),
  version: z.number().check(z.int()),
  schema_name: z.string(),
  title: z.string(),
  tags: z.array(z.string()),
  /**
   * Encoded tag → true, for `all_tags` matching: EventBridge has no "all of" operator for arrays, so `all_tags:
   * [a, b]` compiles to `{"tag_map": {"<enc a>": [true], "<enc b>": [true]}}`. In an event pattern a key containing
   * "." is read as a path, so tag keys are encoded with `encodeTagKey`.
   */
  tag_map: z.record(z.string(), z.literal(true)),
  created_by: z.string(),
  updated_by: z.string(),
  updated_at: z.string(),
  causation: z.nullable(CausationSchema),
  /**
   * The rest of the record, present unless `context_omitted` is true (`created_at` always then; the others when
   * the record has them): with them the event is the whole version (`recordOf`). Events of older publishers lack
   * them, and their executors read the record.
   */
  created_at: z.optional(z.string()),
  expires_at: z.optional(z.number().check(z.int())),
  llm_hints: z.optional(z.record(z.string(), z.unknown())),
  claimed_by: z.optional(z.string()),
  /** Present unless `context_omitted` is true. */
  context: z.optional(z.record(z.string(), z.unknown())),
  context_omitted: z.boolean(),
  /**
   * The lowercased words of each text field, mirroring the context's objects (`words.ts`), so `contains_any` on a
   * text field compiles to word equality: EventBridge compares strings only whole and case-sensitively. Absent
   * when the context is omitted.
   */
  words: z.optional(z.record(z.string(), z.unknown())),
  /** True when a limit cut the words of some field; matching then falls back to the executor's re-check. */
  words_truncated: z.optional(z.boolean()),
  checksum: z.string(),
  /**
   * The W3C trace context of the publisher's span for this change (`shared/ports/tracing.ts`): the executor's span
   * continues it. Absent when tracing is off.
   */
  traceparent: z.optional(z.string().check(z.maxLength(128))),
});
export type ChangeDetail = z.infer<typeof ChangeDetailSchema>;

export const ChangeEventSchema = z.object({
  version: z.optional(z.string()),
  id: z.optional(z.string()),
  source: z.literal(CHANGE_SOURCE),
  'detail-type': z.enum([DETAIL_TYPES.created, DETAIL_TYPES.updated, DETAIL_TYPES.deleted]),
  account: z.optional(z.string()),
  region: z.optional(z.string()),
  time: z.optional(z.string()),
  resources: z.optional(z.array(z.string())),
  detail: ChangeDetailSchema,
});
export type ChangeEvent = z.infer<typeof ChangeEventSchema>;

const TAG_KEY_ESCAPES = /[%.$\s]/g;

/**
 * Encodes a tag for use as a key in `tag_map` (and in compiled patterns): percent-encoding of `%`, `.`, `$` and
 * whitespace. Reversible, stable.
 */
export function encodeTagKey(tag: string): string {
  return tag.replace(
    TAG_KEY_ESCAPES,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

export function decodeTagKey(key: string): string {
  return key.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

export function tagMap(tags: readonly string[]): Record<string, true> {
  const map: Record<string, true> = {};
  for (const tag of tags) map[encodeTagKey(tag)] = true;
  return map;
}

/** A change event as it is put on a bus (the shape of the event-bus port's entry). */
export interface ChangeEntry {
  source: string;
  detailType: DetailType;
  detail: ChangeDetail;
  time: Date;
}

/**
 * The change event for a record; the context (its words and the rest of the record with it) is left out, with a
 * flag, when the context would make the event large.
 */
export function changeEntry(type: DetailType, record: Breadcrumb): ChangeEntry {
  const contextBytes =
    Buffer.byteLength(JSON.stringify(record.context), 'utf8') +
    (record.llm_hints === undefined ? 0 : Buffer.byteLength(JSON.stringify(record.llm_hints), 'utf8'));
  // A context the item keeps as a blob reference (`shared/rooms/attachments/spill.ts`) is left out too: executors
  // read the breadcrumb, which gives it back whole.
  const omit = contextBytes > MAX_EVENT_CONTEXT_BYTES || '$spilled' in record.context;
  const words = omit ? undefined : contextWords(record.context);
  const detail: ChangeDetail = {
    workspace: record.workspace,
    id: record.id,
    version: record.version,
    schema_name: record.schema_name,
    title: record.title,
    tags: record.tags,
    tag_map: tagMap(record.tags),
    created_by: record.created_by,
    updated_by: record.updated_by,
    updated_at: record.updated_at,
    causation: record.causation ?? null,
    ...(omit ? {} : wholeRecord(record)),
    context_omitted: omit,
    ...(words ? { words: words.words, words_truncated: words.truncated } : {}),
    checksum: record.checksum,
  };
  return { source: CHANGE_SOURCE, detailType: type, detail, time: new Date(record.updated_at) };
}

/** What an event adds to its routing fields to carry the whole record (`recordOf` reads it back). */
function wholeRecord(record: Breadcrumb): Partial<ChangeDetail> {
  return {
    created_at: record.created_at,
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
    ...(record.llm_hints !== undefined ? { llm_hints: record.llm_hints } : {}),
    ...(record.claimed_by !== undefined ? { claimed_by: record.claimed_by } : {}),
    context: record.context,
  };
}

/**
 * The record an event carries whole, as its fields say (unvalidated: the caller parses it with `BreadcrumbSchema`,
 * which this module cannot import), or undefined when the event left the context out or comes from a publisher
 * that did not yet send the whole record (no `created_at`).
 */
export function recordOf(detail: ChangeDetail): Record<string, unknown> | undefined {
  if (detail.context_omitted || detail.context === undefined || detail.created_at === undefined)
    return undefined;
  return {
    id: detail.id,
    workspace: detail.workspace,
    schema_name: detail.schema_name,
    title: detail.title,
    tags: detail.tags,
    context: detail.context,
    ...(detail.llm_hints !== undefined ? { llm_hints: detail.llm_hints } : {}),
    version: detail.version,
    checksum: detail.checksum,
    created_at: detail.created_at,
    updated_at: detail.updated_at,
    created_by: detail.created_by,
    updated_by: detail.updated_by,
    ...(detail.claimed_by !== undefined ? { claimed_by: detail.claimed_by } : {}),
    ...(detail.expires_at !== undefined ? { expires_at: detail.expires_at } : {}),
    ...(detail.causation !== null ? { causation: detail.causation } : {}),
  };
}
