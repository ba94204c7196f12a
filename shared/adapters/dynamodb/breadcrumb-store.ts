/**
 * DynamoDB adapter of the BreadcrumbStore port (AWS SDK v3, lib-dynamodb). Key and index design:
 * `table-design.md` beside this file.
 *
 * Schema settings: a `schema.def.v1` tagged `defines:<schema>` keeps that schema's `llm_hints` defaults and its
 * `ttl_seconds` (the expiry a breadcrumb of the schema gets when written without `expires_at`) in one item,
 * `#hints#<schema>`. Context views read it every time. Writes read it through a per-store cache of
 * `SCHEMA_SETTINGS_CACHE_MS`, so a busy writer adds at most one GetItem per schema per 30 s rather than one per
 * write; the cost is a staleness window: a changed `ttl_seconds` applies to other containers' writes within 30 s
 * (this store's own schema.def writes take effect at once).
 */
import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { monotonicFactory } from 'ulidx';
import {
  BREADCRUMB_ID_PATTERN,
  type Breadcrumb,
  type ContextView,
  type CreateBreadcrumb,
  canonicalJson,
  isExpired,
  toEpochSeconds,
  type UpdateBreadcrumb,
} from '#shared/domain/breadcrumb.ts';
import {
  BadRequestError,
  IdempotencyKeyReuseError,
  isCrumbsError,
  isRetriable,
  NotFoundError,
  RetriableError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import { type LlmHints, LlmHintsSchema, mergeHints } from '#shared/domain/llm-hints.ts';
import type { PlainPut } from '#shared/domain/plain-put.ts';
import {
  isRoutingTag,
  REQUEST_TAG_PREFIX,
  RUN_TAG_PREFIX,
  SCHEMA_TAGS,
  THREAD_TAG_PREFIX,
} from '#shared/domain/protocol.ts';
import type {
  BreadcrumbStore,
  Clock,
  CreateOptions,
  CreateResult,
  ListQuery,
  Page,
  UpdateOptions,
  UpsertOptions,
  UpsertResult,
} from '#shared/ports/breadcrumb-store.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { DataChecks, ViewItem } from '#shared/ports/checks.ts';
import {
  applyPatch,
  assertExpectedVersion,
  buildRecord,
  decodeCursorJson,
  definedSchemas,
  encodeCursor,
  firstVersion,
  historyPage,
  liveOrGone,
  refuseUnscopedListing,
  type SchemaSettings,
  schemaDefSettings,
} from '../../domain/record-rules.ts';
import { dataChecks } from '../checks/checks.ts';
import { upsertVia } from '../store-upsert.ts';
import {
  deletionItem,
  gsi,
  headItem,
  inheritedOf,
  inheritedTags,
  type Key,
  KIND,
  keys,
  listedAt,
  storable,
  tombstoneItem,
  toRecord,
  translateConfig,
  versionItem,
} from './items.ts';

type Item = Record<string, unknown>;
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
const MAX_WRITE_ATTEMPTS = 12;
/** Listing by schema and tag: tag entries read per query, and at most per page, before a short page is returned. */
const LIST_FILTER_PAGE = 50;
const LIST_FILTER_READS = 500;
/** A routing tag's listing: breadcrumbs listed under it read for their threads, and threads read at most. */
const INHERITED_ANCHORS = 100;
const INHERITED_THREADS = 20;
/** How long a store trusts the schema settings it read, for writes (see the header). */
export const SCHEMA_SETTINGS_CACHE_MS = 30_000;

let defaultClient: DynamoDBDocumentClient | undefined;
/** Module-scope client, created once per cold start. Endpoint and region come from the standard AWS env. */
export function defaultDocumentClient(): DynamoDBDocumentClient {
  defaultClient ??= DynamoDBDocumentClient.from(new DynamoDBClient({}), translateConfig());
  return defaultClient;
}

export interface DynamoBreadcrumbStoreOptions {
  tableName: string;
  client?: DynamoDBDocumentClient;
  clock?: Clock;
  /** Where context views apply llm_hints (templates, JSONPath); default this process's (`dataChecks()`). */
  checks?: DataChecks;
}

/** What a write commits: the new record and what it replaces. */
interface VersionWrite {
  record: Breadcrumb;
  previous: Breadcrumb | undefined;
  /** Routing tags the record shares with its cause (`inheritedTags`): no listing entry of their own. */
  inherited?: readonly string[];
  /** Condition on the head item, with its names and values. */
  condition: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };
  extra?: TransactItem[];
}

export class DynamoBreadcrumbStore implements BreadcrumbStore {
  readonly tableName: string;
  private readonly client: DynamoDBDocumentClient;
  private readonly clock: Clock;
  private readonly checks: DataChecks | undefined;
  private readonly ulid = monotonicFactory();
  private readonly settingsCache = new Map<string, { settings: SchemaSettings; readAt: number }>();

  constructor(options: DynamoBreadcrumbStoreOptions) {
    this.tableName = options.tableName;
    this.client = options.client ?? defaultDocumentClient();
    this.clock = options.clock ?? systemClock;
    this.checks = options.checks;
  }

  /**
   * Context views, through the data checks: a template or JSONPath rule from data can take long, so past a slice
   * the views are made in a worker, within one budget of template steps per read.
   */
  private views(workspace: string, items: ViewItem[]): Promise<ContextView[]> {
    return (this.checks ?? dataChecks()).views(workspace, items);
  }

  async create(workspace: string, input: CreateBreadcrumb, options: CreateOptions): Promise<CreateResult> {
    const now = this.clock.now();
    const id = options.id ?? this.ulid(now.getTime());
    const record = await this.firstRecord(workspace, id, input, options, now);

    const extra: TransactItem[] = [];
    const requestHash = sha256(canonicalJson({ workspace, input }));
    if (options.idempotencyKey !== undefined) {
      extra.push({
        Put: {
          TableName: this.tableName,
          Item: {
            ...keys.idempotency(workspace, options.idempotencyKey),
            kind: KIND.idempotency,
            created_id: id,
            request_hash: requestHash,
            expires_at: Math.floor(now.getTime() / 1000) + IDEMPOTENCY_TTL_SECONDS,
          },
          ConditionExpression: 'attribute_not_exists(id) OR expires_at < :now',
          ExpressionAttributeValues: { ':now': Math.floor(now.getTime() / 1000) },
        },
      });
    }

    try {
      await this.commit({
        record,
        previous: undefined,
        inherited: inheritedTags(record, options.causeTags),
        condition: { expression: 'attribute_not_exists(id)' },
        extra,
      });
      return { breadcrumb: record, replayed: false };
    } catch (error) {
      if (!(error instanceof WriteConditionFailed)) throw error;
      if (options.idempotencyKey !== undefined && error.failedIndexes.includes(error.extraOffset)) {
        return {
          breadcrumb: await this.replayIdempotent(workspace, options.idempotencyKey, requestHash),
          replayed: true,
        };
      }
      // The id exists: a caller-chosen id (executor responses) was already written. Nothing new is written.
      return { breadcrumb: await this.getVersion(workspace, id, 1), replayed: true };
    }
  }

  /** A new breadcrumb's record as `input` asks, with its schema's TTL default when it sets no expiry. */
  private async firstRecord(
    workspace: string,
    id: string,
    input: CreateBreadcrumb,
    options: { principal: string; causation?: Breadcrumb['causation'] },
    now: Date,
  ): Promise<Breadcrumb> {
    const expiresAt =
      input.expires_at === undefined
        ? await this.defaultExpiry(workspace, input.schema_name, now)
        : toEpochSeconds(input.expires_at);
    return firstVersion(workspace, id, input, expiresAt, {
      now,
      principal: options.principal,
      causation: options.causation,
    });
  }

  async get(workspace: string, id: string): Promise<Breadcrumb> {
    const item = await this.getItem(keys.head(workspace, id));
    return this.liveRecord(item, workspace, id);
  }

  async getContextView(workspace: string, id: string): Promise<ContextView> {
    const record = await this.get(workspace, id);
    const defaults = await this.schemaHints(workspace, record.schema_name);
    const [view] = await this.views(workspace, [{ record, hints: mergeHints(defaults, record.llm_hints) }]);
    return view as ContextView;
  }

  /** Context views of many records at once, with one schema-defaults lookup per schema. */
  async contextViews(workspace: string, records: readonly Breadcrumb[]): Promise<ContextView[]> {
    const schemas = [...new Set(records.map((r) => r.schema_name))];
    const defaults = new Map(
      await Promise.all(schemas.map(async (s) => [s, await this.schemaHints(workspace, s)] as const)),
    );
    return this.views(
      workspace,
      records.map((record) => ({
        record,
        hints: mergeHints(defaults.get(record.schema_name), record.llm_hints),
      })),
    );
  }

  /**
   * A version with its context view in one BatchGetItem: head (is it live?), the version item and the schema's
   * settings item. Executors read their trigger this way (one request instead of two).
   */
  async getVersionWithView(
    workspace: string,
    id: string,
    version: number,
    schemaName: string,
  ): Promise<{ record: Breadcrumb; view: ContextView }> {
    const [head, item, settingsItem] = await this.batchGet([
      keys.head(workspace, id),
      keys.version(workspace, id, version),
      keys.schemaHints(workspace, schemaName),
    ]);
    const record = versionOf(this.liveRecord(head, workspace, id), item, id, version);
    if (record.schema_name !== schemaName) {
      const [view] = await this.contextViews(workspace, [record]);
      return { record, view: view! };
    }
    const settings = this.rememberSettings(workspace, schemaName, settingsItem);
    const [view] = await this.views(workspace, [
      { record, hints: mergeHints(settings.hints, record.llm_hints) },
    ]);
    return { record, view: view as ContextView };
  }

  async getVersion(workspace: string, id: string, version: number): Promise<Breadcrumb> {
    const [head, item] = await this.batchGet([
      keys.head(workspace, id),
      keys.version(workspace, id, version),
    ]);
    return versionOf(this.liveRecord(head, workspace, id), item, id, version);
  }

  async history(
    workspace: string,
    id: string,
    page: { limit: number; cursor?: string },
  ): Promise<Page<Breadcrumb>> {
    const head = this.liveRecord(await this.getItem(keys.head(workspace, id)), workspace, id);
    const { versions, next_cursor } = historyPage(head.version, page);
    // The head is its current version; versions before it are version items.
    const older = versions.filter((v) => v !== head.version);
    const items = (await this.batchGet(older.map((v) => keys.version(workspace, id, v))))
      .filter((i): i is Item => i !== undefined)
      .map(toRecord);
    return { items: versions.includes(head.version) ? [head, ...items] : items, next_cursor };
  }

  async update(
    workspace: string,
    id: string,
    patch: UpdateBreadcrumb,
    options: UpdateOptions,
  ): Promise<Breadcrumb> {
    for (let attempt = 1; ; attempt++) {
      // The caller's copy saves the read when it is the version the write is conditional on (UpdateOptions.current).
      const given = options.current;
      const trusted =
        attempt === 1 &&
        given !== undefined &&
        given.id === id &&
        given.workspace === workspace &&
        options.expectedVersion === given.version &&
        options.causeTags !== undefined &&
        !isExpired(given, this.clock.now().getTime());
      const item = trusted ? undefined : await this.getItem(keys.head(workspace, id));
      const current = trusted ? given : this.liveRecord(item, workspace, id);
      assertExpectedVersion(options.expectedVersion, current);
      const record = applyPatch(current, patch, {
        now: this.clock.now(),
        principal: options.principal,
        causation: options.causation,
      });
      // What the head inherited stays inherited while it keeps the tag and its causation; a write that names its
      // cause's tags decides anew.
      const inherited =
        options.causeTags !== undefined
          ? inheritedTags(record, options.causeTags)
          : options.causation === undefined
            ? inheritedOf(item).filter((t) => record.tags.includes(t))
            : [];
      try {
        await this.commit({
          record,
          previous: current,
          inherited,
          condition: {
            expression: '#kind = :kind AND version = :expected',
            names: { '#kind': 'kind' },
            values: { ':kind': KIND.breadcrumb, ':expected': current.version },
          },
        });
        return record;
      } catch (error) {
        if (!(error instanceof WriteConditionFailed)) throw error;
        // Someone else wrote in between. With If-Match that is a conflict; without, read again and retry.
        if (options.expectedVersion !== undefined)
          throw new VersionConflictError(options.expectedVersion, undefined);
        if (attempt >= MAX_WRITE_ATTEMPTS)
          throw new RetriableError(`breadcrumb ${id} is changing too often to update`);
      }
    }
  }

  upsert(
    workspace: string,
    id: string,
    input: CreateBreadcrumb,
    options: UpsertOptions,
  ): Promise<UpsertResult> {
    return upsertVia(this, workspace, id, input, options);
  }

  async delete(
    workspace: string,
    id: string,
    options: { expectedVersion?: number; principal?: string } = {},
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(workspace, id);
      assertExpectedVersion(options.expectedVersion, current);
      // The head becomes a tombstone (the id stays taken); the version it held stays as history and in the change
      // log, with the deletion's own entry; its tag items go with its stream record (the publisher).
      const deletedAt = this.clock.now().toISOString();
      const deletedBy = options.principal ?? current.updated_by;
      const items: TransactItem[] = [
        {
          Put: {
            TableName: this.tableName,
            Item: tombstoneItem(current, deletedAt, deletedBy),
            ConditionExpression: '#kind = :kind AND version = :expected',
            ExpressionAttributeNames: { '#kind': 'kind' },
            ExpressionAttributeValues: { ':kind': KIND.breadcrumb, ':expected': current.version },
          },
        },
        { Put: { TableName: this.tableName, Item: versionItem(current) } },
        ...this.schemaHintWrites(undefined, current),
        { Put: { TableName: this.tableName, Item: deletionItem(current, deletedAt, deletedBy) } },
      ];
      try {
        await this.transact(items);
        return;
      } catch (error) {
        if (!(error instanceof WriteConditionFailed)) throw error;
        if (options.expectedVersion !== undefined)
          throw new VersionConflictError(options.expectedVersion, undefined);
        if (attempt >= MAX_WRITE_ATTEMPTS)
          throw new RetriableError(`breadcrumb ${id} is changing too often to delete`);
      }
    }
  }

  async list(query: ListQuery): Promise<Page<Breadcrumb>> {
    const { workspace, schema_name: schema, tag, limit } = query;
    if (schema === undefined && tag === undefined) refuseUnscopedListing();
    if (tag !== undefined) return this.listByTag({ ...query, tag });
    const pk = gsi.bySchema(workspace, schema!);
    const start = query.cursor === undefined ? undefined : decodeListCursor(query.cursor, pk);
    // By schema: the heads are the index entries (gsi1 projects everything), one Query a page.
    let result: { Items?: Item[]; LastEvaluatedKey?: Record<string, unknown> };
    try {
      result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: 'gsi1',
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'gsi1pk' },
          ExpressionAttributeValues: { ':pk': pk },
          ScanIndexForward: false,
          Limit: limit,
          ExclusiveStartKey: start,
        }),
      );
    } catch (error) {
      throw translate(error);
    }
    const nowMs = this.clock.now().getTime();
    const items = (result.Items ?? [])
      .filter((h) => h.kind === KIND.breadcrumb)
      .map(toRecord)
      .filter((r) => !isExpired(r, nowMs) && r.schema_name === schema);
    return {
      items,
      next_cursor: result.LastEvaluatedKey ? encodeCursor(result.LastEvaluatedKey) : null,
    };
  }

  /**
   * Listing by tag (and schema): a merge, newest first, of the places a tag's breadcrumbs are listed
   * (`tagSources`): heads whose first listed tag it is (gsi2); tag items (gsi1: a head's further tags, and every tag
   * of heads of the earlier layout); for `thread:<t>` the thread index and the root; for a schema's own tag that
   * schema's listing; for a routing tag the threads of the breadcrumbs listed under it, from when each was created
   * (what inherited the tag from them). Sources are read in pages and merged lazily (a k-way merge: a source is read
   * again only when the merge needs its next entry), entries without the tag dropped, duplicates dropped by
   * breadcrumb id. After LIST_FILTER_READS entries read a page comes back short, with a cursor to go on from; the
   * cursor holds each source's position. The heads are then read consistently and checked against the tag.
   */
  private async listByTag(query: ListQuery & { tag: string }): Promise<Page<Breadcrumb>> {
    const { workspace, schema_name: schema, tag, limit } = query;
    const sources = tagSources(workspace, tag);
    if (isRoutingTag(tag)) sources.push(...(await this.inheritedSources(workspace, tag)));
    const positions =
      query.cursor === undefined ? new Map<string, SourcePosition>() : decodeTagCursor(query.cursor, tag);
    const pageSize = schema !== undefined ? Math.max(limit, LIST_FILTER_PAGE) : limit;
    const states = sources.map((source) => ({
      source,
      position: positions.get(source.name) ?? ('start' as SourcePosition),
      buffer: [] as ListEntry[],
      /** Where the next read of this source starts; undefined once nothing follows the buffer. */
      next: undefined as Record<string, unknown> | undefined,
      exhausted: positions.get(source.name) === 'done',
    }));
    for (const state of states) {
      if (!state.exhausted && Array.isArray(state.position))
        state.next = startKey(workspace, state.source, state.position);
    }
    let read = 0;
    const refill = async (state: (typeof states)[number]) => {
      while (!state.exhausted && state.buffer.length === 0 && read < LIST_FILTER_READS) {
        const page = await this.readSource(workspace, tag, state.source, state.next, pageSize);
        read += page.scanned;
        state.buffer = page.entries;
        state.next = page.next;
        if (page.next === undefined) state.exhausted = true;
        // Entries without the tag were skipped: the position moves past them.
        if (page.entries.length === 0 && page.next !== undefined)
          state.position = page.lastPosition ?? state.position;
      }
      if (state.exhausted && state.buffer.length === 0) state.position = 'done';
    };

    const picked: string[] = [];
    const seen = new Set<string>();
    while (picked.length < limit && read < LIST_FILTER_READS) {
      await Promise.all(states.map(refill));
      // A source the read budget left unread may hold newer entries than the others: stop here (a short page).
      if (states.some((state) => !state.exhausted && state.buffer.length === 0)) break;
      let best: (typeof states)[number] | undefined;
      for (const state of states) {
        const head = state.buffer[0];
        if (head && (!best || compareEntries(head, best.buffer[0]!) > 0)) best = state;
      }
      if (!best) break;
      const entry = best.buffer.shift()!;
      best.position = best.exhausted && best.buffer.length === 0 ? 'done' : [entry.key, entry.sk];
      if (seen.has(entry.ref)) continue;
      seen.add(entry.ref);
      // Entries that do not say their schema (tag items of the earliest layout) are checked on their heads.
      if (schema !== undefined && entry.schema_name !== undefined && entry.schema_name !== schema) continue;
      picked.push(entry.ref);
    }

    const nowMs = this.clock.now().getTime();
    const heads = await this.batchGet(picked.map((ref) => keys.head(workspace, ref)));
    const items = heads
      .filter((h): h is Item => h !== undefined && h.kind === KIND.breadcrumb)
      .map(toRecord)
      .filter((r) => !isExpired(r, nowMs))
      .filter((r) => r.tags.includes(tag) && (schema === undefined || r.schema_name === schema));
    const done = states.every((state) => state.position === 'done');
    return {
      items,
      next_cursor: done
        ? null
        : encodeCursor({ tag, p: Object.fromEntries(states.map((s) => [s.source.name, s.position])) }),
    };
  }

  /**
   * The threads a routing tag's inheritors are in: the breadcrumbs listed under the tag (each the first of a chain
   * that passed the tag on; for `request:<id>` also breadcrumb <id>, whose answers name it), their threads, each
   * from the earliest creation among them (what inherited the tag was written after its cause). At most
   * INHERITED_ANCHORS breadcrumbs (the newest) and INHERITED_THREADS threads (those written to last).
   */
  private async inheritedSources(workspace: string, tag: string): Promise<TagSource[]> {
    const anchors: string[] = [];
    for (const index of ['gsi2', 'gsi1'] as const) {
      const page = await this.readSource(
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
    for (const head of await this.batchGet(read.map((ref) => keys.head(workspace, ref)))) {
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

  /** One page of a tag listing's source, newest first, without entries that do not carry the tag. */
  private async readSource(
    workspace: string,
    tag: string,
    source: TagSource,
    start: Record<string, unknown> | undefined,
    limit: number,
  ): Promise<{
    entries: ListEntry[];
    next?: Record<string, unknown>;
    scanned: number;
    lastPosition?: SourcePosition;
  }> {
    if (source.kind === 'root' || source.kind === 'self') {
      // Read by id, once: a thread's root (no causation, so the thread index does not hold it), or the breadcrumb
      // a tag names as itself (a run's `run:<its id>`).
      if (start !== undefined) return { entries: [], scanned: 0 };
      const head = await this.getItem(keys.head(workspace, source.pk));
      if (!head || head.kind !== KIND.breadcrumb || (source.kind === 'root' && head.causation))
        return { entries: [], scanned: 1 };
      const record = toRecord(head);
      if (!record.tags.includes(tag)) return { entries: [], scanned: 1 };
      const sk = gsi.sort(listedAt(record), record.id);
      return {
        entries: [{ key: record.id, sk, ref: record.id, schema_name: record.schema_name }],
        scanned: 1,
      };
    }
    const skName = `${source.index}sk`;
    let result: { Items?: Item[]; LastEvaluatedKey?: Record<string, unknown> };
    try {
      result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
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
        }),
      );
    } catch (error) {
      throw translate(error);
    }
    const items = result.Items ?? [];
    const carries = (item: Item) => {
      if (!source.filter) return true;
      const tags = item.tags instanceof Set ? [...item.tags] : Array.isArray(item.tags) ? item.tags : [];
      return tags.includes(tag);
    };
    const entries = items.filter(carries).map((item) => ({
      key: String(item.id),
      sk: String(item[skName]),
      ref: String(item.kind === KIND.tag ? item.ref : item.id),
      ...(typeof item.schema_name === 'string' ? { schema_name: item.schema_name } : {}),
    }));
    const last = items.at(-1);
    return {
      entries,
      scanned: items.length,
      ...(result.LastEvaluatedKey ? { next: result.LastEvaluatedKey } : {}),
      ...(last ? { lastPosition: [String(last.id), String(last[skName])] as [string, string] } : {}),
    };
  }

  /**
   * Adopts a plain put: an item a person wrote straight into the table. `seen` is the item as the stream saw it;
   * `previous` is the adopted breadcrumb it replaced, if any. The write is conditional on the item still being
   * exactly what was seen, so a newer put is never overwritten by an older one (its own stream record follows).
   * Returns the adopted record, or undefined when the item changed since (nothing written).
   */
  async adopt(
    seen: Item,
    parsed: PlainPut,
    previous: Breadcrumb | undefined,
    deletedVersion?: number,
  ): Promise<Breadcrumb | undefined> {
    const nowDate = this.clock.now();
    const now = nowDate.toISOString();
    const expiresAt =
      parsed.expires_at ?? (await this.defaultExpiry(parsed.workspace, parsed.schema_name, nowDate));
    const record = buildRecord({
      id: parsed.id,
      workspace: parsed.workspace,
      schema_name: parsed.schema_name,
      title: parsed.title,
      tags: parsed.tags,
      context: parsed.context,
      llm_hints: parsed.llm_hints,
      expires_at: expiresAt,
      // A put over a deleted breadcrumb's id goes on from its last version: its history stays as it was.
      version: previous ? previous.version + 1 : (deletedVersion ?? 0) + 1,
      created_at: previous?.created_at ?? now,
      updated_at: now,
      created_by: previous?.created_by ?? parsed.created_by,
      updated_by: parsed.created_by,
      ...(parsed.claimed_by !== undefined ? { claimed_by: parsed.claimed_by } : {}),
      causation: undefined,
    });
    try {
      await this.commit({ record, previous, condition: sameItemCondition(seen) });
      return record;
    } catch (error) {
      if (error instanceof WriteConditionFailed) return undefined;
      throw error;
    }
  }

  /**
   * A replacement (`PUT …/breadcrumbs/{id}`, `crumbs apply`) of a deleted breadcrumb: its id stays taken by the
   * tombstone (so an executor's replayed create stays a replay), and a person replacing it means it. Written as the
   * next version after the deleted one, over the tombstone read (its history stays as it was: get-at-version and
   * history read the versions before the delete). Undefined when the id holds no tombstone any more.
   */
  async revive(
    workspace: string,
    id: string,
    input: CreateBreadcrumb,
    options: { principal: string; causation?: Breadcrumb['causation'] },
  ): Promise<Breadcrumb | undefined> {
    const head = await this.getItem(keys.head(workspace, id));
    if (head?.kind !== KIND.tombstone || typeof head.version !== 'number') return undefined;
    const first = await this.firstRecord(workspace, id, input, options, this.clock.now());
    const record = buildRecord({ ...first, version: head.version + 1 });
    try {
      await this.commit({
        record,
        previous: undefined,
        condition: {
          expression: '#kind = :tombstone AND version = :deleted',
          names: { '#kind': 'kind' },
          values: { ':tombstone': KIND.tombstone, ':deleted': head.version },
        },
      });
      return record;
    } catch (error) {
      if (error instanceof WriteConditionFailed) return undefined;
      throw error;
    }
  }

  /**
   * Writes what heads' changes need of tag items (`tagItemChanges`), in stream order: later changes of one item
   * win, in BatchWriteItem requests of 25, unprocessed ones retried. Idempotent (puts of whole items and deletes),
   * so a batch handed over again writes the same.
   */
  async writeTagItems(changes: readonly { put: Item[]; remove: Key[] }[]): Promise<number> {
    const latest = new Map<string, { PutRequest: { Item: Item } } | { DeleteRequest: { Key: Key } }>();
    for (const change of changes) {
      for (const key of change.remove) latest.set(keyString(key), { DeleteRequest: { Key: key } });
      for (const item of change.put) latest.set(keyString(item as Key), { PutRequest: { Item: item } });
    }
    const requests = [...latest.values()];
    for (let i = 0; i < requests.length; i += 25) {
      let pending = requests.slice(i, i + 25);
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 0) await sleep(Math.min(1000, 20 * 2 ** attempt));
        if (attempt > 8) throw new RetriableError('DynamoDB left tag items unprocessed repeatedly');
        try {
          const out = await this.client.send(
            new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }),
          );
          pending = (out.UnprocessedItems?.[this.tableName] as typeof pending | undefined) ?? [];
        } catch (error) {
          throw translate(error);
        }
      }
    }
    return requests.length;
  }

  /** Records why a plain put could not be adopted, on the item itself, unless it changed since. */
  async rejectPlainPut(
    seen: Item,
    errors: readonly { path: string; message: string }[],
    hash: string,
  ): Promise<void> {
    const condition = sameItemCondition(seen);
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: seen.id, workspace: seen.workspace },
          UpdateExpression: 'SET ingest_errors = :errors, ingest_hash = :hash',
          ConditionExpression: condition.expression,
          ExpressionAttributeNames: condition.names,
          ExpressionAttributeValues: { ...condition.values, ':errors': errors, ':hash': hash },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return;
      throw translate(error);
    }
  }

  // ---------------------------------------------------------------------------------------------------------

  /**
   * Writes a version: the head under `condition`, and for an update the version it supersedes as a version item.
   * Without schema settings or `extra` that is no transaction: the version item first (its content never changes,
   * so writing it twice is harmless and a crash before the head leaves the breadcrumb as it was), then the head in
   * one conditional PutItem. Tag items other than the head's own entry follow from its stream record (the
   * publisher, before the change is routed). Schema definitions and `extra` (idempotency records) keep one
   * transaction, so their side items never disagree with the head.
   */
  private async commit(write: VersionWrite): Promise<void> {
    const { record, previous, condition } = write;
    const head: TransactItem = {
      Put: {
        TableName: this.tableName,
        Item: headItem(record, this.ulid(), write.inherited),
        ConditionExpression: condition.expression,
        ExpressionAttributeNames: condition.names,
        ExpressionAttributeValues: condition.values,
      },
    };
    const superseded: TransactItem[] = previous
      ? [{ Put: { TableName: this.tableName, Item: versionItem(previous) } }]
      : [];
    const side = this.schemaHintWrites(record, previous);
    const extra = write.extra ?? [];
    if (side.length === 0 && extra.length === 0) {
      for (const item of superseded) await this.put(item.Put!);
      await this.put(head.Put!, true);
      return;
    }
    const items = [head, ...superseded, ...side];
    const extraOffset = items.length;
    items.push(...extra);
    await this.transact(items, extraOffset);
  }

  /** One PutItem; with `conditional`, a failed condition is a WriteConditionFailed (as in a transaction). */
  private async put(input: NonNullable<TransactItem['Put']>, conditional = false): Promise<void> {
    try {
      await this.client.send(new PutCommand(input as ConstructorParameters<typeof PutCommand>[0]));
    } catch (error) {
      if (conditional && error instanceof ConditionalCheckFailedException)
        throw new WriteConditionFailed([0], 1);
      throw refusedOrTranslated(error);
    }
  }

  /**
   * `schema.def.v1` breadcrumbs tagged `defines:<schema>` keep that schema's settings (llm_hints defaults,
   * ttl_seconds) in one item per schema.
   */
  private schemaHintWrites(record: Breadcrumb | undefined, previous: Breadcrumb | undefined): TransactItem[] {
    const now = definedSchemas(record);
    const before = definedSchemas(previous);
    const writes: TransactItem[] = [];
    const settings = record ? schemaDefSettings(record) : { hints: undefined, ttlSeconds: undefined };
    for (const schema of now) {
      this.settingsCache.delete(cacheKey(record!.workspace, schema));
      writes.push(
        settings.hints !== undefined || settings.ttlSeconds !== undefined
          ? {
              Put: {
                TableName: this.tableName,
                Item: {
                  ...keys.schemaHints(record!.workspace, schema),
                  kind: KIND.schemaHints,
                  ...(settings.hints !== undefined ? { hints: storable(settings.hints) } : {}),
                  ...(settings.ttlSeconds !== undefined ? { ttl_seconds: settings.ttlSeconds } : {}),
                  source: record!.id,
                },
              },
            }
          : { Delete: { TableName: this.tableName, Key: keys.schemaHints(record!.workspace, schema) } },
      );
    }
    for (const schema of before.filter((s) => !now.includes(s))) {
      this.settingsCache.delete(cacheKey(previous!.workspace, schema));
      writes.push({
        Delete: { TableName: this.tableName, Key: keys.schemaHints(previous!.workspace, schema) },
      });
    }
    return writes;
  }

  /** The schema's settings as stored now (context views), refreshing the cache writes use. */
  private async schemaSettings(workspace: string, schemaName: string): Promise<SchemaSettings> {
    const item = await this.getItem(keys.schemaHints(workspace, schemaName), false);
    return this.rememberSettings(workspace, schemaName, item);
  }

  /** The schema settings an item holds (none when absent), remembered for writes. */
  private rememberSettings(workspace: string, schemaName: string, item: Item | undefined): SchemaSettings {
    const hints = LlmHintsSchema.safeParse(item?.hints);
    const ttl = item?.ttl_seconds;
    const settings: SchemaSettings = {
      hints: hints.success ? hints.data : undefined,
      ttlSeconds: typeof ttl === 'number' && Number.isInteger(ttl) && ttl > 0 ? ttl : undefined,
    };
    this.settingsCache.set(cacheKey(workspace, schemaName), { settings, readAt: Date.now() });
    return settings;
  }

  private async schemaHints(workspace: string, schemaName: string): Promise<LlmHints | undefined> {
    return (await this.schemaSettings(workspace, schemaName)).hints;
  }

  /**
   * `expires_at` for a breadcrumb written without one: now + the schema's ttl_seconds, if it has one (through the
   * settings cache). Public for upserts, which give a replacement without `expires_at` the same default.
   */
  async defaultExpiry(workspace: string, schemaName: string, now: Date): Promise<number | undefined> {
    const cached = this.settingsCache.get(cacheKey(workspace, schemaName));
    const settings =
      cached && Date.now() - cached.readAt < SCHEMA_SETTINGS_CACHE_MS
        ? cached.settings
        : await this.schemaSettings(workspace, schemaName);
    return settings.ttlSeconds === undefined
      ? undefined
      : Math.floor(now.getTime() / 1000) + settings.ttlSeconds;
  }

  private async transact(items: TransactItem[], extraOffset = items.length): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(new TransactWriteCommand({ TransactItems: items }));
        return;
      } catch (error) {
        if (error instanceof TransactionCanceledException) {
          const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
          const failed = codes.flatMap((c, i) => (c === 'ConditionalCheckFailed' ? [i] : []));
          if (failed.length > 0) throw new WriteConditionFailed(failed, extraOffset);
          if (codes.includes('ValidationError')) {
            throw new ValidationError(
              [{ path: 'context', message: 'DynamoDB rejected the record as stored' }],
              undefined,
              {
                cause: error,
              },
            );
          }
          // TransactionConflict / throttling inside the transaction: another writer is on the same items.
          if (attempt < MAX_WRITE_ATTEMPTS) {
            await sleep(Math.random() * 20 * 2 ** Math.min(attempt, 5));
            continue;
          }
          throw new RetriableError(`DynamoDB kept cancelling the write (${codes.join(', ')})`, {
            cause: error,
          });
        }
        throw refusedOrTranslated(error);
      }
    }
  }

  private async getItem(key: Key, consistent = true): Promise<Item | undefined> {
    try {
      const out = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: consistent }),
      );
      return out.Item;
    } catch (error) {
      throw translate(error);
    }
  }

  /** BatchGetItem of ≤ 100 keys, answered in the order asked (undefined where missing). */
  private async batchGet(wanted: Key[]): Promise<(Item | undefined)[]> {
    if (wanted.length === 0) return [];
    const found = new Map<string, Item>();
    let pending: Key[] = wanted;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await sleep(Math.min(1000, 20 * 2 ** attempt));
      try {
        const out = await this.client.send(
          new BatchGetCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        for (const item of out.Responses?.[this.tableName] ?? []) found.set(keyString(item as Key), item);
        pending = (out.UnprocessedKeys?.[this.tableName]?.Keys as Key[] | undefined) ?? [];
      } catch (error) {
        throw translate(error);
      }
      if (attempt > 8 && pending.length > 0)
        throw new RetriableError('DynamoDB left keys unprocessed repeatedly');
    }
    return wanted.map((k) => found.get(keyString(k)));
  }

  private liveRecord(item: Item | undefined, workspace: string, id: string): Breadcrumb {
    const record = item && item.kind === KIND.breadcrumb ? toRecord(item) : undefined;
    return liveOrGone(record, workspace, id, this.clock.now().getTime());
  }

  private async replayIdempotent(workspace: string, key: string, requestHash: string): Promise<Breadcrumb> {
    const record = await this.getItem(keys.idempotency(workspace, key));
    if (!record)
      throw new RetriableError('the idempotency record vanished while replaying; retry the request');
    if (record.request_hash !== requestHash) {
      throw new IdempotencyKeyReuseError(
        `Idempotency-Key "${key}" was already used for a different request in workspace ${workspace}`,
      );
    }
    const createdId = String(record.created_id);
    const [head, first] = await this.batchGet([
      keys.head(workspace, createdId),
      keys.version(workspace, createdId, 1),
    ]);
    if (head && head.kind === KIND.breadcrumb && Number(head.version) === 1) return toRecord(head);
    if (!first)
      throw new NotFoundError(`the breadcrumb created with Idempotency-Key "${key}" no longer exists`);
    return toRecord(first);
  }

  /** `contextViews` with schema settings from the cache when read less than `maxAgeMs` ago (ExecutorStore). */
  async contextViewsWithin(
    workspace: string,
    records: readonly Breadcrumb[],
    maxAgeMs: number,
  ): Promise<ContextView[]> {
    const hints = new Map<string, LlmHints | undefined>();
    for (const schema of new Set(records.map((r) => r.schema_name))) {
      const cached = this.settingsCache.get(cacheKey(workspace, schema));
      const settings =
        cached && Date.now() - cached.readAt < maxAgeMs
          ? cached.settings
          : await this.schemaSettings(workspace, schema);
      hints.set(schema, settings.hints);
    }
    return this.views(
      workspace,
      records.map((record) => ({
        record,
        hints: mergeHints(hints.get(record.schema_name), record.llm_hints),
      })),
    );
  }
}

/** A transaction condition failed; `failedIndexes` are positions in the transaction. */
class WriteConditionFailed extends Error {
  constructor(
    readonly failedIndexes: number[],
    readonly extraOffset: number,
  ) {
    super('a write condition failed');
    this.name = 'WriteConditionFailed';
  }
}

/**
 * Version `version` of a live breadcrumb: the head when it is the current one, else its version item. (Heads of
 * the earlier layout also have a version item of their current version; the head is the same record.)
 */
function versionOf(head: Breadcrumb, item: Item | undefined, id: string, version: number): Breadcrumb {
  if (head.version === version) return head;
  if (!item) throw new NotFoundError(`breadcrumb ${id} has no version ${version}`);
  return toRecord(item);
}

/** A condition that holds only while the item is exactly `seen` (every attribute equal, nothing added). */
function sameItemCondition(seen: Item): VersionWrite['condition'] {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const parts: string[] = [];
  let i = 0;
  for (const [name, value] of Object.entries(seen)) {
    if (name === 'id' || name === 'workspace') continue;
    names[`#a${i}`] = name;
    values[`:a${i}`] = storable(value);
    parts.push(`#a${i} = :a${i}`);
    i++;
  }
  for (const name of ['kind', 'write_id', 'version']) {
    if (name in seen) continue;
    names[`#a${i}`] = name;
    parts.push(`attribute_not_exists(#a${i})`);
    i++;
  }
  return { expression: parts.join(' AND '), names, values };
}

function keyString(key: Key): string {
  return `${key.id}\u0000${key.workspace}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Where a tag's breadcrumbs are listed (`listByTag`). */
interface TagSource {
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
interface ListEntry {
  key: string;
  sk: string;
  ref: string;
  schema_name?: string;
}

/** A source's position in a cursor: not read yet, after an entry (table id, sort key), or read to the end. */
type SourcePosition = 'start' | 'done' | [string, string];

function tagSources(workspace: string, tag: string): TagSource[] {
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

/** Newer first: by sort key (`<updated_at>#<id>`), then by breadcrumb id. */
function compareEntries(a: ListEntry, b: ListEntry): number {
  if (a.sk !== b.sk) return a.sk > b.sk ? 1 : -1;
  return a.ref === b.ref ? 0 : a.ref > b.ref ? 1 : -1;
}

function startKey(
  workspace: string,
  source: TagSource,
  [key, sk]: [string, string],
): Record<string, unknown> | undefined {
  if (source.kind !== 'index') return { id: key, workspace };
  return { id: key, workspace, [`${source.index}pk`]: source.pk, [`${source.index}sk`]: sk };
}

/**
 * A tag listing's cursor: each source's position. Sources a later page does not have (a routing tag's threads
 * change as breadcrumbs are written) are dropped; new ones start from the top.
 */
function decodeTagCursor(cursor: string, tag: string): Map<string, SourcePosition> {
  const value = decodeCursorJson(cursor) as { tag?: unknown; p?: unknown } | null;
  const refuse = () =>
    new BadRequestError('cursor does not belong to this listing', [
      { path: 'cursor', message: 'use the next_cursor of the same schema_name/tag listing' },
    ]);
  if (value === null || typeof value !== 'object' || value.tag !== tag) throw refuse();
  const p = value.p;
  if (p === null || typeof p !== 'object' || Array.isArray(p)) throw refuse();
  const entries = Object.entries(p as Record<string, unknown>);
  if (entries.length > 8 + INHERITED_THREADS) throw refuse();
  const positions = new Map<string, SourcePosition>();
  for (const [name, position] of entries) {
    if (name.length > 1100) throw refuse();
    if (position === 'start' || position === 'done') positions.set(name, position);
    else if (
      Array.isArray(position) &&
      position.length === 2 &&
      position.every(
        (v) =>
          typeof v === 'string' && v.length > 0 && Buffer.byteLength(v, 'utf8') <= 1024 && !/\p{Cs}/u.test(v),
      )
    )
      positions.set(name, position as [string, string]);
    else throw refuse();
  }
  return positions;
}

/** A position in gsi1 (every listing reads it), as DynamoDB gives it in LastEvaluatedKey: table and index keys. */
const LIST_CURSOR_KEYS = ['id', 'workspace', 'gsi1pk', 'gsi1sk'] as const;

function decodeListCursor(cursor: string, pk: string): Record<string, unknown> {
  const value = decodeCursorJson(cursor);
  const wanted = [...LIST_CURSOR_KEYS].sort();
  // Exactly the keys DynamoDB gave as LastEvaluatedKey, all short strings: anything else would reach DynamoDB as
  // an invalid ExclusiveStartKey (a 5xx), not a 400.
  if (
    value === null ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    (value as Record<string, unknown>).gsi1pk !== pk ||
    Object.keys(value).sort().join('\u0000') !== wanted.join('\u0000') ||
    !Object.values(value).every(
      (v) =>
        typeof v === 'string' && v.length > 0 && Buffer.byteLength(v, 'utf8') <= 1024 && !/\p{Cs}/u.test(v),
    )
  ) {
    throw new BadRequestError('cursor does not belong to this listing', [
      { path: 'cursor', message: 'use the next_cursor of the same schema_name/tag listing' },
    ]);
  }
  return value as Record<string, unknown>;
}

/**
 * What passed our checks but not DynamoDB's (an item size the JSON estimate missed): the record, not the service, is
 * at fault, so it is the writer's 422 rather than a 5xx or a retry that cannot succeed. Anything else: `translate`.
 */
function refusedOrTranslated(error: unknown): unknown {
  if (error instanceof Error && error.name === 'ValidationException') {
    return new ValidationError(
      [{ path: 'context', message: `the record cannot be stored: ${error.message}` }],
      undefined,
      { cause: error },
    );
  }
  return translate(error);
}

/**
 * SDK errors → domain errors: what `isRetriable` calls retriable (throttling, service faults, timeouts) becomes a
 * RetriableError; the rest propagate unchanged.
 */
export function translate(error: unknown): unknown {
  if (!isCrumbsError(error) && isRetriable(error)) {
    return new RetriableError(`DynamoDB: ${(error as Error).message}`, { cause: error });
  }
  return error;
}

function cacheKey(workspace: string, schemaName: string): string {
  return `${workspace}\u0000${schemaName}`;
}
