/**
 * The workspace index (gsi5): every item of the table, whatever its kind, under `<workspace>#w#<shard>`, sorted by
 * its `id`, projecting `kind`. The item layer puts every item in it (`item-rules.ts`); what reads it is the deletion
 * of a workspace, which so costs what the workspace holds, not what the table holds. Design and costs:
 * `table-design.md` ("The workspace index").
 *
 * Items written before the index existed carry no key: `backfillWorkspaceIndex` gives it to them, one Scan of the
 * table in all, resumable, and marks the table when done (`#workspace-index` in the table's own partition `#crumbs`,
 * which no workspace can be named). Until the mark is there, a deletion scans the table as it did before the index.
 */
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { decodeCursorJson, encodeCursor } from '#shared/domain/record-rules.ts';
import { type QueryPage, TableReads, translate } from './table-reads.ts';

export const WORKSPACE_INDEX = 'gsi5';
export const WORKSPACE_INDEX_KEY = 'gsi5pk';
/**
 * Partitions per workspace. One index partition key absorbs about 1,000 writes a second, and a throttled index
 * throttles the table writes feeding it; every item of a workspace lands here (heads, versions, tag items, claims,
 * counters…), several per breadcrumb written, so 8 shards keep a busy workspace's writes (the change log's 4 shards'
 * worth of heads, with their other items) clear of that limit. A deletion reads the 8 partitions one after another.
 */
export const WORKSPACE_INDEX_SHARDS = 8;

/** The table's own partition: a `workspace` value no workspace can have (names start with a letter or digit). */
export const TABLE_PARTITION = '#crumbs';
const MARKER = { id: '#workspace-index', workspace: TABLE_PARTITION };

export function workspaceIndexShard(id: string): number {
  let hash = 0x811c9dc5; // FNV-1a, as the change log's shards.
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash % WORKSPACE_INDEX_SHARDS;
}

export function workspaceIndexKey(workspace: string, id: string): string {
  return `${workspace}#w#${workspaceIndexShard(id)}`;
}

/** An item of a workspace as the index lists it. */
export interface IndexedItem {
  id: string;
  kind?: string;
}

/** A position in a workspace's index: the shard, and where in it (DynamoDB's LastEvaluatedKey). */
interface Position {
  s: number;
  k?: Record<string, unknown>;
}

/**
 * One page of a workspace's items from `cursor` (the shards in turn): at most `limit` items, and where to go on
 * (undefined: every shard read to its end).
 */
export async function workspaceItemsPage(
  reads: TableReads,
  workspace: string,
  cursor: string | undefined,
  limit: number,
): Promise<{ items: IndexedItem[]; cursor?: string }> {
  let position: Position = cursor === undefined ? { s: 0 } : decodePosition(cursor);
  for (;;) {
    const page: QueryPage = await reads.query({
      IndexName: WORKSPACE_INDEX,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': WORKSPACE_INDEX_KEY },
      ExpressionAttributeValues: { ':pk': `${workspace}#w#${position.s}` },
      Limit: limit,
      ...(position.k !== undefined ? { ExclusiveStartKey: position.k } : {}),
    });
    // The key says whose item it is; checked again because these keys are deleted unconditionally.
    const items = page.items
      .filter((i) => i.workspace === workspace && typeof i.id === 'string')
      .map((i) => ({ id: String(i.id), ...(typeof i.kind === 'string' ? { kind: i.kind } : {}) }));
    const next: Position | undefined =
      page.next !== undefined
        ? { s: position.s, k: page.next }
        : position.s + 1 < WORKSPACE_INDEX_SHARDS
          ? { s: position.s + 1 }
          : undefined;
    // An empty shard costs one Query: go on to the next without answering an empty page.
    if (items.length === 0 && next !== undefined && page.next === undefined) {
      position = next;
      continue;
    }
    return { items, ...(next !== undefined ? { cursor: encodeCursor(next) } : {}) };
  }
}

function decodePosition(cursor: string): Position {
  const value = decodeCursorJson(cursor) as Position | null;
  if (
    value === null ||
    typeof value !== 'object' ||
    !Number.isInteger(value.s) ||
    value.s < 0 ||
    value.s >= WORKSPACE_INDEX_SHARDS
  ) {
    throw new Error('not a workspace index position');
  }
  return value;
}

/** Whether every item of the table is in the index (a new table, or one backfilled to its end). */
export async function workspaceIndexComplete(
  client: DynamoDBDocumentClient,
  tableName: string,
): Promise<boolean> {
  const item = await new TableReads(client, tableName).getItem(MARKER, false);
  return typeof item?.complete_at === 'string';
}

/** Marks the table's index complete: a new table (nothing to backfill), or the end of a backfill. */
export async function markWorkspaceIndexComplete(
  client: DynamoDBDocumentClient,
  tableName: string,
  at: Date,
): Promise<void> {
  await client
    .send(
      new PutCommand({
        TableName: tableName,
        Item: { ...MARKER, kind: 'table-meta', complete_at: at.toISOString() },
      }),
    )
    .catch((error: unknown) => {
      throw translate(error);
    });
}

export interface BackfillProgress {
  /** Items read so far, and of those, the ones given the key. */
  scanned: number;
  stamped: number;
  /** Where the next call goes on; undefined when this segment of the table has been read to its end. */
  cursor?: string;
}

/**
 * One page of the backfill: a Scan page of one segment of the table (`segment` of `segments`, so several workers
 * can share the table), and every item in it without the index key given it by an UpdateItem that sets nothing
 * else, and only if the item is still there without it. Resumable
 * from `cursor`; run every segment to its end, then `markWorkspaceIndexComplete`.
 */
export async function backfillWorkspaceIndex(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: { segment?: number; segments?: number; cursor?: string; pageSize?: number } = {},
): Promise<BackfillProgress> {
  const segments = options.segments ?? 1;
  let out: { Items?: Record<string, unknown>[]; LastEvaluatedKey?: Record<string, unknown> };
  try {
    out = await client.send(
      new ScanCommand({
        TableName: tableName,
        ProjectionExpression: '#id, #ws, #pk',
        ExpressionAttributeNames: { '#id': 'id', '#ws': 'workspace', '#pk': WORKSPACE_INDEX_KEY },
        Limit: options.pageSize ?? 500,
        ...(segments > 1 ? { Segment: options.segment ?? 0, TotalSegments: segments } : {}),
        ...(options.cursor !== undefined
          ? { ExclusiveStartKey: decodeCursorJson(options.cursor) as Record<string, unknown> }
          : {}),
      }),
    );
  } catch (error) {
    throw translate(error);
  }
  const missing = (out.Items ?? []).filter(
    (i) =>
      typeof i.id === 'string' && typeof i.workspace === 'string' && i[WORKSPACE_INDEX_KEY] === undefined,
  );
  for (const item of missing) {
    await client
      .send(
        new UpdateCommand({
          TableName: tableName,
          Key: { id: item.id, workspace: item.workspace },
          UpdateExpression: 'SET #pk = :pk',
          ConditionExpression: 'attribute_exists(id) AND attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': WORKSPACE_INDEX_KEY },
          ExpressionAttributeValues: {
            ':pk': workspaceIndexKey(String(item.workspace), String(item.id)),
          },
        }),
      )
      .catch((error: unknown) => {
        // Deleted meanwhile, or written since with the key: nothing to do.
        if ((error as Error).name === 'ConditionalCheckFailedException') return;
        throw translate(error);
      });
  }
  return {
    scanned: out.Items?.length ?? 0,
    stamped: missing.length,
    ...(out.LastEvaluatedKey !== undefined ? { cursor: encodeCursor(out.LastEvaluatedKey) } : {}),
  };
}

/** Reads the marker's item (tests and the CLI show when the index became complete). */
export async function workspaceIndexMarker(
  client: DynamoDBDocumentClient,
  tableName: string,
): Promise<Record<string, unknown> | undefined> {
  const out = await client
    .send(new GetCommand({ TableName: tableName, Key: MARKER, ConsistentRead: true }))
    .catch((error: unknown) => {
      throw translate(error);
    });
  return out.Item;
}
