/**
 * The wait index (`shared/ports/wait-index.ts`) on the breadcrumbs table: one item per (workspace, workflow, step,
 * correlation value), `#wait#<sha256 of workflow, step, value>` (kind `wait-index`), holding the waiting attempts
 * in a map (`waiters`) and their count (`n`). One item per key rather than one per attempt: the table's sort key is
 * the workspace, so the attempts of one key can only be read together, strongly consistently, as one item (a
 * GetItem), where a GSI listing would trail the stream and lose a write that lands just after a wait starts.
 * Adding and removing an attempt are single conditional UpdateItems; `n` bounds the item (MAX_WAITERS_PER_KEY
 * attempts of ~200 bytes each stay far below 400 KB). The item carries `workspace`, so deleting the workspace
 * sweeps it with everything else (`workspace-sweeper.ts`), and `kind`, so the publisher passes it over.
 */
import { createHash } from 'node:crypto';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  byOldestWait,
  correlationText,
  MAX_WAITERS_PER_KEY,
  type Waiter,
  type WaitIndex,
  WaitIndexFullError,
  type WaitKey,
} from '#shared/ports/wait-index.ts';
import { defaultDocumentClient, translate } from './client.ts';
import { KIND } from './items.ts';

export function waitItemId(key: WaitKey): string {
  const digest = createHash('sha256')
    .update(`${key.workflow}\u0000${key.step}\u0000${correlationText(key.correlation)}`)
    .digest('hex')
    .slice(0, 40);
  return `#wait#${digest}`;
}

function conditionFailed(error: unknown): boolean {
  return (error as { name?: string } | undefined)?.name === 'ConditionalCheckFailedException';
}

export class DynamoWaitIndex implements WaitIndex {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
    private readonly maxPerKey = MAX_WAITERS_PER_KEY,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async add(key: WaitKey, waiter: Waiter): Promise<void> {
    const Key = { id: waitItemId(key), workspace: key.workspace };
    for (let round = 0; round < 3; round++) {
      try {
        await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key,
            UpdateExpression: 'SET waiters.#a = :w ADD #n :one',
            ConditionExpression:
              'attribute_exists(waiters) AND attribute_not_exists(waiters.#a) AND #n < :max',
            ExpressionAttributeNames: { '#a': waiter.attempt_id, '#n': 'n' },
            ExpressionAttributeValues: { ':w': { ...waiter }, ':one': 1, ':max': this.maxPerKey },
          }),
        );
        return;
      } catch (error) {
        if (!conditionFailed(error)) throw translate(error);
      }
      // Why the condition failed: no item yet, the attempt already there (a replay), or the key full.
      const item = await this.read(Key);
      if (item === undefined) {
        try {
          await this.client.send(
            new PutCommand({
              TableName: this.tableName,
              Item: {
                ...Key,
                kind: KIND.waitIndex,
                workflow: key.workflow,
                step: key.step,
                correlation: correlationText(key.correlation),
                waiters: { [waiter.attempt_id]: { ...waiter } },
                n: 1,
              },
              ConditionExpression: 'attribute_not_exists(id)',
            }),
          );
          return;
        } catch (error) {
          if (!conditionFailed(error)) throw translate(error);
          continue;
        }
      }
      if (item.waiters[waiter.attempt_id] !== undefined) return;
      if (item.n >= this.maxPerKey) {
        throw new WaitIndexFullError(
          `${this.maxPerKey} runs already wait on step "${key.step}" of workflow ${key.workflow} for ${correlationText(key.correlation)}`,
        );
      }
    }
    throw translate(new Error(`the wait index entry of ${waiter.attempt_id} kept changing`));
  }

  async remove(key: WaitKey, attemptId: string): Promise<void> {
    const Key = { id: waitItemId(key), workspace: key.workspace };
    let left: number;
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key,
          UpdateExpression: 'REMOVE waiters.#a ADD #n :minus',
          ConditionExpression: 'attribute_exists(waiters.#a)',
          ExpressionAttributeNames: { '#a': attemptId, '#n': 'n' },
          ExpressionAttributeValues: { ':minus': -1 },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      left = Number(out.Attributes?.n ?? 0);
    } catch (error) {
      if (conditionFailed(error)) return;
      throw translate(error);
    }
    if (left > 0) return;
    // The last attempt went: the item goes too, unless one was added meanwhile.
    await this.client
      .send(
        new DeleteCommand({
          TableName: this.tableName,
          Key,
          ConditionExpression: '#n <= :zero',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':zero': 0 },
        }),
      )
      .catch((error: unknown) => {
        if (!conditionFailed(error)) throw translate(error);
      });
  }

  async waiting(key: WaitKey): Promise<Waiter[]> {
    const item = await this.read({ id: waitItemId(key), workspace: key.workspace });
    return item === undefined ? [] : Object.values(item.waiters).sort(byOldestWait);
  }

  private async read(Key: { id: string; workspace: string }) {
    const out = await this.client
      .send(new GetCommand({ TableName: this.tableName, Key, ConsistentRead: true }))
      .catch((error: unknown) => {
        throw translate(error);
      });
    const item = out.Item;
    if (item === undefined || item.kind !== KIND.waitIndex) return undefined;
    return { waiters: (item.waiters ?? {}) as Record<string, Waiter>, n: Number(item.n ?? 0) };
  }
}
