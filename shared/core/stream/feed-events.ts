/**
 * What a workspace's change channel (`/changes/<ws>`, `channel.ts`) carries: the summaries `GET …/changes` serves
 * (`ChangeEvent`: who wrote what, when, its tags, causation and short status — never a context, so nothing that
 * `llm_hints` hide), each with its position in the change log (`cursor`, the SSE `id:` of `/changes`, so a client
 * continues there with `Last-Event-ID`). Several changes share one event: AppSync Events meters an event in 5 KB
 * increments, in and again out to each subscriber, so changes are packed up to that size, in stream order.
 *
 *   {"type":"changes","changes":[{"cursor":"…","event":{"type":"created","id":"…",…}}, …]}
 *
 * No imports but types: the dashboard bundles this module (the filter is the one `/changes` applies, so a view
 * following the channel shows what its long poll would).
 */
import type { ChangeEvent, ChangeFilters } from './changes.ts';

/** One change as the channel carries it. */
export interface FeedChange {
  /** The change's position (`encodeCursor`), as `/changes` names it in `id:`. */
  readonly cursor: string;
  readonly event: ChangeEvent;
}

/** The most changes one answer of `GET …/changes` holds: a full answer means more follow at once. */
export const MAX_CHANGES_PER_ANSWER = 200;

/**
 * What orders positions (`cursor`s as `/changes` hands them out): a cursor is the base64url text of the change
 * log's sort key (`<updated_at>#<id>#<version>`, or `<time>~` for "everything up to then"), and sort keys order
 * changes as strings. A follower drops a pushed change at or before the position it has read `/changes` up to.
 */
export function positionKey(cursor: string): string {
  const base64 = cursor.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, '='));
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

/** The size an AppSync Events operation is metered in: an event up to this size costs one operation. */
export const FEED_EVENT_TARGET_BYTES = 5 * 1024;

const FIXED = '{"type":"changes","changes":[]}';

function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Packs changes, in order, into channel events of at most `targetBytes` each (one change larger than that goes
 * alone: a summary is bounded by the tag and title limits, far below an event's 240 KB); each with its count.
 */
export function feedEvents(
  changes: readonly FeedChange[],
  targetBytes = FEED_EVENT_TARGET_BYTES,
): { text: string; changes: number }[] {
  const events: { text: string; changes: number }[] = [];
  let parts: string[] = [];
  let size = utf8Bytes(FIXED);
  const flush = () => {
    if (parts.length > 0) {
      events.push({ text: `{"type":"changes","changes":[${parts.join(',')}]}`, changes: parts.length });
    }
    parts = [];
    size = utf8Bytes(FIXED);
  };
  for (const change of changes) {
    const text = JSON.stringify({ cursor: change.cursor, event: change.event });
    const bytes = utf8Bytes(text);
    if (parts.length > 0 && size + 1 + bytes > targetBytes) flush();
    size += (parts.length > 0 ? 1 : 0) + bytes;
    parts.push(text);
  }
  flush();
  return events;
}

/** The changes a channel event holds; undefined when it is not a change event (a subscriber skips it). */
export function parseFeedEvent(text: string): FeedChange[] | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value) || value.type !== 'changes' || !Array.isArray(value.changes)) return undefined;
  const changes: FeedChange[] = [];
  for (const item of value.changes) {
    if (!isObject(item) || typeof item.cursor !== 'string' || !isChangeEvent(item.event)) return undefined;
    changes.push({ cursor: item.cursor, event: item.event });
  }
  return changes;
}

/** What identifies a change: a write and the delete of the same version are two changes. */
export function changeKey(change: FeedChange): string {
  return `${change.event.type === 'deleted' ? 'd' : 'w'}:${change.cursor}`;
}

/** Whether a change passes `/changes`' filters (`schema_name` any of, `tag`, `thread`, `writer`). */
export function changeMatches(
  filters: ChangeFilters,
  e: Pick<ChangeEvent, 'id' | 'schema_name' | 'tags' | 'updated_by'> & {
    readonly causation?: { readonly thread: string } | null | undefined;
  },
): boolean {
  return (
    (filters.schema_name === undefined || filters.schema_name.includes(e.schema_name)) &&
    (filters.tag === undefined || e.tags.includes(filters.tag)) &&
    (filters.writer === undefined || e.updated_by === filters.writer) &&
    (filters.thread === undefined || e.id === filters.thread || e.causation?.thread === filters.thread)
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isChangeEvent(value: unknown): value is ChangeEvent {
  return (
    isObject(value) &&
    (value.type === 'created' || value.type === 'updated' || value.type === 'deleted') &&
    typeof value.id === 'string' &&
    typeof value.version === 'number' &&
    typeof value.schema_name === 'string' &&
    typeof value.title === 'string' &&
    Array.isArray(value.tags) &&
    value.tags.every((t) => typeof t === 'string') &&
    typeof value.updated_by === 'string' &&
    typeof value.updated_at === 'string'
  );
}
