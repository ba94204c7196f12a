/**
 * The breadcrumb store port: versioned records scoped by workspace, with history, tag/schema listings (newest
 * first), If-Match updates, idempotent creates and create-or-replace (`upsert`). Adapters: DynamoDB
 * (`shared/adapters/dynamodb/`) and in memory (`test/support/memory/`, for tests), held to one contract test suite
 * (`test/support/store-contract.ts`).
 */
import type {
  Breadcrumb,
  ContextView,
  CreateBreadcrumb,
  UpdateBreadcrumb,
} from '#shared/domain/breadcrumb.ts';
import type { Causation } from '#shared/domain/change-event.ts';

export interface Page<T> {
  items: T[];
  /** Opaque; pass back as `cursor` for the next page. `null` on the last page. */
  next_cursor: string | null;
  /**
   * Listings only: present when the listing stopped at its read bound (`LIST_READ_BOUND` index entries read in
   * this call) before it filled the page. The page is then short (even empty) while `next_cursor` goes on from where
   * it stopped. Without it, a listing's page is short only at the listing's end.
   */
  read_bound?: ReadBoundHit;
}

/** What a listing that stopped at its read bound says: how many index entries it read, and the bound. */
export interface ReadBoundHit {
  entries_read: number;
  bound: number;
}

/**
 * Index entries a listing reads at most in one call. A listing skips entries it cannot hand out (expired heads
 * that TTL has not removed yet, entries of another schema in a schema × tag listing, a head listed twice) and goes
 * on reading until the page is full, the listing ends, or this many entries were read; in the last case it answers
 * a short page with `read_bound` and a cursor. 500 entries are at most a few hundred KB of index reads.
 */
export const LIST_READ_BOUND = 500;

export interface CreateOptions {
  /** Who writes: `user:<id>`, `agent:<id>`, `tool:<name>`, `system:<name>`. */
  principal: string;
  /** A repeated create with the same key (per workspace) returns the original breadcrumb. */
  idempotencyKey?: string;
  /** Caller-chosen id (executors derive response ids from the trigger); a ULID otherwise. */
  id?: string;
  causation?: Causation;
  /**
   * The tags of the breadcrumb that caused this write (an executor's trigger). A correlation tag (`run:`, `step:`,
   * `reply-to:`, `request:`) this breadcrumb shares with its cause needs no listing entry of its own: listing by
   * it finds this one through the cause's thread (table-design.md "Tags").
   */
  causeTags?: readonly string[];
}

export interface CreateResult {
  breadcrumb: Breadcrumb;
  /** True when an Idempotency-Key or a caller-chosen id matched an earlier create: nothing was written. */
  replayed: boolean;
}

export interface UpdateOptions {
  principal: string;
  /** If-Match: fail with VersionConflictError unless the stored version is this one. */
  expectedVersion?: number;
  /**
   * The record as the caller last read or wrote it. With `expectedVersion` equal to its version (and `causeTags`
   * given), a store may build the write from it instead of reading the head first: the write stays conditional on
   * that version, and a version names one content, so nothing is written over a change it did not see.
   */
  current?: Breadcrumb;
  causation?: Causation;
  /**
   * The tags of the breadcrumb that caused this write (an executor's trigger). A correlation tag (`run:`, `step:`,
   * `reply-to:`, `request:`) this breadcrumb shares with its cause needs no listing entry of its own: listing by
   * it finds this one through the cause's thread (table-design.md "Tags").
   */
  causeTags?: readonly string[];
}

export interface UpsertOptions {
  principal: string;
  /** Causation of the version written (executor outputs). */
  causation?: Causation;
  /**
   * The tags of the breadcrumb that caused this write (an executor's trigger). A correlation tag (`run:`, `step:`,
   * `reply-to:`, `request:`) this breadcrumb shares with its cause needs no listing entry of its own: listing by
   * it finds this one through the cause's thread (table-design.md "Tags").
   */
  causeTags?: readonly string[];
  /** If-Match: replace only this version; VersionConflictError otherwise (and when the id does not exist). */
  expectedVersion?: number;
  /** If-None-Match: *: only create; an existing breadcrumb is a VersionConflictError. */
  createOnly?: boolean;
}

export interface UpsertResult {
  breadcrumb: Breadcrumb;
  /** `unchanged`: what was asked for is what is stored; nothing was written (no version, no change event). */
  outcome: 'created' | 'updated' | 'unchanged';
}

export interface ListQuery {
  workspace: string;
  schema_name?: string;
  tag?: string;
  limit: number;
  cursor?: string;
}

/** The breadcrumb store: every read and write is scoped to one workspace. */
export interface BreadcrumbStore {
  create(workspace: string, input: CreateBreadcrumb, options: CreateOptions): Promise<CreateResult>;
  get(workspace: string, id: string): Promise<Breadcrumb>;
  getContextView(workspace: string, id: string): Promise<ContextView>;
  /** Context views of records already read (a listing), with one schema-defaults lookup per schema. */
  contextViews(workspace: string, records: readonly Breadcrumb[]): Promise<ContextView[]>;
  getVersion(workspace: string, id: string, version: number): Promise<Breadcrumb>;
  history(workspace: string, id: string, page: { limit: number; cursor?: string }): Promise<Page<Breadcrumb>>;
  update(workspace: string, id: string, patch: UpdateBreadcrumb, options: UpdateOptions): Promise<Breadcrumb>;
  /**
   * Create-or-replace under a caller-chosen id: created when missing; replaced (title, tags, context, llm_hints,
   * expires_at) when different; nothing written when equal. `schema_name` cannot change. Without
   * `expectedVersion`, a concurrent writer is waited out (read again, compare again); with it, it is a conflict.
   */
  upsert(
    workspace: string,
    id: string,
    input: CreateBreadcrumb,
    options: UpsertOptions,
  ): Promise<UpsertResult>;
  /** `principal` is recorded as who deleted it in the change log. */
  delete(
    workspace: string,
    id: string,
    options?: { expectedVersion?: number; principal?: string },
  ): Promise<void>;
  /**
   * Newest first, by schema, tag or both. A page holds `limit` live breadcrumbs unless the listing ends first or
   * stops at its read bound (`Page.read_bound`); either way `next_cursor` is null only at the end.
   */
  list(query: ListQuery): Promise<Page<Breadcrumb>>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
