/**
 * DynamoDB adapter of the claims port (`shared/ports/claims.ts`).
 *
 * A claim is an item in the breadcrumbs table (`#claim#<executor>#<trigger id>@<version>`, `kind: claim`; see
 * `shared/adapters/dynamodb/table-design.md`). Acquiring is one conditional put that succeeds when there is no
 * claim yet, or when the claim is still `running` but its lease has run out (the worker that held it crashed or
 * timed out). Completing sets `done`; releasing deletes a claim still held under the caller's token.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { ClaimKey, ClaimOutcome, Claims } from '#shared/ports/claims.ts';
import { defaultDocumentClient, translate } from './client.ts';
import { claimCompletion, KIND, keys } from './items.ts';

/** Claims are kept a week: long past any SQS retention, so a late redelivery still finds `done`. */
const CLAIM_TTL_SECONDS = 7 * 24 * 60 * 60;

export function claimId(key: ClaimKey): string {
  return keys.claim(key).id;
}

export class DynamoClaims implements Claims {
  private readonly client: DynamoDBDocumentClient;
  private readonly clock: Clock;

  constructor(
    private readonly tableName: string,
    options: { client?: DynamoDBDocumentClient; clock?: Clock } = {},
  ) {
    this.client = options.client ?? defaultDocumentClient();
    this.clock = options.clock ?? systemClock;
  }

  async acquire(key: ClaimKey, leaseMs: number): Promise<ClaimOutcome> {
    const now = this.clock.now().getTime();
    const token = randomUUID();
    const dbKey = { id: claimId(key), workspace: key.workspace };
    try {
      const previous = await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...dbKey,
            kind: KIND.claim,
            state: 'running',
            token,
            lease_until: now + leaseMs,
            claimed_at: new Date(now).toISOString(),
            expires_at: Math.floor(now / 1000) + CLAIM_TTL_SECONDS,
          },
          ConditionExpression: 'attribute_not_exists(id) OR (#state = :running AND lease_until < :now)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':running': 'running', ':now': now },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return { status: 'acquired', token, takeover: previous.Attributes !== undefined };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw translate(error);
    }
    const current = await this.client
      .send(new GetCommand({ TableName: this.tableName, Key: dbKey, ConsistentRead: true }))
      .catch((error: unknown) => {
        throw translate(error);
      });
    if (current.Item?.state === 'done') return { status: 'done' };
    // Running under someone else's live lease (or it vanished between the two calls: let the retry decide).
    return { status: 'busy', leaseUntil: Number(current.Item?.lease_until ?? now) };
  }

  async complete(key: ClaimKey, token: string): Promise<void> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          ...claimCompletion(key, token, this.clock.now().toISOString()),
          ConditionExpression: 'attribute_exists(id)',
        }),
      );
    } catch (error) {
      // The claim expired (TTL) in between: nothing left to mark.
      if (error instanceof ConditionalCheckFailedException) return;
      throw translate(error);
    }
  }

  async release(key: ClaimKey, token: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { id: claimId(key), workspace: key.workspace },
          ConditionExpression: '#state = :running AND #token = :token',
          ExpressionAttributeNames: { '#state': 'state', '#token': 'token' },
          ExpressionAttributeValues: { ':running': 'running', ':token': token },
        }),
      );
    } catch (error) {
      // Someone else holds it now, or it is done: not ours to release.
      if (error instanceof ConditionalCheckFailedException) return;
      throw translate(error);
    }
  }
}
