/**
 * The WorkspaceSweeper port on the breadcrumbs table: the deletion job's progress item (`#deletion-job`, kind
 * `deletion-job`, written conditionally on its step so two calls cannot both advance it) and the sweep that deletes
 * every item of one workspace. The table's partition key is `id` and its sort key `workspace`, and auxiliary items
 * (claims, idempotency keys, circuits, budgets, usage, embeddings, …) sit in no per-workspace index, so the only
 * enumeration that finds every kind — including kinds added later — is a Scan filtered on `workspace`. It is read
 * one bounded page a call (`SCAN_PAGE` items examined), its position kept in the job, so each API call stays well
 * inside Lambda's and API Gateway's limits and a deletion reads the table once in all. Deletes name the exact key
 * (id, workspace): an item of another workspace with the same id is never touched.
 */
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb';
import { RetriableError } from '#shared/domain/errors.ts';
import { decodeCursorJson, encodeCursor } from '#shared/domain/record-rules.ts';
import type { DeletionJob, WorkspaceSweeper } from '#shared/ports/workspace-deletion.ts';
import { defaultDocumentClient, translate } from './breadcrumb-store.ts';
import { KIND } from './items.ts';

export const DELETION_JOB_ID = '#deletion-job';
const JOB_KIND = 'deletion-job';
/** Items examined per sweep page: a Scan page stops at 1 MB anyway; 500 keeps a page to ~20 batch writes. */
export const SCAN_PAGE = 500;
const BATCH = 25;

type Key = { id: string; workspace: string };

export class DynamoWorkspaceSweeper implements WorkspaceSweeper {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
    private readonly scanPage = SCAN_PAGE,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async readJob(workspace: string): Promise<DeletionJob | undefined> {
    const out = await attempt(
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { id: DELETION_JOB_ID, workspace },
          ConsistentRead: true,
        }),
      ),
    );
    const item = out.Item;
    if (!item || item.kind !== JOB_KIND) return undefined;
    const { id: _id, workspace: _ws, kind: _kind, ...job } = item;
    return job as DeletionJob;
  }

  async writeJob(workspace: string, job: DeletionJob, expectedStep: number | undefined): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...job, id: DELETION_JOB_ID, workspace, kind: JOB_KIND },
          ...(expectedStep === undefined
            ? { ConditionExpression: 'attribute_not_exists(id)' }
            : {
                ConditionExpression: '#step = :step',
                ExpressionAttributeNames: { '#step': 'step' },
                ExpressionAttributeValues: { ':step': expectedStep },
              }),
        }),
      );
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw translate(error);
    }
  }

  async deleteJob(workspace: string): Promise<void> {
    await attempt(
      this.client.send(
        new DeleteCommand({ TableName: this.tableName, Key: { id: DELETION_JOB_ID, workspace } }),
      ),
    );
  }

  async sweep(
    workspace: string,
    cursor: string | undefined,
  ): Promise<{ deleted: number; heads: number; cursor?: string }> {
    const out = await attempt(
      this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: '#ws = :ws AND #id <> :job',
          ExpressionAttributeValues: { ':ws': workspace, ':job': DELETION_JOB_ID },
          ExpressionAttributeNames: { '#ws': 'workspace', '#id': 'id', '#kind': 'kind' },
          ProjectionExpression: '#id, #ws, #kind',
          Limit: this.scanPage,
          ...(cursor !== undefined ? { ExclusiveStartKey: decodeCursorJson(cursor) as Key } : {}),
        }),
      ),
    );
    // The filter already said so; checked again because these keys are deleted unconditionally.
    const items = (out.Items ?? []).filter((i) => i.workspace === workspace && i.id !== DELETION_JOB_ID);
    const keys = items.map((item) => ({ id: String(item.id), workspace }));
    for (let i = 0; i < keys.length; i += BATCH) await this.deleteBatch(keys.slice(i, i + BATCH));
    return {
      deleted: keys.length,
      heads: items.filter((i) => i.kind === KIND.breadcrumb).length,
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

async function attempt<T>(request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (error) {
    throw translate(error);
  }
}
