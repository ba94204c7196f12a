/**
 * Key builders and item ↔ record mapping for the breadcrumbs table. The layout is documented in
 * `table-design.md` beside this file.
 */

import type { TranslateConfig } from '@aws-sdk/lib-dynamodb';
import type { NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { traceparentOf } from '#shared/adapters/tracing/otel-context.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { BreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import {
  isRoutingTag,
  LISTED_BY_START,
  REQUEST_TAG_PREFIX,
  RUN_TAG_PREFIX,
  SCHEMA_TAGS,
  THREAD_TAG_PREFIX,
} from '#shared/domain/protocol.ts';
import type { ActivityEntry } from '#shared/ports/activity.ts';

/**
 * How crumbs converts numbers to and from DynamoDB, for every document client and stream image, every JavaScript
 * number DynamoDB can store (0, or magnitudes 1e-130 to below 1e126 — what validation admits) is written as its
 * shortest decimal and read back as the same number. The SDK's defaults refuse to write numbers beyond 2^53 and
 * read them back as BigInt (which JSON cannot serialize), which turned such a number into a 5xx.
 */
export function translateConfig(): TranslateConfig {
  // A fresh object per client: lib-dynamodb writes `convertWithoutMapWrapper` into the options it is given.
  return {
    marshallOptions: { removeUndefinedValues: true, allowImpreciseNumbers: true },
    unmarshallOptions: { wrapNumbers: toNumber },
  };
}

function toNumber(text: string): number {
  return Number(text);
}

/** A stream image (DynamoDB JSON) as a plain item, numbers converted as `translateConfig` says. */
export function unmarshallImage(raw: Record<string, unknown>): Record<string, unknown> {
  return unmarshall(raw as Record<string, NativeAttributeValue>, { wrapNumbers: toNumber });
}

/**
 * `value` with every plain object turned into a `Map`, for the document client to marshall. Why: the SDK's
 * marshaller tells a value's type by `value.constructor.name`, which data can set — a context key named
 * `constructor` made every write of it fail (a 5xx), and `{"constructor":{"name":"String"}}` would have been stored
 * as the string "[object Object]". A Map is told apart by its prototype, which JSON data cannot change. Everything
 * written that holds data from users (contexts, hints, the plain put a condition compares) goes through here.
 */
export function storable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(storable);
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const map = new Map<string, unknown>();
  for (const [key, entry] of Object.entries(value)) map.set(key, storable(entry));
  return map;
}

export const KIND = {
  breadcrumb: 'breadcrumb',
  version: 'version',
  tag: 'tag',
  idempotency: 'idempotency',
  schemaHints: 'schema-hints',
  claim: 'claim',
  circuit: 'circuit',
  deletion: 'deletion',
  tombstone: 'tombstone',
  quota: 'quota',
  quotaSlot: 'quota-slot',
  budget: 'budget',
  rate: 'rate',
  slots: 'slots',
  waitIndex: 'wait-index',
  mcpCall: 'mcp-call',
  guardrailVault: 'guardrail-vault',
} as const;

export type Key = { id: string; workspace: string };

export const keys = {
  head: (workspace: string, id: string): Key => ({ id, workspace }),
  version: (workspace: string, id: string, version: number): Key => ({
    id: `${id}#v#${String(version).padStart(10, '0')}`,
    workspace,
  }),
  tag: (workspace: string, id: string, tag: string): Key => ({ id: `${id}#t#${tag}`, workspace }),
  idempotency: (workspace: string, key: string): Key => ({ id: `#idem#${key}`, workspace }),
  schemaHints: (workspace: string, schemaName: string): Key => ({ id: `#hints#${schemaName}`, workspace }),
  /** An executor's claim on one trigger version (`claims.ts`). */
  claim: (key: { workspace: string; executor: string; triggerId: string; triggerVersion: number }): Key => ({
    id: `#claim#${key.executor}#${key.triggerId}@${key.triggerVersion}`,
    workspace: key.workspace,
  }),
  deletion: (workspace: string, id: string, version: number): Key => ({
    id: `${id}#d#${String(version).padStart(10, '0')}`,
    workspace,
  }),
};

/**
 * The update that marks a claim done: whoever finishes marks it (outputs have deterministic ids, so a worker that
 * lost its lease wrote the same breadcrumbs as the one that took over).
 */
export function claimCompletion(key: Parameters<typeof keys.claim>[0], token: string, at: string) {
  return {
    Key: keys.claim(key),
    UpdateExpression: 'SET #state = :done, completed_at = :at, completed_by = :token',
    ExpressionAttributeNames: { '#state': 'state' },
    ExpressionAttributeValues: { ':done': 'done', ':at': at, ':token': token },
  };
}

/**
 * How many partitions a workspace's change log is spread over (gsi3 `<ws>#c#<shard>`). One GSI partition key takes
 * about 1,000 writes a second, and a hot GSI partition throttles the table writes behind it; a breadcrumb always
 * lands in the same shard (hash of its id), so its own versions stay in order within one partition. Readers query
 * every shard and merge (table-design.md, "Threads and the change log").
 */
export const CHANGE_LOG_SHARDS = 4;

export function changeLogShard(id: string): number {
  let hash = 0x811c9dc5; // FNV-1a: cheap, stable, and spreads short ids well enough for 4 buckets.
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash % CHANGE_LOG_SHARDS;
}

export const gsi = {
  bySchema: (workspace: string, schemaName: string) => `${workspace}#s#${schemaName}`,
  byTag: (workspace: string, tag: string) => `${workspace}#t#${tag}`,
  sort: (updatedAt: string, id: string) => `${updatedAt}#${id}`,
  /** gsi3 on heads that carry causation: the thread index. */
  byThread: (workspace: string, thread: string) => `${workspace}#th#${thread}`,
  /** gsi3 on version and deletion items: the workspace's change log, one partition per shard. */
  changeLog: (workspace: string, shard: number) => `${workspace}#c#${shard}`,
  /** Sort key of a change: when, which breadcrumb, which version (zero-padded: sorts as the number). */
  changeSort: (updatedAt: string, id: string, version: number) =>
    `${updatedAt}#${id}#${String(version).padStart(10, '0')}`,
};

/**
 * A short status read from the context (`status` of tool and agent responses, workflow runs), kept on heads and
 * versions so the thread and change indexes can show errors without reading every record.
 */
function contextStatus(record: Breadcrumb): { ctx_status?: string } {
  const status = record.context.status;
  return typeof status === 'string' && status.length <= 40 ? { ctx_status: status } : {};
}

/** Attributes of a stored record that are bookkeeping, not part of the breadcrumb. */
const INTERNAL = new Set([
  'kind',
  'traceparent',
  'write_id',
  'gsi1pk',
  'gsi1sk',
  'gsi2pk',
  'gsi2sk',
  'ref',
  'ingest_errors',
  'gsi3pk',
  'gsi3sk',
  'gsi4pk',
  'gsi4sk',
  'gsi5pk',
  'ctx_status',
  'layout',
  'inherited',
]);

/** The fields of a record that hold data from users, made `storable`. */
function storableFields(record: Breadcrumb): Record<string, unknown> {
  return {
    ...record,
    context: storable(record.context),
    ...(record.llm_hints !== undefined ? { llm_hints: storable(record.llm_hints) } : {}),
  };
}

/**
 * The layout of heads this code writes (`layout` on the head): the head holds its current version (no version item
 * until it is superseded), is listed under its first listed tag in gsi2 and in the change log in gsi4, and its other
 * listed tags are tag items the publisher keeps. Heads without it were written with a version item for every
 * version and a tag item for every tag (table-design.md "Layouts").
 */
export const HEAD_LAYOUT = 2;

/** What decides whether a record's tag needs an entry of its own. */
type Listed = Pick<Breadcrumb, 'id' | 'causation' | 'tags' | 'schema_name'>;

/**
 * Whether another index answers the listing of `tag` for this record, so the tag needs no entry of its own
 * (table-design.md "Tags"):
 * - `thread:<t>` on a member of thread `t` (the thread index holds it) or on the thread's root (read by id);
 * - `run:<id>` on breadcrumb `<id>` itself (a run's own tag): read by id;
 * - `request:<t>` on a member of thread `t`: that thread;
 * - a schema's own tag (`SCHEMA_TAGS`: `tool:response` on a `tool.response.v1`): the schema's listing;
 * - a routing tag (`run:`, `step:`, `reply-to:`, `request:`) its cause carries too, or `request:<id>` naming its
 *   cause (`inherited`): the listing finds the first breadcrumb of the chain by its entry (or by id) and the rest
 *   through that one's thread.
 */
export function answeredElsewhere(record: Listed, tag: string, inherited: readonly string[] = []): boolean {
  // A run's own `run:<its id>`: the listing reads the run by id.
  if (tag === `${RUN_TAG_PREFIX}${record.id}`) return true;
  if (tag.startsWith(THREAD_TAG_PREFIX)) {
    const thread = tag.slice(THREAD_TAG_PREFIX.length);
    return record.causation ? record.causation.thread === thread : record.id === thread;
  }
  if (Object.hasOwn(SCHEMA_TAGS, tag) && SCHEMA_TAGS[tag] === record.schema_name) return true;
  // `request:<t>` on a member of thread `t` (a run's result naming the request that started the thread): the
  // listing reads thread `t` (`inheritedSources`).
  if (record.causation && tag === `${REQUEST_TAG_PREFIX}${record.causation.thread}`) return true;
  return inherited.includes(tag);
}

/**
 * The routing tags of `record` that need no entry because of its cause: those the cause carries too
 * (`CreateOptions.causeTags`), and `request:<id>` naming the cause itself (an answer to the breadcrumb that caused
 * it, found through that breadcrumb's thread).
 */
export function inheritedTags(record: Listed, causeTags: readonly string[] | undefined): string[] {
  if (!record.causation) return [];
  const causedBy = record.causation.caused_by;
  const causeId = causedBy.slice(0, causedBy.lastIndexOf('@'));
  return record.tags.filter(
    (tag) =>
      isRoutingTag(tag) && (causeTags?.includes(tag) === true || tag === `${REQUEST_TAG_PREFIX}${causeId}`),
  );
}

/** The tags of a record that get an index entry, in the record's order: the first rides on the head (gsi2). */
export function listedTags(record: Listed, inherited: readonly string[] = []): string[] {
  return record.tags.filter((tag) => !answeredElsewhere(record, tag, inherited));
}

/**
 * The time a record is listed at (its index entries' sort keys `<time>#<id>`): its last write, or its creation for
 * schemas listed by start (`LISTED_BY_START`: runs), whose entries then stay put while the record is rewritten.
 */
export function listedAt(record: Pick<Breadcrumb, 'schema_name' | 'created_at' | 'updated_at'>): string {
  return LISTED_BY_START.has(record.schema_name) ? record.created_at : record.updated_at;
}

/**
 * The listed tag the head itself is listed under (gsi2), or none. A record listed by start lists every tag through
 * tag items instead: they are written once and stay put while the record is rewritten, where an entry on the head
 * (a copy of the whole head) would be rewritten at every step.
 */
export function headTag(record: Listed & Pick<Breadcrumb, 'schema_name'>, inherited: readonly string[] = []) {
  return LISTED_BY_START.has(record.schema_name) ? undefined : listedTags(record, inherited)[0];
}

/** The tags whose entries are tag items (the publisher writes them): every listed tag but the head's own. */
export function tagItemTags(record: Listed, inherited: readonly string[] = []): string[] {
  const listed = listedTags(record, inherited);
  return LISTED_BY_START.has(record.schema_name) ? listed : listed.slice(1);
}

/**
 * The inherited routing tags a stored head records (`inherited`), or none. Written as positions in its `tags` (a
 * few bytes where the tags themselves are often a hundred or more, on every executor's output); read as positions
 * or as the tags themselves.
 */
export function inheritedOf(item: Record<string, unknown> | undefined): string[] {
  const value = item?.inherited;
  const list: unknown[] = value instanceof Set ? [...value] : Array.isArray(value) ? value : [];
  const tags = Array.isArray(item?.tags) ? (item.tags as unknown[]) : [];
  return list.flatMap((entry) => {
    const tag = typeof entry === 'number' ? tags[entry] : entry;
    return typeof tag === 'string' ? [tag] : [];
  });
}

/** `inherited` as stored: the positions of those tags in the record's `tags`. */
function inheritedPositions(record: Listed, inherited: readonly string[]): number[] {
  return record.tags.flatMap((tag, i) => (inherited.includes(tag) ? [i] : []));
}

export function headItem(
  record: Breadcrumb,
  writeId: string,
  inherited: readonly string[] = [],
): Record<string, unknown> {
  const primary = headTag(record, inherited);
  const sort = gsi.sort(listedAt(record), record.id);
  return {
    ...storableFields(record),
    kind: KIND.breadcrumb,
    write_id: writeId,
    layout: HEAD_LAYOUT,
    ...(inherited.length > 0 ? { inherited: inheritedPositions(record, inherited) } : {}),
    gsi1pk: gsi.bySchema(record.workspace, record.schema_name),
    gsi1sk: sort,
    ...(primary !== undefined ? { gsi2pk: gsi.byTag(record.workspace, primary), gsi2sk: sort } : {}),
    gsi4pk: gsi.changeLog(record.workspace, changeLogShard(record.id)),
    gsi4sk: gsi.changeSort(record.updated_at, record.id, record.version),
    ...contextStatus(record),
    // The span that wrote it, beside the record (never in its context): the publisher's span continues it. Only
    // while a span of crumbs' is active (tracing on); plain puts have none, and start a trace of their own.
    ...traceparentField(),
    // Sparse: a breadcrumb that starts a thread has no causation; its id is the thread id, read directly.
    ...(record.causation
      ? {
          gsi3pk: gsi.byThread(record.workspace, record.causation.thread),
          gsi3sk: sort,
        }
      : {}),
  };
}

function traceparentField(): { traceparent?: string } {
  const traceparent = traceparentOf();
  return traceparent === undefined ? {} : { traceparent };
}

/** A superseded (or deleted) version, kept as history and in the change log (gsi3). */
export function versionItem(record: Breadcrumb): Record<string, unknown> {
  return {
    ...storableFields(record),
    ...keys.version(record.workspace, record.id, record.version),
    kind: KIND.version,
    ref: record.id,
    ...contextStatus(record),
    gsi3pk: gsi.changeLog(record.workspace, changeLogShard(record.id)),
    gsi3sk: gsi.changeSort(record.updated_at, record.id, record.version),
  };
}

/**
 * What the thread index and the change log keep of a write (an `ActivityEntry` but for its kind and status): the
 * one projection of a record onto an index entry, for the items written here and for entries built from records
 * read whole (a thread's root, causes whose heads moved on).
 */
export function activityFields(record: Breadcrumb): Omit<ActivityEntry, 'kind' | 'status'> {
  return {
    id: record.id,
    workspace: record.workspace,
    schema_name: record.schema_name,
    title: record.title,
    tags: record.tags,
    version: record.version,
    created_at: record.created_at,
    created_by: record.created_by,
    updated_at: record.updated_at,
    updated_by: record.updated_by,
    ...(record.causation ? { causation: record.causation } : {}),
  };
}

/** The change-log entry of a delete: what was deleted, when and by whom (history items are kept as they are). */
export function deletionItem(
  record: Breadcrumb,
  deletedAt: string,
  deletedBy: string,
): Record<string, unknown> {
  return {
    ...activityFields({ ...record, updated_at: deletedAt, updated_by: deletedBy }),
    ...keys.deletion(record.workspace, record.id, record.version),
    kind: KIND.deletion,
    ref: record.id,
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
    gsi3pk: gsi.changeLog(record.workspace, changeLogShard(record.id)),
    gsi3sk: gsi.changeSort(deletedAt, record.id, record.version),
  };
}

export function tagItem(record: Breadcrumb, tag: string): Record<string, unknown> {
  return {
    ...keys.tag(record.workspace, record.id, tag),
    kind: KIND.tag,
    ref: record.id,
    gsi1pk: gsi.byTag(record.workspace, tag),
    gsi1sk: gsi.sort(listedAt(record), record.id),
    // Listing by schema and tag reads the tag's entries and skips other schemas by this (one index entry per tag).
    schema_name: record.schema_name,
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
  };
}

/** Maps a head or version item back to the record (ids of version items are restored from `ref`). */
export function toRecord(item: Record<string, unknown>): Breadcrumb {
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) if (!INTERNAL.has(k)) plain[k] = v;
  if (item.kind === KIND.version && typeof item.ref === 'string') plain.id = item.ref;
  if (plain.tags instanceof Set) plain.tags = [...plain.tags];
  return BreadcrumbSchema.parse(plain);
}

/**
 * The tag items a head's change needs (the publisher writes them, before the change is routed): an item for each
 * listed tag the head is not itself listed under, and deletes of the items the previous version had and this one
 * has not. An item the previous version already had, unchanged (same sort key, schema and expiry: a record listed
 * by start keeping a tag), is not written again. A head of the earlier layout had an item for every tag; those it
 * no longer needs go on its first rewrite. A removed head (`newImage` absent) leaves no tag items. Returns undefined
 * for items that are not heads.
 */
export function tagItemChanges(
  newImage: Record<string, unknown> | undefined,
  oldImage: Record<string, unknown> | undefined,
): { put: Record<string, unknown>[]; remove: Key[] } | undefined {
  const next = newImage?.kind === KIND.breadcrumb ? toRecord(newImage) : undefined;
  const before = oldImage?.kind === KIND.breadcrumb ? toRecord(oldImage) : undefined;
  if (!next && !before) return undefined;
  const wanted = next ? tagItemTags(next, inheritedOf(newImage)) : [];
  const had = before ? itemTagsOf(before, oldImage!) : [];
  const unchanged = (item: Record<string, unknown>, tag: string) => {
    if (!before || !had.includes(tag)) return false;
    const old = tagItem(before, tag);
    return (
      old.gsi1sk === item.gsi1sk && old.schema_name === item.schema_name && old.expires_at === item.expires_at
    );
  };
  return {
    put: next
      ? wanted.flatMap((tag) => {
          const item = tagItem(next, tag);
          return unchanged(item, tag) ? [] : [item];
        })
      : [],
    remove: had
      .filter((tag) => !wanted.includes(tag))
      .map((tag) => keys.tag(before!.workspace, before!.id, tag)),
  };
}

/**
 * The tags a stored head has tag items for: of the earlier layout, every tag; of this one, its listed tags but the
 * one its gsi2 entry says it is listed under itself (read from the item, so a head written under another rule of
 * which tag rides on it is still read right).
 */
function itemTagsOf(record: Breadcrumb, item: Record<string, unknown>): string[] {
  if (item.layout !== HEAD_LAYOUT) return record.tags;
  const own = typeof item.gsi2pk === 'string' ? item.gsi2pk : undefined;
  return listedTags(record, inheritedOf(item)).filter((tag) => gsi.byTag(record.workspace, tag) !== own);
}

/**
 * What a deleted breadcrumb's head becomes: its id stays taken (a create with that id, such as an executor's
 * redelivered answer, is a replay, and a new breadcrumb never overwrites the old one's history), and nothing lists
 * or reads it. The change from head to tombstone is the stream record the publisher emits `Breadcrumb Deleted` for.
 */
export function tombstoneItem(
  record: Breadcrumb,
  deletedAt: string,
  deletedBy: string,
): Record<string, unknown> {
  return {
    ...keys.head(record.workspace, record.id),
    kind: KIND.tombstone,
    version: record.version,
    deleted_at: deletedAt,
    deleted_by: deletedBy,
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
  };
}
