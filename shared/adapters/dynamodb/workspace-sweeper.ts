/**
 * The WorkspaceSweeper port on the breadcrumbs table: the workspace's deletion record (`workspace-seal.ts`: the
 * job's progress, written conditionally on its step so two calls cannot both advance it, its seal, and at the end
 * its tombstone) and the sweep that deletes every item of one workspace.
 *
 * The sweep reads the workspace index (gsi5, `workspace-index.ts`), which holds every item of every kind — the item
 * layer puts each one there (`item-rules.ts`), kinds added later included — so a deletion reads what the workspace
 * holds: one Query per page per shard, whatever the table's size. On a table whose index is not complete yet (items
 * written before it existed, not backfilled: `crumbs table backfill-index`), it falls back to a Scan filtered on
 * `workspace`, and says so. Either way one bounded page a call (`SWEEP_PAGE` items), its position kept in the job, so
 * each API call stays well inside Lambda's and API Gateway's limits. Deletes name the exact key (id, workspace): an
 * item of another workspace with the same id is never touched.
 */
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb';
import { RetriableError } from '#shared/domain/errors.ts';
import { decodeCursorJson, encodeCursor } from '#shared/domain/record-rules.ts';
import * as z from '#shared/domain/zod.ts';
import type { DeletionJob, SweepPage, WorkspaceSweeper } from '#shared/ports/workspace-deletion.ts';
import { defaultDocumentClient, translate } from './client.ts';
import { TableReads } from './table-reads.ts';
import { type IndexedItem, workspaceIndexComplete, workspaceItemsPage } from './workspace-index.ts';
import { DELETION_RECORD_KIND, deletionRecordKey, workspaceSeals } from './workspace-seal.ts';

/** Items per sweep page: 500 keeps a page to 20 batch writes (and a Scan page below its 1 MB). */
export const SWEEP_PAGE = 500;
const BATCH = 25;

type Key = { id: string; workspace: string };

/** The job as the record holds it (the record's own attributes beside it are left out). */
const DeletionJobSchema = z.pipe(
  z.object({
    phase: z.enum(['check', 'definitions', 'rules', 'seal', 'timers', 'secrets', 'sweep']),
    cursor: z.optional(z.string()),
    step: z.number(),
    started_at: z.string(),
    started_by: z.string(),
    phase_started_at: z.string(),
    force: z.boolean(),
    deleted: z.number(),
    timers_cancelled: z.optional(z.number()),
    sealed_at: z.optional(z.string()),
    pass: z.optional(z.number()),
    swept_at: z.optional(z.string()),
    done_at: z.optional(z.string()),
  }),
  z.transform((job): DeletionJob => job),
);

export class DynamoWorkspaceSweeper implements WorkspaceSweeper {
  private readonly client: DynamoDBDocumentClient;
  private readonly reads: TableReads;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
    private readonly pageSize = SWEEP_PAGE,
  ) {
    this.client = client ?? defaultDocumentClient();
    this.reads = new TableReads(this.client, tableName);
  }

  async readJob(workspace: string): Promise<DeletionJob | undefined> {
    const item = await this.reads.getItem(deletionRecordKey(workspace));
    if (!item || item.kind !== DELETION_RECORD_KIND) return undefined;
    // A tombstone that has ended is no deletion any more (TTL removes the item later).
    if (typeof item.expires_at === 'number' && item.expires_at * 1000 <= Date.now()) return undefined;
    return DeletionJobSchema.parse(item);
  }

  async writeJob(workspace: string, job: DeletionJob, expectedStep: number | undefined): Promise<boolean> {
    return this.putRecord(workspace, job, expectedStep, undefined);
  }

  async finishJob(workspace: string, job: DeletionJob, expectedStep: number, until: Date): Promise<boolean> {
    return this.putRecord(workspace, job, expectedStep, Math.floor(until.getTime() / 1000));
  }

  async deleteJob(workspace: string): Promise<void> {
    await attempt(
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: deletionRecordKey(workspace) })),
    );
    workspaceSeals(this.client).forget(this.tableName, workspace);
  }

  /**
   * The record, conditional on the step read (none: no record, or one whose tombstone ended). A record with a seal
   * is what every writer checks: this process knows it at once.
   */
  private async putRecord(
    workspace: string,
    job: DeletionJob,
    expectedStep: number | undefined,
    expiresAt: number | undefined,
  ): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...job,
            ...deletionRecordKey(workspace),
            kind: DELETION_RECORD_KIND,
            ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
          },
          ...(expectedStep === undefined
            ? {
                ConditionExpression: 'attribute_not_exists(id) OR expires_at <= :now',
                ExpressionAttributeValues: { ':now': Math.floor(Date.now() / 1000) },
              }
            : {
                ConditionExpression: '#step = :step',
                ExpressionAttributeNames: { '#step': 'step' },
                ExpressionAttributeValues: { ':step': expectedStep },
              }),
        }),
      );
      workspaceSeals(this.client).forget(this.tableName, workspace);
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw translate(error);
    }
  }

  async sweep(workspace: string, cursor: string | undefined): Promise<SweepPage> {
    const position = cursor === undefined ? await this.firstPosition() : decodeSweepCursor(cursor);
    const page =
      position.m === 'index'
        ? await this.indexPage(workspace, position.c)
        : await this.scanPage(workspace, position.c);
    const keys = page.items.map((item) => ({ id: item.id, workspace }));
    for (let i = 0; i < keys.length; i += BATCH) await this.deleteBatch(keys.slice(i, i + BATCH));
    return {
      deleted: keys.length,
      scanned: position.m === 'scan',
      ...(page.cursor !== undefined ? { cursor: encodeCursor({ m: position.m, c: page.cursor }) } : {}),
    };
  }

  /** The index when the table's is complete; otherwise the Scan that finds items written before it. */
  private async firstPosition(): Promise<SweepPosition> {
    return { m: (await workspaceIndexComplete(this.client, this.tableName)) ? 'index' : 'scan' };
  }

  private indexPage(workspace: string, cursor: string | undefined) {
    return workspaceItemsPage(this.reads, workspace, cursor, this.pageSize);
  }

  private async scanPage(
    workspace: string,
    cursor: string | undefined,
  ): Promise<{ items: IndexedItem[]; cursor?: string }> {
    const out = await attempt(
      this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: '#ws = :ws',
          ExpressionAttributeValues: { ':ws': workspace },
          ExpressionAttributeNames: { '#ws': 'workspace', '#id': 'id', '#kind': 'kind' },
          ProjectionExpression: '#id, #ws, #kind',
          Limit: this.pageSize,
          ...(cursor !== undefined ? { ExclusiveStartKey: decodeCursorJson(cursor) as Key } : {}),
        }),
      ),
    );
    // The filter already said so; checked again because these keys are deleted unconditionally.
    const items = (out.Items ?? [])
      .filter((i) => i.workspace === workspace && typeof i.id === 'string')
      .map((i) => ({ id: String(i.id), ...(typeof i.kind === 'string' ? { kind: i.kind } : {}) }));
    return {
      items,
      ...(out.LastEvaluatedKey ? { cursor: encodeCursor(out.LastEvaluatedKey) } : {}),
    };
  }

  private async deleteBatch(keys: Key[]): Promise<void> {
    let pending = keys.map((Key) => ({ DeleteRequest: { Key } }));
    for (let round = 0; pending.length > 0; round++) {
      if (round >= 8) throw new RetriableError('DynamoDB left deletes of the workspace unprocessed');
      if (round > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** round));
      const out = await attempt(
        this.client.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } })),
      );
      pending = (out.UnprocessedItems?.[this.tableName] as typeof pending | undefined) ?? [];
    }
  }
}

/** Where a sweep stands: which enumeration it reads (fixed for the whole sweep), and its position in it. */
interface SweepPosition {
  m: 'index' | 'scan';
  c?: string;
}

function decodeSweepCursor(cursor: string): SweepPosition {
  const value = decodeCursorJson(cursor) as SweepPosition | null;
  if (value === null || typeof value !== 'object' || (value.m !== 'index' && value.m !== 'scan')) {
    throw new Error('not a sweep position');
  }
  return value;
}

async function attempt<T>(request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (error) {
    throw translate(error);
  }
}
