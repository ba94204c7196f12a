/**
 * The WorkspaceQuotas port on the breadcrumbs table (kinds `quota` and `quota-slot`, see table-design.md): per
 * workspace and quota one counter item `#quota#<quota>` holding `used`, and one item `#quota#<quota>#<member>` per
 * member holding a slot. Taking a slot is one transaction: the member's item (only if absent) and `used + 1` (only
 * if below the limit), so two definitions asking for the last slot at once cannot both get it, and a retried
 * take counts once; giving one back deletes the member's item (only if present) and subtracts one. A member's own
 * item is read first, so reconciling a definition that already holds its slot (most reconciles) writes nothing.
 * The publisher ignores these items (their id has a `#`); nobody writes them through the API.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { RetriableError } from '#shared/domain/errors.ts';
import type { QuotaName, WorkspaceQuotas } from '#shared/ports/workspace-quotas.ts';
import { defaultDocumentClient } from './client.ts';
import { KIND } from './items.ts';

const MAX_ATTEMPTS = 8;

export const quotaItemId = (quota: QuotaName): string => `#quota#${quota}`;
export const quotaSlotId = (quota: QuotaName, member: string): string => `#quota#${quota}#${member}`;

export class DynamoWorkspaceQuotas implements WorkspaceQuotas {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async acquire(workspace: string, quota: QuotaName, member: string, limit: number): Promise<boolean> {
    if (await this.holds(workspace, quota, member)) return true;
    const codes = await this.transact([
      {
        Put: {
          TableName: this.tableName,
          Item: {
            id: quotaSlotId(quota, member),
            workspace,
            kind: KIND.quotaSlot,
            acquired_at: new Date().toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(id)',
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: { id: quotaItemId(quota), workspace },
          UpdateExpression: 'SET #used = if_not_exists(#used, :zero) + :one, #kind = :kind',
          ConditionExpression: 'attribute_not_exists(#used) OR #used < :limit',
          ExpressionAttributeNames: { '#used': 'used', '#kind': 'kind' },
          ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':limit': limit, ':kind': KIND.quota },
        },
      },
    ]);
    if (codes === undefined) return true;
    // The member's item appeared meanwhile (a concurrent take for the same member): it holds its slot.
    if (codes[0] === 'ConditionalCheckFailed') return true;
    return false;
  }

  async release(workspace: string, quota: QuotaName, member: string): Promise<void> {
    if (!(await this.holds(workspace, quota, member))) return;
    await this.transact([
      {
        Delete: {
          TableName: this.tableName,
          Key: { id: quotaSlotId(quota, member), workspace },
          ConditionExpression: 'attribute_exists(id)',
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: { id: quotaItemId(quota), workspace },
          UpdateExpression: 'SET #used = #used - :one',
          ConditionExpression: '#used > :zero',
          ExpressionAttributeNames: { '#used': 'used' },
          ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
        },
      },
    ]);
  }

  async used(workspace: string, quota: QuotaName): Promise<number> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { id: quotaItemId(quota), workspace },
        ConsistentRead: true,
      }),
    );
    return Number(out.Item?.used ?? 0);
  }

  private async holds(workspace: string, quota: QuotaName, member: string): Promise<boolean> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { id: quotaSlotId(quota, member), workspace },
        ConsistentRead: true,
        ProjectionExpression: 'id',
      }),
    );
    return out.Item !== undefined;
  }

  /** Runs the transaction; undefined when it went through, else the cancellation codes of a failed condition. */
  private async transact(
    items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>,
  ): Promise<string[] | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(new TransactWriteCommand({ TransactItems: items }));
        return undefined;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw error;
        const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
        if (codes.includes('ConditionalCheckFailed')) return codes;
        // TransactionConflict: another take or give-back on the same counter; try again after a short pause.
        if (attempt >= MAX_ATTEMPTS) {
          throw new RetriableError(`DynamoDB kept cancelling the quota update (${codes.join(', ')})`, {
            cause: error,
          });
        }
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * 2 ** Math.min(attempt, 5)));
      }
    }
  }
}
