/**
 * The breadcrumb store in memory: the executor store port (`ExecutorStore`) with the DynamoDB adapter's
 * semantics, for fast unit tests of everything built on the store (pipeline, rule manager, chaos suite) and for
 * benchmarks that leave storage out. One contract test suite (`test/support/store-contract.ts`) runs against
 * both adapters, so a difference is a failing test, not a surprise.
 *
 * Held the same way as in DynamoDB (`shared/adapters/dynamodb/table-design.md`):
 * - a head per (workspace, id), every version kept (history survives a delete, and a deleted id is never
 *   created again: a create under it replays into a 404 as the version-1 item is still there);
 * - creates are idempotent per Idempotency-Key (24 h, same request hash) and per caller-chosen id (a repeat is a
 *   replay of version 1, nothing written);
 * - updates and deletes with `expectedVersion` are If-Match; without it, last writer wins;
 * - listings by schema, tag or both, newest write first (`updated_at`, then id, descending), `limit` live records
 *   per page: expired ones are read past, up to the read bound (`Page.read_bound`), and a cursor while more remain;
 * - expired records (`expires_at`) read as gone at once;
 * - `schema.def.v1` breadcrumbs tagged `defines:<schema>` give that schema's llm_hints defaults to context views.
 *
 * It is not a cache of the table and not thread-safe across processes: each instance is its own store.
 */
import { createHash } from 'node:crypto';
import { monotonicFactory } from 'ulidx';
import {
  type Breadcrumb,
  type ContextView,
  type CreateBreadcrumb,
  canonicalJson,
  isExpired,
  toEpochSeconds,
  type UpdateBreadcrumb,
} from '#shared/domain/breadcrumb.ts';
import { BadRequestError, IdempotencyKeyReuseError, NotFoundError } from '#shared/domain/errors.ts';
import { type LlmHints, mergeHints } from '#shared/domain/llm-hints.ts';
import {
  type Clock,
  type CreateOptions,
  type CreateResult,
  LIST_READ_BOUND,
  type ListQuery,
  type Page,
  systemClock,
  type UpdateOptions,
  type UpsertOptions,
  type UpsertResult,
} from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { upsertVia } from '../../../shared/adapters/store-upsert.ts';
import {
  applyPatch,
  assertExpectedVersion,
  decodeCursorJson,
  definedSchemas,
  encodeCursor,
  firstVersion,
  historyPage,
  liveOrGone,
  refuseUnscopedListing,
  schemaDefHints,
  toContextView,
} from '../../../shared/domain/record-rules.ts';

const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/** DynamoDB's TransactWriteItems limit: head + version + tag entries + schema hints must fit. */

interface IdempotencyEntry {
  createdId: string;
  requestHash: string;
  expiresAt: number;
}

export class InMemoryBreadcrumbStore implements ExecutorStore {
  private readonly heads = new Map<string, Breadcrumb>();
  private readonly versions = new Map<string, Breadcrumb[]>();
  private readonly idempotency = new Map<string, IdempotencyEntry>();
  private readonly hints = new Map<string, LlmHints>();
  private readonly clock: Clock;
  private readonly ulid = monotonicFactory();
  /** Entries a listing reads at most per call (`LIST_READ_BOUND`; smaller in tests of what hitting it does). */
  private readonly readBound: number;

  constructor(options: { clock?: Clock; readBound?: number } = {}) {
    this.clock = options.clock ?? systemClock;
    this.readBound = options.readBound ?? LIST_READ_BOUND;
  }

  async create(workspace: string, input: CreateBreadcrumb, options: CreateOptions): Promise<CreateResult> {
    const now = this.clock.now();
    const id = options.id ?? this.ulid(now.getTime());
    const expiresAt = input.expires_at === undefined ? undefined : toEpochSeconds(input.expires_at);
    const record = firstVersion(workspace, id, input, expiresAt, {
      now,
      principal: options.principal,
      causation: options.causation,
    });
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const requestHash = sha256(canonicalJson({ workspace, input }));
    const key = options.idempotencyKey;
    const entry = key === undefined ? undefined : this.idempotency.get(k(workspace, key));
    if (key !== undefined && entry !== undefined && entry.expiresAt >= nowSeconds) {
      return { breadcrumb: this.replayIdempotent(workspace, key, entry, requestHash), replayed: true };
    }
    if (this.heads.has(k(workspace, id)) || this.versions.has(k(workspace, id))) {
      // A caller-chosen id that was written before: nothing new (DynamoDB: the head or version-1 condition fails).
      return { breadcrumb: await this.getVersion(workspace, id, 1), replayed: true };
    }
    this.commit(record, undefined, key === undefined ? 0 : 1);
    if (key !== undefined) {
      this.idempotency.set(k(workspace, key), {
        createdId: id,
        requestHash,
        expiresAt: nowSeconds + IDEMPOTENCY_TTL_SECONDS,
      });
    }
    return { breadcrumb: record, replayed: false };
  }

  async get(workspace: string, id: string): Promise<Breadcrumb> {
    return this.live(workspace, id);
  }

  async getContextView(workspace: string, id: string): Promise<ContextView> {
    const record = this.live(workspace, id);
    return toContextView(
      record,
      mergeHints(this.hints.get(k(workspace, record.schema_name)), record.llm_hints),
    );
  }

  async contextViews(workspace: string, records: readonly Breadcrumb[]): Promise<ContextView[]> {
    return records.map((r) =>
      toContextView(r, mergeHints(this.hints.get(k(workspace, r.schema_name)), r.llm_hints)),
    );
  }

  async getVersion(workspace: string, id: string, version: number): Promise<Breadcrumb> {
    this.live(workspace, id);
    const found = this.versions.get(k(workspace, id))?.[version - 1];
    if (!found) throw new NotFoundError(`breadcrumb ${id} has no version ${version}`);
    return found;
  }

  async history(
    workspace: string,
    id: string,
    page: { limit: number; cursor?: string },
  ): Promise<Page<Breadcrumb>> {
    const head = this.live(workspace, id);
    const { versions, next_cursor } = historyPage(head.version, page);
    const all = this.versions.get(k(workspace, id)) ?? [];
    const items = versions.map((v) => all[v - 1]).filter((r): r is Breadcrumb => r !== undefined);
    return { items, next_cursor };
  }

  async update(
    workspace: string,
    id: string,
    patch: UpdateBreadcrumb,
    options: UpdateOptions,
  ): Promise<Breadcrumb> {
    const current = this.live(workspace, id);
    assertExpectedVersion(options.expectedVersion, current);
    const record = applyPatch(current, patch, {
      now: this.clock.now(),
      principal: options.principal,
      causation: options.causation,
    });
    this.commit(record, current, 0);
    return record;
  }

  upsert(
    workspace: string,
    id: string,
    input: CreateBreadcrumb,
    options: UpsertOptions,
  ): Promise<UpsertResult> {
    return upsertVia(this, workspace, id, input, options);
  }

  async delete(workspace: string, id: string, options: { expectedVersion?: number } = {}): Promise<void> {
    const current = this.live(workspace, id);
    assertExpectedVersion(options.expectedVersion, current);
    this.heads.delete(k(workspace, id));
    for (const schema of definedSchemas(current)) this.hints.delete(k(workspace, schema));
  }

  async list(query: ListQuery): Promise<Page<Breadcrumb>> {
    const { workspace, schema_name: schema, tag, limit } = query;
    if (schema === undefined && tag === undefined) refuseUnscopedListing();
    const listing = `${workspace}\u0000${schema ?? ''}\u0000${tag ?? ''}`;
    const after = query.cursor === undefined ? undefined : decodeListCursor(query.cursor, listing);
    const entries = [...this.heads.values()]
      .filter(
        (r) =>
          r.workspace === workspace &&
          (schema === undefined || r.schema_name === schema) &&
          (tag === undefined || r.tags.includes(tag)),
      )
      .map((r) => ({ record: r, sort: `${r.updated_at}#${r.id}` }))
      .filter((e) => after === undefined || e.sort < after)
      .sort((a, b) => (a.sort < b.sort ? 1 : a.sort > b.sort ? -1 : 0));
    // As the DynamoDB adapter does: expired heads are read past, counted against the read bound.
    const nowMs = this.clock.now().getTime();
    const items: Breadcrumb[] = [];
    let read = 0;
    for (const entry of entries) {
      if (items.length === limit || read === this.readBound) break;
      read++;
      if (!isExpired(entry.record, nowMs)) items.push(entry.record);
    }
    const last = entries[read - 1];
    const more = read < entries.length && last !== undefined;
    return {
      items,
      next_cursor: more ? encodeCursor({ listing, after: last.sort }) : null,
      ...(more && items.length < limit ? { read_bound: { entries_read: read, bound: this.readBound } } : {}),
    };
  }

  // ---------------------------------------------------------------------------------------------------------

  /** Writes a version: head, history, schema hints. `extraItems`: idempotency rows in the same transaction. */
  private commit(record: Breadcrumb, previous: Breadcrumb | undefined, _extraItems: number): void {
    const defined = definedSchemas(record);
    const undefinedNow = definedSchemas(previous).filter((s) => !defined.includes(s));
    const hints = defined.length > 0 ? schemaDefHints(record) : undefined;
    const key = k(record.workspace, record.id);
    this.heads.set(key, record);
    this.versions.set(key, [...(this.versions.get(key) ?? []), record]);
    for (const schema of defined) {
      if (hints) this.hints.set(k(record.workspace, schema), hints);
      else this.hints.delete(k(record.workspace, schema));
    }
    for (const schema of undefinedNow) this.hints.delete(k(record.workspace, schema));
  }

  private live(workspace: string, id: string): Breadcrumb {
    return liveOrGone(this.heads.get(k(workspace, id)), workspace, id, this.clock.now().getTime());
  }

  private replayIdempotent(
    workspace: string,
    key: string,
    entry: IdempotencyEntry,
    requestHash: string,
  ): Breadcrumb {
    if (entry.requestHash !== requestHash) {
      throw new IdempotencyKeyReuseError(
        `Idempotency-Key "${key}" was already used for a different request in workspace ${workspace}`,
      );
    }
    const first = this.versions.get(k(workspace, entry.createdId))?.[0];
    if (!first)
      throw new NotFoundError(`the breadcrumb created with Idempotency-Key "${key}" no longer exists`);
    const head = this.heads.get(k(workspace, entry.createdId));
    return head && head.version === 1 ? head : first;
  }
}

function k(workspace: string, id: string): string {
  return `${workspace}\u0000${id}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function decodeListCursor(cursor: string, listing: string): string {
  const value = decodeCursorJson(cursor) as { listing?: unknown; after?: unknown } | null;
  if (
    value === null ||
    typeof value !== 'object' ||
    value.listing !== listing ||
    typeof value.after !== 'string'
  ) {
    throw new BadRequestError('cursor does not belong to this listing', [
      { path: 'cursor', message: 'use the next_cursor of the same schema_name/tag listing' },
    ]);
  }
  return value.after;
}
