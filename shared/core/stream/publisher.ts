/**
 * The publisher core: a DynamoDB Streams batch in, change events out (DESIGN.md "Change event").
 *
 * - A head item written by crumbs (fresh `write_id`) → `Breadcrumb Created` (version 1) or `Breadcrumb Updated`.
 * - A deleted head (turned into a tombstone, or removed by TTL) → `Breadcrumb Deleted`, from the old image.
 * - A plain put (or a console edit of an adopted breadcrumb) → adopted through the store; that write produces the
 *   event on its own stream record. Invalid plain puts are annotated with `ingest_errors`; no event.
 * - A head's change also writes its tag items (all its listed tags but the first, which its head carries:
 *   `tagItemChanges`) before the change is routed, so what the event triggers can list it by any tag.
 * - History, tag, idempotency, hints and claim items → nothing.
 *
 * Events over a breadth budget (`breadth-budget.ts`) are shed; the rest go to the buses of the pool that hold rules
 * of their workspace (`bus-placement.ts`; the first bus always), in PutEvents calls of up to 10 entries and 1 MB,
 * refused entries retried with backoff. The rule: nothing after a failure is lost. A record whose event could not
 * be put (or whose adoption failed) is reported as the first batch item failure, so Lambda retries from there
 * (stream order is kept per shard).
 *
 * Usage totals: the model usage the batch's new writes record is added to the workspace's counters last, once per
 * counter per batch, for the records before any failure (`usage-totals.ts`; exactly once under redelivery).
 *
 * A workspace sealed by its deletion (`seals`) is passed over: its records route nothing, write no tag items,
 * counters or usage (the table would refuse them), and a plain put into it is removed, not adopted — the deletion's
 * sweep deletes its heads, and none of that reaches an executor.
 *
 * Live views: each change's summary (the `/changes` item) also goes to its workspace's change channel
 * (`change-feed.ts`), started before routing and awaited last; it never fails the batch or holds routing back. A
 * batch Lambda retries publishes its changes again (subscribers drop what they have seen, by position).
 */
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import { changeEntryOfStreamImages } from '#shared/adapters/dynamodb/activity-index.ts';
import { tagItemChanges, toRecord, unmarshallImage } from '#shared/adapters/dynamodb/items.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { changeEntry, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import type { BusEntry, EventBus } from '#shared/ports/event-bus.ts';
import type { Log } from '#shared/ports/log.ts';
import type { OpenSpan, Tracing } from '#shared/ports/tracing.ts';
import type { UsageTotals } from '#shared/ports/usage-totals.ts';
import type { SealedWorkspaces } from '#shared/ports/workspace-deletion.ts';
import type { BusRoutes } from '../../routing/bus-placement.ts';
import type { BreadthBudget } from './breadth-budget.ts';
import type { ChangeFeed, FeedOutcome, WorkspaceChange } from './change-feed.ts';
import { changeEventOf, encodeCursor } from './changes.ts';
import { classifyPlainPut, type PlainPut } from './plain-puts.ts';
import { recordUsage } from './usage-totals.ts';

type Item = Record<string, unknown>;

export interface PlainPutAdopter {
  /** `deletedVersion`: the last version of a deleted breadcrumb the put reuses the id of (numbering goes on). */
  adopt(
    seen: Item,
    input: PlainPut,
    previous: Breadcrumb | undefined,
    deletedVersion?: number,
  ): Promise<Breadcrumb | undefined>;
  rejectPlainPut(
    seen: Item,
    errors: readonly { path: string; message: string }[],
    hash: string,
  ): Promise<void>;
  /** Removes a plain put that cannot be adopted at all (its workspace is deleted), unless it changed since. */
  discardPlainPut(seen: Item): Promise<void>;
}

/** Writes the tag items heads' changes need (`tagItemChanges`); the table's adapter. */
export interface TagItemWriter {
  writeTagItems(changes: readonly TagItemChange[]): Promise<number>;
}
export type TagItemChange = NonNullable<ReturnType<typeof tagItemChanges>>;

export interface PublisherDependencies {
  bus: EventBus;
  /** Keeps heads' further tags listed; absent: no tag items are written (tests of routing alone). */
  tagItems?: TagItemWriter | undefined;
  /** Which buses each workspace's events go to; absent: every event to the bus adapter's own bus. */
  routes?: BusRoutes | undefined;
  adopter: PlainPutAdopter;
  /** The breadth budget (thread budget, workspace event rate); absent: everything is routed. */
  budget?: BreadthBudget | undefined;
  /** Keeps the model usage totals; absent: usage records are not summed. */
  usage?: UsageTotals | undefined;
  /** Which workspaces a deletion has sealed; absent: none. */
  seals?: SealedWorkspaces | undefined;
  /** Sends each change's summary to its workspace's change channel; absent: live views long-poll `/changes`. */
  changeFeed?: ChangeFeed | undefined;
  log?: Log;
  /**
   * A span per routed write, continuing the `traceparent` its item carries (a new trace without one: a plain put),
   * whose own context the change event carries on (`ChangeDetail.traceparent`). Absent: no spans.
   */
  tracing?: Tracing | undefined;
  /** Attempts for entries the bus refuses (throttling, internal errors). */
  putAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface PublishOutcome extends DynamoDBBatchResponse {
  published: number;
  /** Events not routed because their thread or workspace is over its breadth budget. */
  shed: number;
  adopted: number;
  rejected: number;
  /** What went to the change channels (absent without a feed or changes). */
  feed?: FeedOutcome;
}

export async function publishStreamBatch(
  records: readonly DynamoDBRecord[],
  deps: PublisherDependencies,
): Promise<PublishOutcome> {
  const pending: { entry: BusEntry; sequence: string }[] = [];
  const tagChanges: { change: TagItemChange; sequence: string }[] = [];
  const writes: { record: Breadcrumb; sequence: string }[] = [];
  const feed: WorkspaceChange[] = [];
  let adopted = 0;
  let rejected = 0;
  let firstFailure: string | undefined;
  const spans: { span: OpenSpan; sequence: string }[] = [];

  for (const record of records) {
    const sequence = record.dynamodb?.SequenceNumber ?? '';
    const newImage = image(record.dynamodb?.NewImage);
    const oldImage = image(record.dynamodb?.OldImage);
    try {
      const workspace = newImage?.workspace ?? oldImage?.workspace;
      if (deps.seals && typeof workspace === 'string' && (await deps.seals.isSealed(workspace))) {
        if (newImage !== undefined && !('kind' in newImage)) await deps.adopter.discardPlainPut(newImage);
        continue;
      }
      // A head removed (TTL) or turned into a tombstone (a delete): its tag items go, and Deleted is published.
      if (record.eventName === 'REMOVE' || newImage?.kind === 'tombstone') {
        if (oldImage?.kind === 'breadcrumb') {
          const change = tagItemChanges(undefined, oldImage);
          if (change) tagChanges.push({ change, sequence });
          pending.push({ entry: changeEntry(DETAIL_TYPES.deleted, toRecord(oldImage)), sequence });
          if (deps.changeFeed) feedChange(feed, newImage, oldImage, false);
        }
        continue;
      }
      if (!newImage) continue;
      if (newImage.kind === 'breadcrumb' && newImage.write_id !== oldImage?.write_id) {
        if (deps.changeFeed) feedChange(feed, newImage, oldImage, true);
        const change = tagItemChanges(newImage, oldImage);
        if (change) tagChanges.push({ change, sequence });
        const current = toRecord(newImage);
        const type = current.version === 1 ? DETAIL_TYPES.created : DETAIL_TYPES.updated;
        const entry = changeEntry(type, current);
        if (deps.tracing) {
          const span = publishSpan(deps.tracing, current, newImage.traceparent);
          spans.push({ span, sequence });
          if (span.traceparent !== undefined) entry.detail.traceparent = span.traceparent;
        }
        pending.push({ entry, sequence });
        writes.push({ record: current, sequence });
        continue;
      }
      const plain = classifyPlainPut(newImage, oldImage);
      if (plain.kind === 'adopt') {
        const previous = oldImage?.kind === 'breadcrumb' ? toRecord(oldImage) : undefined;
        const deleted = oldImage?.kind === 'tombstone' ? Number(oldImage.version) : undefined;
        const result = await deps.adopter.adopt(newImage, plain.input, previous, deleted);
        if (result) {
          adopted++;
          deps.log?.info('adopted a plain put', {
            breadcrumbId: result.id,
            workspace: result.workspace,
            version: result.version,
          });
        }
      } else if (plain.kind === 'reject') {
        rejected++;
        deps.log?.warn('rejected a plain put', {
          id: newImage.id,
          workspace: newImage.workspace,
          errors: plain.errors,
        });
        await deps.adopter.rejectPlainPut(newImage, plain.errors, plain.hash);
      }
    } catch (error) {
      deps.log?.warn('stream record failed; it will be retried', {
        sequence,
        error: (error as Error).message,
      });
      firstFailure = sequence;
      break;
    }
  }

  // Live views hear of the changes while they are routed; awaited last (it never rejects).
  const fed = deps.changeFeed && feed.length > 0 ? deps.changeFeed.publish(feed) : undefined;

  // The tag items a change needs are written before it is routed, so an executor it triggers lists it by any of
  // its tags. If they cannot be written, nothing from the first change that needed them on is routed (retried).
  const before = (p: { sequence: string }) =>
    firstFailure === undefined || compareSequence(p.sequence, firstFailure) < 0;
  const tagWrites = tagChanges.filter(before);
  if (deps.tagItems && tagWrites.some((t) => t.change.put.length + t.change.remove.length > 0)) {
    try {
      await deps.tagItems.writeTagItems(tagWrites.map((t) => t.change));
    } catch (error) {
      deps.log?.warn('could not write tag items; the records will be retried', {
        error: (error as Error).message,
      });
      firstFailure = tagWrites[0]!.sequence;
    }
  }
  const toRoute = pending.filter(before);
  // Counted once per batch, before routing; shedding never fails the batch (a shard mixes workspaces).
  const budgeted = deps.budget ? await deps.budget.admit(toRoute) : { admitted: toRoute, shed: 0 };
  const routed = await routeAll(budgeted.admitted, deps);
  if (routed.failedSequence !== undefined) firstFailure = routed.failedSequence;
  const published = await putAll(routed.entries, deps);
  let failedAt = [published.failedSequence, firstFailure]
    .filter((s): s is string => s !== undefined)
    .sort(compareSequence)[0];
  if (deps.usage) {
    const counted = writes.filter((w) => failedAt === undefined || compareSequence(w.sequence, failedAt) < 0);
    const usageFailed = await recordUsage(counted, deps.usage, deps.log);
    if (usageFailed !== undefined) failedAt = usageFailed;
  }
  const feedOutcome = await fed;
  for (const { span, sequence } of spans) {
    const failed = failedAt !== undefined && compareSequence(sequence, failedAt) >= 0;
    span.end(failed ? new Error('not published in this batch; the stream hands it over again') : undefined);
  }
  return {
    batchItemFailures: failedAt === undefined ? [] : [{ itemIdentifier: failedAt }],
    published: published.count,
    shed: budgeted.shed,
    adopted,
    rejected,
    ...(feedOutcome ? { feed: feedOutcome } : {}),
  };
}

/** The publisher's span for one write: the write's child, or a new trace's root (a plain put, tracing off then). */
function publishSpan(tracing: Tracing, record: Breadcrumb, traceparent: unknown): OpenSpan {
  return tracing.start(`publish ${record.schema_name}`, {
    kind: 'consumer',
    ...(typeof traceparent === 'string' ? { parent: traceparent } : {}),
    attributes: {
      'messaging.system': 'aws_dynamodb_streams',
      'messaging.operation.type': 'process',
      'crumbs.workspace': record.workspace,
      'crumbs.breadcrumb_id': record.id,
      'crumbs.breadcrumb_version': record.version,
      'crumbs.schema_name': record.schema_name,
      'crumbs.thread': record.causation?.thread ?? record.id,
      ...(record.causation ? { 'crumbs.caused_by': record.causation.caused_by } : {}),
    },
  });
}

/** Adds the change a stream record stands for (a write or a delete; nothing for a TTL removal) to `feed`. */
function feedChange(
  feed: WorkspaceChange[],
  newImage: Item | undefined,
  oldImage: Item | undefined,
  written: boolean,
) {
  const entry = changeEntryOfStreamImages(newImage, oldImage, written);
  if (entry) {
    feed.push({
      workspace: entry.workspace,
      change: { cursor: encodeCursor(entry.cursor), event: changeEventOf(entry) },
    });
  }
}

/**
 * One entry per bus the event's workspace is routed to, in stream order. A workspace whose routes cannot be read
 * fails its first record (and so everything after it, which Lambda hands over again).
 */
async function routeAll(
  pending: { entry: BusEntry; sequence: string }[],
  deps: PublisherDependencies,
): Promise<{ entries: { entry: BusEntry; sequence: string }[]; failedSequence?: string }> {
  const routes = deps.routes;
  if (!routes) return { entries: pending };
  const workspaceOf = (entry: BusEntry) => String(entry.detail.workspace);
  const workspaces = [...new Set(pending.map((p) => workspaceOf(p.entry)))];
  const resolved = new Map(
    await Promise.all(
      workspaces.map(async (ws) => {
        try {
          return [ws, await routes.busesFor(ws)] as const;
        } catch (error) {
          deps.log?.warn('could not read the bus placement; the record will be retried', {
            workspace: ws,
            error: (error as Error).message,
          });
          return [ws, undefined] as const;
        }
      }),
    ),
  );
  const entries: { entry: BusEntry; sequence: string }[] = [];
  for (const item of pending) {
    const buses = resolved.get(workspaceOf(item.entry));
    if (buses === undefined) return { entries, failedSequence: item.sequence };
    for (const bus of buses) entries.push({ entry: { ...item.entry, bus }, sequence: item.sequence });
  }
  return { entries };
}

/**
 * Puts entries in requests of up to 10 (and 1 MB), retrying refused ones; returns the earliest sequence that
 * could not be put.
 */
async function putAll(
  pending: { entry: BusEntry; sequence: string }[],
  deps: PublisherDependencies,
): Promise<{ count: number; failedSequence?: string }> {
  const attempts = deps.putAttempts ?? 5;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let count = 0;
  let failedSequence: string | undefined;
  for (let chunk of putEventsRequests(pending)) {
    for (let attempt = 1; chunk.length > 0; attempt++) {
      let refused: typeof chunk;
      try {
        const { results } = await deps.bus.put(chunk.map((c) => c.entry));
        refused = chunk.filter((_, j) => results[j]?.error !== undefined);
        count += chunk.length - refused.length;
        if (refused.length > 0)
          deps.log?.warn('the bus refused entries', {
            errors: results.filter((r) => r.error).map((r) => r.error),
          });
      } catch (error) {
        deps.log?.warn('PutEvents failed', { error: (error as Error).message });
        refused = chunk;
      }
      chunk = refused;
      if (chunk.length > 0) {
        if (attempt >= attempts) {
          failedSequence = [failedSequence, ...chunk.map((c) => c.sequence)]
            .filter((s): s is string => s !== undefined)
            .sort(compareSequence)[0];
          break;
        }
        await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
  }
  return { count, ...(failedSequence !== undefined ? { failedSequence } : {}) };
}

/**
 * PutEvents takes at most 10 entries and 1 MB of them per request (AWS's "PutEvents event entry size"; 256 KB until
 * January 2026). Events stay far smaller: a context over 48 KB, or spilled to a blob, is left out of its event.
 */
const MAX_PUT_EVENTS_ENTRIES = 10;
const MAX_PUT_EVENTS_BYTES = 1024 * 1024;

function entryBytes(entry: BusEntry): number {
  const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
  return (
    (entry.time ? 14 : 0) +
    bytes(entry.source) +
    bytes(entry.detailType) +
    bytes(JSON.stringify(entry.detail)) +
    (entry.resources ?? []).reduce((sum, r) => sum + bytes(r), 0)
  );
}

/** Splits entries, in order, into requests within PutEvents' count and size limits. */
function putEventsRequests<T extends { entry: BusEntry }>(pending: readonly T[]): T[][] {
  const requests: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of pending) {
    const bytes = entryBytes(item.entry);
    const full = current.length >= MAX_PUT_EVENTS_ENTRIES || size + bytes > MAX_PUT_EVENTS_BYTES;
    if (current.length > 0 && full) {
      requests.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += bytes;
  }
  if (current.length > 0) requests.push(current);
  return requests;
}

function image(raw: unknown): Item | undefined {
  return raw ? unmarshallImage(raw as Record<string, unknown>) : undefined;
}

/** Stream sequence numbers are decimal strings of varying length. */
function compareSequence(a: string, b: string): number {
  return a.length === b.length ? a.localeCompare(b) : a.length - b.length;
}
