/**
 * DynamoDB adapter of the rate cells (`shared/ports/rate-cells.ts`): one item per workspace and key,
 * `#rate#<key>` (kind `rate`, table-design.md), holding the GCRA TAT in epoch ms.
 *
 * GCRA needs `max(tat, now)`, which an update expression cannot compute, so a take is one of two conditional
 * UpdateItems, the likelier first (by the instance's last seen TAT):
 * - busy (`now <= tat <= now + capacity - increment`): `SET tat = tat + :increment`;
 * - idle (no item, or `tat < now`): `SET tat = :now + :increment` (when `increment <= capacity`).
 * A failed condition returns the item (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, one request, no read), which
 * says whether the other case applies or the take is refused: an admitted take is one write unit, a refusal one
 * more (a failed condition is billed as a write). The item expires (TTL) a day after its TAT, so a quiet workspace
 * leaves nothing behind. The publisher's stream filter passes these items over (their `kind` is not `breadcrumb`).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RateCells, RateTake, RateTakeResult } from '#shared/ports/rate-cells.ts';
import { defaultDocumentClient, translate } from './breadcrumb-store.ts';
import { KIND } from './items.ts';

const EXPIRY_SECONDS = 24 * 60 * 60;

export class DynamoRateCells implements RateCells {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async take(workspace: string, key: string, request: RateTake): Promise<RateTakeResult> {
    const { now, incrementMs, capacityMs } = request;
    const maxTat = now + capacityMs - incrementMs;
    if (maxTat < now) {
      // A cost larger than the whole burst never fits: nothing to write.
      return { admitted: false, tat: request.hintTat ?? now };
    }
    let busyFirst = (request.hintTat ?? 0) >= now;
    // Two attempts settle it unless another instance moves the cell between them; a few more settle races.
    for (let attempt = 0; attempt < 4; attempt++) {
      const outcome = busyFirst
        ? await this.busy(workspace, key, request, maxTat)
        : await this.idle(workspace, key, request);
      if (outcome.admitted) return outcome;
      const seen = outcome.tat;
      if (seen === undefined || seen < now) busyFirst = false;
      else if (seen <= maxTat) busyFirst = true;
      else return { admitted: false, tat: seen };
    }
    // Other instances moved the cell between every attempt: it is busy, not shown full. Admit (the limit fails open,
    // as when the table cannot be reached) rather than refuse on no evidence.
    return { admitted: true, tat: Math.max(request.hintTat ?? now, now) };
  }

  private async busy(
    workspace: string,
    key: string,
    request: RateTake,
    maxTat: number,
  ): Promise<{ admitted: true; tat: number } | { admitted: false; tat: number | undefined }> {
    return this.update(workspace, key, {
      UpdateExpression: 'SET tat = tat + :inc, #kind = :kind, expires_at = :exp',
      ConditionExpression: 'tat BETWEEN :now AND :max',
      ExpressionAttributeValues: {
        ':inc': request.incrementMs,
        ':now': request.now,
        ':max': maxTat,
      },
      expiresAt: Math.ceil((maxTat + request.incrementMs) / 1000) + EXPIRY_SECONDS,
    });
  }

  private async idle(
    workspace: string,
    key: string,
    request: RateTake,
  ): Promise<{ admitted: true; tat: number } | { admitted: false; tat: number | undefined }> {
    const tat = request.now + request.incrementMs;
    return this.update(workspace, key, {
      UpdateExpression: 'SET tat = :tat, #kind = :kind, expires_at = :exp',
      ConditionExpression: 'attribute_not_exists(tat) OR tat < :now',
      ExpressionAttributeValues: { ':tat': tat, ':now': request.now },
      expiresAt: Math.ceil(tat / 1000) + EXPIRY_SECONDS,
    });
  }

  private async update(
    workspace: string,
    key: string,
    u: {
      UpdateExpression: string;
      ConditionExpression: string;
      ExpressionAttributeValues: Record<string, number>;
      expiresAt: number;
    },
  ): Promise<{ admitted: true; tat: number } | { admitted: false; tat: number | undefined }> {
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: `#rate#${key}`, workspace },
          UpdateExpression: u.UpdateExpression,
          ConditionExpression: u.ConditionExpression,
          ExpressionAttributeNames: { '#kind': 'kind' },
          ExpressionAttributeValues: {
            ...u.ExpressionAttributeValues,
            ':kind': KIND.rate,
            ':exp': u.expiresAt,
          },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { admitted: true, tat: Number(out.Attributes?.tat) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return { admitted: false, tat: tatOf(error.Item) };
      }
      throw translate(error);
    }
  }
}

/** The TAT of the item a failed condition returned (raw attribute values: the document client leaves errors alone). */
function tatOf(item: Record<string, unknown> | undefined): number | undefined {
  const raw = item?.tat as { N?: string } | number | undefined;
  const n = typeof raw === 'number' ? raw : raw?.N !== undefined ? Number(raw.N) : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}
