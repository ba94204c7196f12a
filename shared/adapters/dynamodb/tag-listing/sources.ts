/**
 * Where a tag's breadcrumbs are listed (table-design.md "Tags"), and how one page of each place is read: heads
 * whose first listed tag it is (gsi2), tag items (gsi1), for `thread:<t>` the thread index and the root, for
 * `run:<id>` the run itself, for a schema's own tag that schema's heads, and for a routing tag the threads of the
 * breadcrumbs listed under it (`inheritedSources`).
 */
import { BREADCRUMB_ID_PATTERN } from '#shared/domain/breadcrumb.ts';
import {
  REQUEST_TAG_PREFIX,
  RUN_TAG_PREFIX,
  SCHEMA_TAGS,
  THREAD_TAG_PREFIX,
} from '#shared/domain/protocol.ts';
import { gsi, KIND, keys, listedAt, toRecord } from '../items.ts';
import type { Item, TableReads } from '../table-reads.ts';

/** A routing tag's listing: breadcrumbs listed under it read for their threads, and threads read at most. */
export const INHERITED_ANCHORS = 100;
export const INHERITED_THREADS = 20;

/** One place a tag's breadcrumbs are listed. */
export interface TagSource {
  /** Its name in the cursor. */
  name: string;
  /** An index's entries, a thread's root read by id, or a breadcrumb read by id (`pk` is the id). */
  kind: 'index' | 'root' | 'self';
  index: 'gsi1' | 'gsi2' | 'gsi3';
  pk: string;
  /** Only entries from this sort key on (a routing tag's inheritors: written after what they inherited it from). */
  since?: string;
  /** Entries are heads that may not carry the tag: keep those that do. */
  filter?: boolean;
}

/** An index entry of a tag listing: its table key id, its sort key, the breadcrumb it lists. */
export interface ListEntry {
  key: string;
  sk: string;
  ref: string;
  schema_name?: string;
  /** The listed breadcrumb's expiry (epoch seconds) where the entry carries it: an expired one is skipped unread. */
  expires_at?: number;
}

/** One page of a source: its entries that carry the tag, where the next page starts, how many entries were read. */
export interface SourcePage {
  entries: ListEntry[];
  next?: Record<string, unknown>;
  scanned: number;
  /** The last entry read (kept or not): where the source stands when every entry of the page was skipped. */
  lastPosition?: [string, string];
}

/** The places every listing of `tag` reads (`inheritedSources` adds a routing tag's threads). */
export function tagSources(workspace: string, tag: string): TagSource[] {
  const sources: TagSource[] = [
    { name: 'h', kind: 'index', index: 'gsi2', pk: gsi.byTag(workspace, tag) },
    { name: 't', kind: 'index', index: 'gsi1', pk: gsi.byTag(workspace, tag) },
  ];
  if (tag.startsWith(THREAD_TAG_PREFIX) && tag.length > THREAD_TAG_PREFIX.length) {
    const thread = tag.slice(THREAD_TAG_PREFIX.length);
    sources.push(
      { name: 'th', kind: 'index', index: 'gsi3', pk: gsi.byThread(workspace, thread), filter: true },
      { name: 'r', kind: 'root', index: 'gsi3', pk: thread },
    );
  }
  // `run:<id>` names the run itself, which is not listed under it (`answeredElsewhere`).
  const run = tag.startsWith(RUN_TAG_PREFIX) ? tag.slice(RUN_TAG_PREFIX.length) : '';
  if (BREADCRUMB_ID_PATTERN.test(run)) sources.push({ name: 'rs', kind: 'self', index: 'gsi3', pk: run });
  const schema = Object.hasOwn(SCHEMA_TAGS, tag) ? SCHEMA_TAGS[tag] : undefined;
  if (schema !== undefined) {
    sources.push({
      name: 's',
      kind: 'index',
      index: 'gsi1',
      pk: gsi.bySchema(workspace, schema),
      filter: true,
    });
  }
  return sources;
}

/**
 * The threads a routing tag's inheritors are in: the breadcrumbs listed under the tag (each the first of a chain
 * that passed the tag on; for `request:<id>` also breadcrumb <id>, whose answers name it), their threads, each
 * from the earliest creation among them (what inherited the tag was written after its cause). At most
 * INHERITED_ANCHORS breadcrumbs (the newest) and INHERITED_THREADS threads (those written to last).
 */
export async function inheritedSources(
  reads: TableReads,
  workspace: string,
  tag: string,
): Promise<TagSource[]> {
  const anchors: string[] = [];
  for (const index of ['gsi2', 'gsi1'] as const) {
    const page = await readSource(
      reads,
      workspace,
      tag,
      { name: index, kind: 'index', index, pk: gsi.byTag(workspace, tag) },
      undefined,
      INHERITED_ANCHORS,
    );
    anchors.push(...page.entries.map((e) => e.ref));
  }
  // `request:<id>`: answers to breadcrumb <id> are found through its thread; `run:<id>`: what the run wrote,
  // through the run's thread.
  for (const prefix of [REQUEST_TAG_PREFIX, RUN_TAG_PREFIX]) {
    const named = tag.startsWith(prefix) ? tag.slice(prefix.length) : '';
    if (BREADCRUMB_ID_PATTERN.test(named)) anchors.unshift(named);
  }
  // Per thread: from the first carrier's creation on; the threads whose carriers were written last come first.
  const threads = new Map<string, { from: string; last: string }>();
  // `request:<t>`: the thread <t> starts holds what names its first request (`answeredElsewhere`), from its start.
  const started = tag.startsWith(REQUEST_TAG_PREFIX) ? tag.slice(REQUEST_TAG_PREFIX.length) : '';
  if (BREADCRUMB_ID_PATTERN.test(started)) threads.set(started, { from: '', last: '\uffff' });
  const read = [...new Set(anchors)].slice(0, INHERITED_ANCHORS);
  for (const head of await reads.batchGet(read.map((ref) => keys.head(workspace, ref)))) {
    if (!head || head.kind !== KIND.breadcrumb) continue;
    const record = toRecord(head);
    const thread = record.causation?.thread ?? record.id;
    const seen = threads.get(thread);
    threads.set(thread, {
      from: seen === undefined || record.created_at < seen.from ? record.created_at : seen.from,
      last: seen === undefined || record.updated_at > seen.last ? record.updated_at : seen.last,
    });
  }
  return [...threads.entries()]
    .sort((a, b) => (a[1].last < b[1].last ? 1 : a[1].last > b[1].last ? -1 : 0))
    .slice(0, INHERITED_THREADS)
    .map(([thread, { from }]) => ({
      name: `th:${thread}`,
      kind: 'index' as const,
      index: 'gsi3' as const,
      pk: gsi.byThread(workspace, thread),
      ...(from !== '' ? { since: from } : {}),
      filter: true,
    }));
}

/** One page of a source, newest first, without entries that do not carry the tag. */
export async function readSource(
  reads: TableReads,
  workspace: string,
  tag: string,
  source: TagSource,
  start: Record<string, unknown> | undefined,
  limit: number,
): Promise<SourcePage> {
  if (source.kind === 'root' || source.kind === 'self') {
    // Read by id, once: a thread's root (no causation, so the thread index does not hold it), or the breadcrumb
    // a tag names as itself (a run's `run:<its id>`).
    if (start !== undefined) return { entries: [], scanned: 0 };
    const head = await reads.getItem(keys.head(workspace, source.pk));
    if (!head || head.kind !== KIND.breadcrumb || (source.kind === 'root' && head.causation))
      return { entries: [], scanned: 1 };
    const record = toRecord(head);
    if (!record.tags.includes(tag)) return { entries: [], scanned: 1 };
    const sk = gsi.sort(listedAt(record), record.id);
    return {
      entries: [
        {
          key: record.id,
          sk,
          ref: record.id,
          schema_name: record.schema_name,
          ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
        },
      ],
      scanned: 1,
    };
  }
  const skName = `${source.index}sk`;
  const page = await reads.query({
    IndexName: source.index,
    KeyConditionExpression: source.since !== undefined ? '#pk = :pk AND #sk >= :since' : '#pk = :pk',
    ExpressionAttributeNames: {
      '#pk': `${source.index}pk`,
      ...(source.since !== undefined ? { '#sk': skName } : {}),
    },
    ExpressionAttributeValues: {
      ':pk': source.pk,
      ...(source.since !== undefined ? { ':since': source.since } : {}),
    },
    ScanIndexForward: false,
    Limit: limit,
    ExclusiveStartKey: start,
  });
  const carries = (item: Item) => {
    if (!source.filter) return true;
    const tags = item.tags instanceof Set ? [...item.tags] : Array.isArray(item.tags) ? item.tags : [];
    return tags.includes(tag);
  };
  const entries = page.items.filter(carries).map((item) => ({
    key: String(item.id),
    sk: String(item[skName]),
    ref: String(item.kind === KIND.tag ? item.ref : item.id),
    ...(typeof item.schema_name === 'string' ? { schema_name: item.schema_name } : {}),
    ...(typeof item.expires_at === 'number' ? { expires_at: item.expires_at } : {}),
  }));
  const last = page.items.at(-1);
  return {
    entries,
    scanned: page.items.length,
    ...(page.next ? { next: page.next } : {}),
    ...(last ? { lastPosition: [String(last.id), String(last[skName])] as [string, string] } : {}),
  };
}
