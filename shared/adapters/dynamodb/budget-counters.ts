/**
 * DynamoDB adapter of the breadth budget's counters (`shared/core/stream/breadth-budget.ts`): one item per workspace and
 * budget key, `#budget#<key>` (kind `budget`, see table-design.md), added to with one UpdateItem ADD that returns
 * the new total. The publisher's stream filter passes these items over (they have a `kind` other than
 * `breadcrumb`), and they expire with the window or thread they count.
 */
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BudgetCounters } from '#shared/ports/budget-counters.ts';
import { defaultDocumentClient, translate } from './client.ts';
import { KIND } from './items.ts';

export class DynamoBudgetCounters implements BudgetCounters {
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
}
