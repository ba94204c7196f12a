/**
 * Reads the thread index (gsi3: heads with causation, partition `<ws>#th#<thread>`) and the change log (gsi3:
 * version and deletion items; gsi4: heads' current versions; partitions `<ws>#c#<shard>`). The design and its costs are in
 * `table-design.md` ("Threads and the change log").
 *
 * A change-log cursor is the sort key `<updated_at>#<id>#<version>` of the last change read, or `<time>~` for
 * "everything up to time": `~` sorts after `#`, so it stands after every change written at that instant.
 */
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { CausationSchema } from '#shared/domain/change-event.ts';
import { BadRequestError } from '#shared/domain/errors.ts';
import type {
  ActivityEntry,
  ChangeCursor,
  ChangeEntry,
  ChangeLog,
  ThreadIndex,
} from '#shared/ports/activity.ts';
import { defaultDocumentClient, translate } from './breadcrumb-store.ts';
import { CHANGE_LOG_SHARDS, gsi, KIND, keys, toRecord } from './items.ts';

type Item = Record<string, unknown>;

const INDEX = 'gsi3';
/** Query pages of the thread index. */
const PAGE = 500;

export interface ActivityIndexOptions {
  tableName: string;
  client?: DynamoDBDocumentClient;
}

export class DynamoThreadIndex implements ThreadIndex {
  private readonly tableName: string;
  private readonly client: DynamoDBDocumentClient;

  constructor(options: ActivityIndexOptions) {
    this.tableName = options.tableName;
    this.client = options.client ?? defaultDocumentClient();
  }

  async threadHeads(
    workspace: string,
    thread: string,
    limit: number,
  ): Promise<{ entries: ActivityEntry[]; truncated: boolean }> {
    const entries: ActivityEntry[] = [];
    let start: Item | undefined;
    do {
      const out = await query(this.client, {
        TableName: this.tableName,
        IndexName: INDEX,
        KeyConditionExpression: 'gsi3pk = :pk',
        ExpressionAttributeValues: { ':pk': gsi.byThread(workspace, thread) },
        Limit: Math.min(PAGE, limit + 1 - entries.length),
        ExclusiveStartKey: start,
      });
      for (const item of out.Items ?? []) {
        const entry = toEntry(item);
        if (entry) entries.push(entry);
      }
      start = out.LastEvaluatedKey;
    } while (start && entries.length <= limit);
    return { entries: entries.slice(0, limit), truncated: entries.length > limit };
  }

  async head(workspace: string, id: string): Promise<Breadcrumb | undefined> {
    try {
      const out = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key: keys.head(workspace, id) }),
      );
      return out.Item?.kind === KIND.breadcrumb ? toRecord(out.Item) : undefined;
    } catch (error) {
      throw translate(error);
    }
  }

  /**
   * The records of the given versions: version items, and the heads for versions that are still current (a head
   * holds its current version; it becomes a version item when superseded).
   */
  async versions(workspace: string, refs: readonly { id: string; version: number }[]): Promise<Breadcrumb[]> {
    const unique = [...new Map(refs.map((r) => [`${r.id}@${r.version}`, r])).values()];
    const found: Breadcrumb[] = [];
    // 50 refs a batch: each asks for its version item and its head (≤ 100 keys).
    for (let i = 0; i < unique.length; i += 50) {
      const batch = unique.slice(i, i + 50);
      const heads = [...new Set(batch.map((r) => r.id))].map((id) => keys.head(workspace, id));
      let pending = [...batch.map((r) => keys.version(workspace, r.id, r.version)), ...heads];
      const items = new Map<string, Breadcrumb>();
      for (let attempt = 0; pending.length > 0 && attempt < 8; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
        try {
          const out = await this.client.send(
            new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: pending } } }),
          );
          for (const item of out.Responses?.[this.tableName] ?? []) {
            if (item.kind !== KIND.version && item.kind !== KIND.breadcrumb) continue;
            const record = toRecord(item);
            items.set(`${record.id}@${record.version}`, record);
          }
          pending = (out.UnprocessedKeys?.[this.tableName]?.Keys as typeof pending | undefined) ?? [];
        } catch (error) {
          throw translate(error);
        }
      }
      for (const ref of batch) {
        const record = items.get(`${ref.id}@${ref.version}`);
        if (record) found.push(record);
      }
    }
    return found;
  }
}

/** Matches a cursor: a change's sort key, or a time followed by `~`. */
const CURSOR_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z(~|#[A-Za-z0-9._:-]{1,128}#\d{10})$/;

export class DynamoChangeLog implements ChangeLog {
  private readonly tableName: string;
  private readonly client: DynamoDBDocumentClient;

  constructor(options: ActivityIndexOptions) {
    this.tableName = options.tableName;
    this.client = options.client ?? defaultDocumentClient();
  }

  cursorAt(time: Date): ChangeCursor {
    return `${time.toISOString()}~`;
  }

  checkCursor(cursor: string): ChangeCursor {
    if (!CURSOR_PATTERN.test(cursor)) {
      throw new BadRequestError('Last-Event-ID is not a position in the change stream', [
        { path: 'Last-Event-ID', message: 'expected the id of an event this stream sent' },
      ]);
    }
    return cursor;
  }

  async read(
    workspace: string,
    after: ChangeCursor,
    until: ChangeCursor,
    limit: number,
  ): Promise<ChangeEntry[]> {
    if (after >= until) return [];
    // Every shard of both indexes in parallel, each sorted; the first `limit` of the merge are among the first
    // `limit` of each.
    const outputs = await Promise.all(
      changeSources(workspace).map(({ index, pk }) =>
        query(this.client, {
          TableName: this.tableName,
          IndexName: index,
          KeyConditionExpression: `${index}pk = :pk AND ${index}sk BETWEEN :after AND :until`,
          ExpressionAttributeValues: { ':pk': pk, ':after': after, ':until': until },
          Limit: limit + 1,
        }).then((out) => ({ out, index })),
      ),
    );
    return merge(outputs)
      .filter((e) => e.cursor > after)
      .slice(0, limit);
  }

  async latest(workspace: string, until: ChangeCursor, limit: number): Promise<ChangeEntry[]> {
    const outputs = await Promise.all(
      changeSources(workspace).map(({ index, pk }) =>
        query(this.client, {
          TableName: this.tableName,
          IndexName: index,
          KeyConditionExpression: `${index}pk = :pk AND ${index}sk <= :until`,
          ExpressionAttributeValues: { ':pk': pk, ':until': until },
          ScanIndexForward: false,
          Limit: limit,
        }).then((out) => ({ out, index })),
      ),
    );
    return merge(outputs).slice(-limit);
  }
}

/**
 * Where the change log is: superseded versions and deletions in gsi3, each head's current version in gsi4, both
 * in the same shards and sort keys. A version briefly in both (its version item is written before the head moves
 * on) is read once.
 */
function changeSources(workspace: string): { index: 'gsi3' | 'gsi4'; pk: string }[] {
  return Array.from({ length: CHANGE_LOG_SHARDS }, (_, shard) => gsi.changeLog(workspace, shard)).flatMap(
    (pk) => [
      { index: 'gsi3' as const, pk },
      { index: 'gsi4' as const, pk },
    ],
  );
}

function merge(outputs: { out: QueryCommandOutput; index: 'gsi3' | 'gsi4' }[]): ChangeEntry[] {
  const entries = new Map<string, ChangeEntry>();
  for (const { out, index } of outputs) {
    for (const item of out.Items ?? []) {
      const entry = toEntry(item);
      if (!entry) continue;
      const cursor = String(item[`${index}sk`]);
      // A head's entry is the change that wrote its current version.
      const change: ChangeEntry = {
        ...entry,
        kind: entry.kind === KIND.breadcrumb ? KIND.version : entry.kind,
        cursor,
      };
      entries.set(cursor + (entry.kind === KIND.deletion ? '#d' : ''), change);
    }
  }
  return [...entries.values()].sort((a, b) => (a.cursor < b.cursor ? -1 : a.cursor > b.cursor ? 1 : 0));
}

async function query(
  client: DynamoDBDocumentClient,
  input: ConstructorParameters<typeof QueryCommand>[0],
): Promise<QueryCommandOutput> {
  try {
    return await client.send(new QueryCommand(input));
  } catch (error) {
    throw translate(error);
  }
}

/**
 * The change-log entry a head's stream record stands for, as `DynamoChangeLog` reads it back later: a head written
 * by crumbs (`written`) is its version, at the position of the write; a head turned into a tombstone is the
 * deletion, at the position of its deletion item. Undefined otherwise (a head removed by its TTL leaves no entry in
 * the change log, so `/changes` never shows one either). The publisher hands these to the change channel.
 */
export function changeEntryOfStreamImages(
  newImage: Item | undefined,
  oldImage: Item | undefined,
  written: boolean,
): ChangeEntry | undefined {
  if (newImage?.kind === KIND.tombstone && oldImage?.kind === KIND.breadcrumb) {
    const entry = toEntry(oldImage);
    if (!entry || typeof newImage.deleted_at !== 'string') return undefined;
    const { status: _status, ...rest } = entry;
    const by = typeof newImage.deleted_by === 'string' ? newImage.deleted_by : entry.updated_by;
    return {
      ...rest,
      kind: KIND.deletion,
      updated_at: newImage.deleted_at,
      updated_by: by,
      cursor: gsi.changeSort(newImage.deleted_at, entry.id, entry.version),
    };
  }
  if (!written || newImage?.kind !== KIND.breadcrumb) return undefined;
  const entry = toEntry(newImage);
  if (!entry) return undefined;
  return {
    ...entry,
    kind: KIND.version,
    cursor: gsi.changeSort(entry.updated_at, entry.id, entry.version),
  };
}

/** An index item as an entry; items of unexpected shape (hand-written into the table) are skipped. */
function toEntry(item: Item): ActivityEntry | undefined {
  const kind = item.kind;
  if (kind !== KIND.breadcrumb && kind !== KIND.version && kind !== KIND.deletion) return undefined;
  const id = kind === KIND.breadcrumb ? item.id : item.ref;
  if (typeof id !== 'string' || typeof item.schema_name !== 'string') return undefined;
  const causation = CausationSchema.safeParse(item.causation);
  const tags = item.tags instanceof Set ? [...item.tags] : Array.isArray(item.tags) ? item.tags : [];
  return {
    id,
    workspace: String(item.workspace),
    kind,
    schema_name: item.schema_name,
    title: typeof item.title === 'string' ? item.title : '',
    tags: tags.map(String),
    version: Number(item.version),
    created_at: String(item.created_at ?? ''),
    created_by: String(item.created_by ?? ''),
    updated_at: String(item.updated_at ?? ''),
    updated_by: String(item.updated_by ?? item.created_by ?? ''),
    ...(causation.success ? { causation: causation.data } : {}),
    ...(typeof item.ctx_status === 'string' ? { status: item.ctx_status } : {}),
  };
}
