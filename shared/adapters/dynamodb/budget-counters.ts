/**
 * DynamoDB adapter of the budget counters (`shared/ports/budget-counters.ts`): one item per workspace and budget key,
 * `#budget#<key>` (kind `budget`, see table-design.md). The publisher's stream filter passes these items over (they
 * have a `kind` other than `breadcrumb`), and they expire with the window, thread or day they count.
 *
 * - The breadth budget's counters (`count`): one UpdateItem ADD that returns the new total; executors read one
 *   with a GetItem.
 * - A day's model spend (`committed`, `spent`, `calls`): a reservation is one UpdateItem ADD conditional on the
 *   total staying within the limit (a refusal costs one more, strongly consistent, GetItem to learn the figures);
 *   a settlement is one unconditional UpdateItem ADD of the three fields.
 */
import {
  type DynamoDBDocumentClient,
  GetCommand,
  type NativeAttributeValue,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { BudgetCounters, SpendCounter, SpendCounters } from '#shared/ports/budget-counters.ts';
import { defaultDocumentClient, translate } from './breadcrumb-store.ts';
import { KIND } from './items.ts';

export class DynamoBudgetCounters implements BudgetCounters, SpendCounters {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async add(workspace: string, key: string, n: number, expiresAt: number): Promise<number> {
    const out = await this.client
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: `#budget#${key}`, workspace },
          UpdateExpression: 'ADD #count :n SET #kind = :kind, expires_at = :exp',
          ExpressionAttributeNames: { '#count': 'count', '#kind': 'kind' },
          ExpressionAttributeValues: { ':n': n, ':kind': KIND.budget, ':exp': expiresAt },
          ReturnValues: 'UPDATED_NEW',
        }),
      )
      .catch((error: unknown) => {
        throw translate(error);
      });
    return Number(out.Attributes?.count ?? n);
  }

  async read(workspace: string, key: string): Promise<number> {
    const item = await this.get(workspace, key, false);
    return Number(item?.count ?? 0);
  }

  async reserve(
    workspace: string,
    key: string,
    amount: number,
    max: number,
    expiresAt: number,
  ): Promise<{ reserved: boolean; counter: SpendCounter }> {
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: `#budget#${key}`, workspace },
          UpdateExpression: 'ADD #committed :n SET #kind = :kind, expires_at = :exp',
          ConditionExpression: 'attribute_not_exists(#committed) OR #committed <= :max',
          ExpressionAttributeNames: { '#committed': 'committed', '#kind': 'kind' },
          ExpressionAttributeValues: { ':n': amount, ':max': max, ':kind': KIND.budget, ':exp': expiresAt },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { reserved: true, counter: spendOf(out.Attributes) };
    } catch (error) {
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw translate(error);
      return { reserved: false, counter: spendOf(await this.get(workspace, key, true)) };
    }
  }

  async settle(workspace: string, key: string, change: SpendCounter, expiresAt: number): Promise<void> {
    await this.client
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: `#budget#${key}`, workspace },
          UpdateExpression:
            'ADD #committed :committed, #spent :spent, #calls :calls SET #kind = :kind, expires_at = :exp',
          ExpressionAttributeNames: {
            '#committed': 'committed',
            '#spent': 'spent',
            '#calls': 'calls',
            '#kind': 'kind',
          },
          ExpressionAttributeValues: {
            ':committed': change.committed,
            ':spent': change.spent,
            ':calls': change.calls,
            ':kind': KIND.budget,
            ':exp': expiresAt,
          },
        }),
      )
      .catch((error: unknown) => {
        throw translate(error);
      });
  }

  async readSpend(workspace: string, key: string): Promise<SpendCounter> {
    return spendOf(await this.get(workspace, key, true));
  }

  private async get(
    workspace: string,
    key: string,
    consistent: boolean,
  ): Promise<Record<string, NativeAttributeValue> | undefined> {
    const out = await this.client
      .send(
        new GetCommand({
          TableName: this.tableName,
          Key: { id: `#budget#${key}`, workspace },
          ConsistentRead: consistent,
        }),
      )
      .catch((error: unknown) => {
        throw translate(error);
      });
    return out.Item;
  }
}

function spendOf(item: Record<string, NativeAttributeValue> | undefined): SpendCounter {
  return {
    committed: Number(item?.committed ?? 0),
    spent: Number(item?.spent ?? 0),
    calls: Number(item?.calls ?? 0),
  };
}
