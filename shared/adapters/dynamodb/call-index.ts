/**
 * The CallIndex port on the breadcrumbs table: one item per (workspace, caller, JSON-RPC id), `#mcpcall#<hash>`
 * (kind `mcp-call`, table-design.md), put over any earlier one and expiring an hour after it was written. Only
 * calls that can be stopped write one (an agent's streamed answer, `shared/core/mcp/cancel.ts`): one small PutItem
 * per such call, one GetItem per cancel. The publisher ignores these items (their id has a `#`).
 */
import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CALL_INDEX_TTL_SECONDS, type CallIndex } from '#shared/ports/call-index.ts';
import { defaultDocumentClient } from './breadcrumb-store.ts';
import { KIND } from './items.ts';

export function callItemId(caller: string, callId: string | number): string {
  const key = createHash('sha256')
    .update(`${caller}\u0000${JSON.stringify(callId)}`)
    .digest('hex');
  return `#mcpcall#${key.slice(0, 40)}`;
}

export class DynamoCallIndex implements CallIndex {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
    private readonly now: () => number = Date.now,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async put(workspace: string, caller: string, callId: string | number, requestId: string): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          id: callItemId(caller, callId),
          workspace,
          kind: KIND.mcpCall,
          request_id: requestId,
          expires_at: Math.floor(this.now() / 1000) + CALL_INDEX_TTL_SECONDS,
        },
      }),
    );
  }

  async get(workspace: string, caller: string, callId: string | number): Promise<string | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { id: callItemId(caller, callId), workspace },
        ConsistentRead: true,
      }),
    );
    const item = out.Item;
    // DynamoDB's TTL sweep lags: an expired entry reads as gone.
    if (item === undefined || Number(item.expires_at) * 1000 <= this.now()) return undefined;
    return typeof item.request_id === 'string' ? item.request_id : undefined;
  }
}
