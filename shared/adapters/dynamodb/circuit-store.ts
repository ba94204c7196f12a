/**
 * The CircuitStore port on the breadcrumbs table: one item per partner and workspace, `#circuit#<key>` (kind
 * `circuit`, see table-design.md), written with a condition on its `version`, so concurrent Lambda instances
 * agree on one state. The publisher ignores these items (their id has a `#`), and they expire a week after
 * their last write (a partner nobody calls needs no circuit).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { CircuitState, CircuitStore, StoredCircuit } from '#shared/ports/circuit-store.ts';
import { defaultDocumentClient } from './client.ts';
import { KIND } from './items.ts';

const TTL_SECONDS = 7 * 24 * 60 * 60;

export function circuitItemId(key: string): string {
  return `#circuit#${key}`;
}

export class DynamoCircuitStore implements CircuitStore {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async get(workspace: string, key: string): Promise<StoredCircuit | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { id: circuitItemId(key), workspace },
        ConsistentRead: true,
      }),
    );
    const item = out.Item;
    if (!item) return undefined;
    return { circuit: item.circuit as CircuitState, version: Number(item.version) };
  }

  async put(
    workspace: string,
    key: string,
    circuit: CircuitState,
    expectedVersion: number,
  ): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            id: circuitItemId(key),
            workspace,
            kind: KIND.circuit,
            circuit,
            version: expectedVersion + 1,
            expires_at: Math.floor(Date.now() / 1000) + TTL_SECONDS,
          },
          ConditionExpression: expectedVersion === 0 ? 'attribute_not_exists(id)' : '#version = :expected',
          ...(expectedVersion === 0
            ? {}
            : {
                ExpressionAttributeNames: { '#version': 'version' },
                ExpressionAttributeValues: { ':expected': expectedVersion },
              }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}
