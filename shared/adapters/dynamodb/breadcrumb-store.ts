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
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
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
import {
  IdempotencyKeyReuseError,
  NotFoundError,
  RetriableError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import { type LlmHints, LlmHintsSchema, mergeHints } from '#shared/domain/llm-hints.ts';
import type { PlainPut } from '#shared/domain/plain-put.ts';
import {
  type BreadcrumbStore,
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
import type { DataChecks, ViewItem } from '#shared/ports/checks.ts';
import type { ContextSpill } from '#shared/rooms/attachments/spill.ts';
import { contextSpillFromEnv } from '#shared/rooms/attachments/spill-from-env.ts';
import {
  applyPatch,
  assertExpectedVersion,
  buildRecord,
  definedSchemas,
  firstVersion,
  historyPage,
  liveOrGone,
  refuseUnscopedListing,
  type SchemaSettings,
  schemaDefSettings,
} from '../../domain/record-rules.ts';
import { dataChecks } from '../checks/checks.ts';
import { upsertVia } from '../store-upsert.ts';
import { defaultDocumentClient, translate } from './client.ts';
import {
  deletionItem,
  headItem,
  inheritedOf,
  inheritedTags,
  type Key,
  KIND,
  keys,
  storable,
  tombstoneItem,
  toRecord,
  versionItem,
} from './items.ts';
import { listBySchema } from './schema-listing.ts';
import { type Item, keyString, sleep, TableReads } from './table-reads.ts';
import { listByTag } from './tag-listing/list-by-tag.ts';

export { defaultDocumentClient, translate };

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
const MAX_WRITE_ATTEMPTS = 12;
/** How long a store trusts the schema settings it read, for writes (see the header). */
export const SCHEMA_SETTINGS_CACHE_MS = 30_000;

export interface DynamoBreadcrumbStoreOptions {
  tableName: string;
  client?: DynamoDBDocumentClient;
  clock?: Clock;
  /** Index entries a listing reads at most per call. @default LIST_READ_BOUND */
  listReadBound?: number;
  /** Where context views apply llm_hints (templates, JSONPath); default this process's (`dataChecks()`). */
  checks?: DataChecks;
  /**
   * Large contexts go to the stage's blob store and the items hold a reference (`shared/rooms/attachments/spill.ts`):
   * every write spills, every record handed out is whole. Default: the environment's blob store; `null`: none.
   */
  spill?: ContextSpill | null;
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
  private readonly reads: TableReads;
  private readonly listReadBound: number;
  private readonly checks: DataChecks | undefined;
  private readonly ulid = monotonicFactory();
  private readonly settingsCache = new Map<string, { settings: SchemaSettings; readAt: number }>();
  private readonly spill: ContextSpill | undefined;

  constructor(options: DynamoBreadcrumbStoreOptions) {
    this.tableName = options.tableName;
    this.client = options.client ?? defaultDocumentClient();
    this.clock = options.clock ?? systemClock;
    this.reads = new TableReads(this.client, this.tableName);
    this.listReadBound = options.listReadBound ?? LIST_READ_BOUND;
    this.checks = options.checks;
    this.spill = options.spill === null ? undefined : (options.spill ?? contextSpillFromEnv());
  }

  /** A record as handed out: its context whole (read back from the blob store when it was spilled). */
  private whole(record: Breadcrumb): Promise<Breadcrumb> {
    return this.spill ? this.spill.in(record) : Promise.resolve(record);
  }

  private wholeAll(records: readonly Breadcrumb[]): Promise<Breadcrumb[]> {
    return Promise.all(records.map((r) => this.whole(r)));
  }

  /** The context as the item keeps it: spilled to the blob store when large (refused past the operator's limit). */
  private async keptContext(
    workspace: string,
    context: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    return this.spill ? this.spill.out(workspace, context) : context;
  }

  /**
   * Context views, through the data checks: a template or JSONPath rule from data can take long, so past a slice
   * the views are made in a worker, within one budget of template steps per read.
   */
  private views(workspace: string, items: ViewItem[]): Promise<ContextView[]> {
    return (this.checks ?? dataChecks()).views(workspace, items);
  }

  async create(workspace: string, input: CreateBreadcrumb, options: CreateOptions): Promise<CreateResult> {
    const result = await this.createKept(workspace, input, options);
    // What was just written is what was asked for: its context is at hand (no read of the blob back).
    const breadcrumb = result.replayed
      ? await this.whole(result.breadcrumb)
      : { ...result.breadcrumb, context: input.context };
    return { ...result, breadcrumb };
  }

  private async createKept(
    workspace: string,
    wholeInput: CreateBreadcrumb,
    options: CreateOptions,
  ): Promise<CreateResult> {
    const now = this.clock.now();
    const id = options.id ?? this.ulid(now.getTime());
    // The idempotency hash is of the request as sent; the record keeps what the item can hold.
    const input = { ...wholeInput, context: await this.keptContext(workspace, wholeInput.context) };
    const record = await this.firstRecord(workspace, id, input, options, now);

    const extra: TransactItem[] = [];
    const requestHash = sha256(canonicalJson({ workspace, input: wholeInput }));
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
      return { breadcrumb: await this.getVersionKept(workspace, id, 1), replayed: true };
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
    return this.whole(await this.getKept(workspace, id));
  }

  /** The head as its item keeps it (a spilled context stays a reference): what writes build on. */
  private async getKept(workspace: string, id: string): Promise<Breadcrumb> {
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
  async contextViews(workspace: string, given: readonly Breadcrumb[]): Promise<ContextView[]> {
    const records = await this.wholeAll(given);
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
    const record = await this.whole(versionOf(this.liveRecord(head, workspace, id), item, id, version));
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
    return this.whole(await this.getVersionKept(workspace, id, version));
  }

  private async getVersionKept(workspace: string, id: string, version: number): Promise<Breadcrumb> {
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
    return {
      items: await this.wholeAll(versions.includes(head.version) ? [head, ...items] : items),
      next_cursor,
    };
  }

  async update(
    workspace: string,
    id: string,
    wholePatch: UpdateBreadcrumb,
    options: UpdateOptions,
  ): Promise<Breadcrumb> {
    const patch =
      wholePatch.context === undefined
        ? wholePatch
        : { ...wholePatch, context: await this.keptContext(workspace, wholePatch.context) };
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
      // The caller's copy is whole; the item keeps the spilled form (the same reference: content-addressed).
      const current = trusted
        ? { ...given, context: await this.keptContext(workspace, given.context) }
        : this.liveRecord(item, workspace, id);
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
        return wholePatch.context !== undefined
          ? { ...record, context: wholePatch.context }
          : await this.whole(record);
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
      const current = await this.getKept(workspace, id);
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
    const { schema_name: schema, tag } = query;
    if (schema === undefined && tag === undefined) refuseUnscopedListing();
    const options = { nowMs: this.clock.now().getTime(), bound: this.listReadBound };
    const page =
      tag !== undefined
        ? await listByTag(this.reads, { ...query, tag }, options)
        : await listBySchema(this.reads, { ...query, schema_name: schema! }, options);
    return { ...page, items: await this.wholeAll(page.items) };
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
    const kept = { ...input, context: await this.keptContext(workspace, input.context) };
    const first = await this.firstRecord(workspace, id, kept, options, this.clock.now());
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
      return await this.whole(record);
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

  /** Removes a plain put that cannot be adopted (its workspace is deleted), unless it changed since it was seen. */
  async discardPlainPut(seen: Item): Promise<void> {
    const condition = sameItemCondition(seen);
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { id: seen.id, workspace: seen.workspace },
          ConditionExpression: condition.expression,
          ExpressionAttributeNames: condition.names,
          ...(Object.keys(condition.values ?? {}).length > 0
            ? { ExpressionAttributeValues: condition.values }
            : {}),
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

  private getItem(key: Key, consistent = true): Promise<Item | undefined> {
    return this.reads.getItem(key, consistent);
  }

  private batchGet(wanted: Key[]): Promise<(Item | undefined)[]> {
    return this.reads.batchGet(wanted);
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
    given: readonly Breadcrumb[],
    maxAgeMs: number,
  ): Promise<ContextView[]> {
    const records = await this.wholeAll(given);
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

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
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

function cacheKey(workspace: string, schemaName: string): string {
  return `${workspace}\u0000${schemaName}`;
}
