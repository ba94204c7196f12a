/**
 * The thread vault on the breadcrumbs table: one item per thread, `#guardrail-vault#<thread>` (kind
 * `guardrail-vault`), holding the sealed placeholder map. The publisher ignores ids with `#`, so the item is in no
 * change event, bus archive or delta channel; it expires `ttlSeconds` after its last write (a thread nobody writes
 * to for that long needs no placeholders) and goes with its workspace when that is deleted.
 */
import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { defaultDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { KIND } from '#shared/adapters/dynamodb/items.ts';
import type { VaultStore } from './vault.ts';

export const VAULT_TTL_SECONDS = 30 * 24 * 60 * 60;

export function vaultItemId(thread: string): string {
  return `#guardrail-vault#${createHash('sha256').update(thread).digest('hex').slice(0, 40)}`;
}

export class DynamoVaultStore implements VaultStore {
  private readonly client: DynamoDBDocumentClient;
  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
    private readonly ttlSeconds = VAULT_TTL_SECONDS,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async load(workspace: string, thread: string): Promise<string | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { id: vaultItemId(thread), workspace },
        ConsistentRead: true,
      }),
    );
    const sealed = out.Item?.sealed;
    return typeof sealed === 'string' ? sealed : undefined;
  }

  async save(workspace: string, thread: string, sealed: string): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          id: vaultItemId(thread),
          workspace,
          kind: KIND.guardrailVault,
          sealed,
          expires_at: Math.floor(Date.now() / 1000) + this.ttlSeconds,
        },
      }),
    );
  }
}
