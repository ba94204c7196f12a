/**
 * The embeddings ledger in the breadcrumbs table, beside the breadcrumbs it describes: one small item per embedded
 * breadcrumb saying which version, text checksum, model and scope its vector was computed from. The vectors
 * themselves live in the vector engine (`VectorEngine`: S3 Vectors on AWS, usearch under `crumbs dev`), which does the
 * search; the ledger makes indexing idempotent (unchanged text is not embedded again) and ordered (an older version
 * never overwrites a newer one), with one conditional put.
 *
 * | kind        | id        | workspace |
 * |-------------|-----------|-----------|
 * | `embedding` | `<id>#e`  | `<ws>`    |
 *
 * - `<id>#e` contains `#`, so the item cannot collide with a breadcrumb, and the publisher ignores it (it is not a
 *   breadcrumb head nor a plain put). It is on no index: nothing lists it.
 * - `expires_at` is copied from the breadcrumb, so TTL removes both together (the engine's vector goes when the
 *   breadcrumb's removal reaches the indexer).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { defaultDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import type { EmbeddingIndex, StoredEmbedding } from '#shared/ports/embeddings.ts';

export const EMBEDDING_KIND = 'embedding';

export const embeddingKeys = {
  item: (workspace: string, id: string) => ({ id: `${id}#e`, workspace }),
};

export class DynamoEmbeddingIndex implements EmbeddingIndex {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async put(workspace: string, e: StoredEmbedding): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...embeddingKeys.item(workspace, e.id),
            kind: EMBEDDING_KIND,
            ref: e.id,
            schema_name: e.schema_name,
            version: e.version,
            checksum: e.checksum,
            model: e.model,
            updated_at: e.updated_at,
            ...(e.scope !== undefined ? { scope: e.scope } : {}),
            ...(e.expires_at !== undefined ? { expires_at: e.expires_at } : {}),
          },
          ConditionExpression: 'attribute_not_exists(id) OR version <= :v',
          ExpressionAttributeValues: { ':v': e.version },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async get(workspace: string, id: string): Promise<StoredEmbedding | undefined> {
    const out = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: embeddingKeys.item(workspace, id) }),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  async remove(workspace: string, id: string): Promise<void> {
    await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: embeddingKeys.item(workspace, id) }),
    );
  }
}

function fromItem(item: Record<string, unknown>): StoredEmbedding {
  return {
    id: String(item.ref),
    schema_name: String(item.schema_name),
    version: Number(item.version),
    checksum: String(item.checksum),
    model: String(item.model),
    updated_at: String(item.updated_at),
    ...(typeof item.expires_at === 'number' ? { expires_at: item.expires_at } : {}),
    ...(typeof item.scope === 'string' ? { scope: item.scope } : {}),
  };
}
