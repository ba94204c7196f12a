/**
 * The change stream as long-polling server-sent events: one request waits (up to `waitMs`) for changes after its
 * cursor, answers them as SSE frames, each with its position as `id:`, and ends; EventSource (or `crumbs tail`)
 * reconnects at once with `Last-Event-ID` and the next request continues exactly there. Long polling, not one open
 * response: API Gateway HTTP APIs buffer Lambda responses and end an integration after 30 s, and a Function URL
 * that could stream would sit beside the API with its own authentication.
 *
 * The rule: no gaps and no duplicates. Positions are the change log's sort keys `<updated_at>#<id>#<version>`. A
 * write becomes visible a moment after the time it carries (the transaction commits after the timestamp is taken,
 * the index is eventually consistent), so a request hands out only changes older than `settleMs`: a write that
 * commits later cannot land behind a position already handed out. Every answer ends with an `id:`-only frame
 * carrying the position it read up to, so a reconnect resumes there even when nothing matched the filters.
 */

import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { BadRequestError } from '#shared/domain/errors.ts';
import { outcomeOf } from '#shared/domain/outcome.ts';
import type { ChangeCursor, ChangeEntry, ChangeLog } from '#shared/ports/activity.ts';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import { changeMatches, MAX_CHANGES_PER_ANSWER } from './feed-events.ts';

export { MAX_CHANGES_PER_ANSWER };
export const MAX_BACKLOG = 100;

export interface ChangeFilters {
  schema_name?: string[];
  tag?: string;
  thread?: string;
  writer?: string;
}

export interface ChangeStreamOptions {
  workspace: string;
  /** From Last-Event-ID; absent: from now (or the backlog). */
  cursor?: ChangeCursor;
  /** Without a cursor: hand out the newest `backlog` changes first. */
  backlog?: number;
  filters: ChangeFilters;
  /**
   * How long to wait for a first change. A waiting request holds one API function instance (billed for the wait:
   * up to 20 s at 512 MB, about 43,000 GB-s a day per open dashboard tab); clients that can live with seconds of
   * delay ask `?wait=0` and poll on the `retry:` hint instead, which costs only requests.
   */
  waitMs: number;
  /** Only changes older than this are handed out (see the header). */
  settleMs: number;
  /** How often a waiting request reads the change log. */
  pollMs: number;
  /** Full records at the changed version (one BatchGet per answer); otherwise the summary only. */
  full?: (workspace: string, entries: readonly ChangeEntry[]) => Promise<Map<string, Breadcrumb>>;
  clock?: Clock;
  /** Waits between polls (a benchmark's fake clock moves on instead). Default: a timer, cut short by `signal`. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
}

export interface ChangeEvent {
  type: 'created' | 'updated' | 'deleted';
  id: string;
  version: number;
  schema_name: string;
  title: string;
  tags: string[];
  created_by: string;
  updated_by: string;
  updated_at: string;
  causation: ChangeEntry['causation'] | null;
  status: string | null;
  outcome: ReturnType<typeof outcomeOf>;
  record?: Breadcrumb;
}

export interface ChangeBatch {
  events: { cursor: ChangeCursor; event: ChangeEvent }[];
  /** Where the next request continues. */
  cursor: ChangeCursor;
}

export async function readChanges(log: ChangeLog, options: ChangeStreamOptions): Promise<ChangeBatch> {
  const clock = options.clock ?? systemClock;
  const settled = () => log.cursorAt(new Date(clock.now().getTime() - options.settleMs));
  const keep = matcher(options.filters);
  const deadline = clock.now().getTime() + options.waitMs;

  let cursor = options.cursor;
  if (cursor === undefined) {
    const until = settled();
    if ((options.backlog ?? 0) > 0) {
      const backlog = await log.latest(options.workspace, until, options.backlog ?? 0);
      const events = backlog.filter(keep);
      if (events.length > 0) return finish(options, events, until);
    }
    cursor = until;
  }
  for (;;) {
    const until = settled();
    const read = await log.read(options.workspace, cursor, until, MAX_CHANGES_PER_ANSWER);
    // A full page: the caller continues after its last entry at once; otherwise everything up to `until` is read.
    const reached = read.length === MAX_CHANGES_PER_ANSWER ? read[read.length - 1]!.cursor : until;
    if (reached > cursor) cursor = reached;
    const events = read.filter(keep);
    if (events.length > 0 || clock.now().getTime() + options.pollMs > deadline || options.signal?.aborted) {
      return finish(options, events, cursor);
    }
    await (options.sleep ?? sleep)(options.pollMs, options.signal);
  }
}

async function finish(
  options: ChangeStreamOptions,
  entries: ChangeEntry[],
  cursor: ChangeCursor,
): Promise<ChangeBatch> {
  const records =
    options.full && entries.length > 0 ? await options.full(options.workspace, entries) : undefined;
  return {
    cursor,
    events: entries.map((e) => ({
      cursor: e.cursor,
      event: changeEventOf(e, e.kind === 'deletion' ? undefined : records?.get(`${e.id}@${e.version}`)),
    })),
  };
}

/** The summary of a change as `/changes` and the change channel hand it out; `record` only when asked for. */
export function changeEventOf(e: ChangeEntry, record?: Breadcrumb): ChangeEvent {
  return {
    type: e.kind === 'deletion' ? 'deleted' : e.version === 1 ? 'created' : 'updated',
    id: e.id,
    version: e.version,
    schema_name: e.schema_name,
    title: e.title,
    tags: e.tags,
    created_by: e.created_by,
    updated_by: e.updated_by,
    updated_at: e.updated_at,
    causation: e.causation ?? null,
    status: e.status ?? null,
    outcome: outcomeOf(e),
    ...(record ? { record } : {}),
  };
}

function matcher(filters: ChangeFilters): (e: ChangeEntry) => boolean {
  return (e) => changeMatches(filters, e);
}

/** The answer as SSE: a retry hint, one frame per change, and the position read up to. */
export function toEventStream(
  batch: ChangeBatch,
  encode: (c: ChangeCursor) => string,
  retryMs: number,
): string {
  const frames = [`retry: ${retryMs}\n\n`];
  for (const { cursor, event } of batch.events) {
    frames.push(`id: ${encode(cursor)}\ndata: ${JSON.stringify(event)}\n\n`);
  }
  const last = batch.events[batch.events.length - 1]?.cursor;
  if (last !== batch.cursor) frames.push(`id: ${encode(batch.cursor)}\n\n`);
  return frames.join('');
}

/** Cursors travel base64url-encoded: opaque to clients, and safe in an SSE `id:` line and a header. */
export function encodeCursor(cursor: ChangeCursor): string {
  return Buffer.from(cursor, 'utf8').toString('base64url');
}

export function decodeCursor(log: ChangeLog, text: string): ChangeCursor {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(text)) {
    throw new BadRequestError('Last-Event-ID is not a position in the change stream', [
      { path: 'Last-Event-ID', message: 'expected the id of an event this stream sent' },
    ]);
  }
  return log.checkCursor(Buffer.from(text, 'base64url').toString('utf8'));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
