/**
 * DynamoDB adapter of a workspace's executor slots (`shared/core/executor/workspace-slots.ts`): one item per
 * workspace and executor function, `#slots#<function>` (kind `slots`, see table-design.md), whose `holders` map
 * holds each live holder's lease end. Taking is one conditional UpdateItem (`size(holders) < cap`); only when that
 * fails does it read the item, remove leases that ran out (each conditioned on its value) and try once more.
 * Giving back removes the holder. Only work that outlives the grace period comes here.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { WorkspaceSlots } from '#shared/ports/workspace-slots.ts';
import { defaultDocumentClient, translate } from './client.ts';
import { KIND } from './items.ts';

/** Slot items outlive their last lease by a day (a workspace that stops calling needs none). */
const TTL_SECONDS = 24 * 60 * 60;

export class DynamoWorkspaceSlots implements WorkspaceSlots {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    private readonly fn: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  private key(workspace: string) {
    return { id: `#slots#${this.fn}`, workspace };
  }

  async take(workspace: string, holder: string, until: number, cap: number, now: number): Promise<boolean> {
    if (await this.tryTake(workspace, holder, until, cap)) return true;
    const current = await this.client
      .send(new GetCommand({ TableName: this.tableName, Key: this.key(workspace), ConsistentRead: true }))
      .catch((error: unknown) => {
        throw translate(error);
      });
    if (!current.Item) {
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...this.key(workspace),
              kind: KIND.slots,
              holders: { [holder]: until },
              expires_at: Math.floor(until / 1000) + TTL_SECONDS,
            },
            ConditionExpression: 'attribute_not_exists(id)',
          }),
        );
        return true;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw translate(error);
        return this.tryTake(workspace, holder, until, cap);
      }
    }
    const holders = (current.Item.holders ?? {}) as Record<string, number>;
    // Created by a concurrent taker between our first try and the read, with room left: try again.
    if (Object.keys(holders).length < cap) return this.tryTake(workspace, holder, until, cap);
    const expired = Object.entries(holders).filter(([, end]) => Number(end) < now);
    if (expired.length === 0) return false;
    const names: Record<string, string> = {};
    const values: Record<string, number> = {};
    const conditions: string[] = [];
    expired.slice(0, 50).forEach(([h, end], i) => {
      names[`#h${i}`] = h;
      values[`:v${i}`] = end;
      conditions.push(`holders.#h${i} = :v${i}`);
    });
    await this.client
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(workspace),
          UpdateExpression: `REMOVE ${Object.keys(names)
            .map((n) => `holders.${n}`)
            .join(', ')}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      )
      .catch((error: unknown) => {
        if (!(error instanceof ConditionalCheckFailedException)) throw translate(error);
      });
    return this.tryTake(workspace, holder, until, cap);
  }

  private async tryTake(workspace: string, holder: string, until: number, cap: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(workspace),
          UpdateExpression: 'SET holders.#h = :until, expires_at = :exp',
          ConditionExpression: 'size(holders) < :cap',
          ExpressionAttributeNames: { '#h': holder },
          ExpressionAttributeValues: {
            ':until': until,
            ':cap': cap,
            ':exp': Math.floor(until / 1000) + TTL_SECONDS,
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw translate(error);
    }
  }

  async give(workspace: string, holder: string): Promise<void> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(workspace),
          UpdateExpression: 'REMOVE holders.#h',
          ConditionExpression: 'attribute_exists(holders)',
          ExpressionAttributeNames: { '#h': holder },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw translate(error);
    }
  }
}
