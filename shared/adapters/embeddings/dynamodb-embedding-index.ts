/**
 * Embeddings in the breadcrumbs table, beside the breadcrumbs they describe. No new index: the item reuses the
 * table's two existing GSIs under partition keys no other item uses.
 *
 * | kind        | id             | workspace | gsi1pk                  | gsi2pk     | sort keys                 |
 * |-------------|----------------|-----------|-------------------------|------------|---------------------------|
 * | `embedding` | `<id>#e`       | `<ws>`    | `<ws>#e#<schema_name>`  | `<ws>#e`   | `<updated_at>#<id>`       |
 *
 * - `<id>#e` contains `#`, so the item cannot collide with a breadcrumb, and the publisher ignores it (it is not a
 *   breadcrumb head nor a plain put).
 * - Nearest-neighbour search is brute-force cosine over one bounded Query: the newest `limit` embeddings of the
 *   (workspace, schema) on gsi1, or of the whole workspace on gsi2. The vector is a binary Float32 array
 *   (1 KB for 256 dimensions, 2 KB for 512), so 2,000 candidates are 2-4 MB read in a few pages. Beyond that
 *   scale a vector store (OpenSearch Serverless, S3 Vectors) replaces this adapter behind the same port.
 * - `expires_at` is copied from the breadcrumb, so TTL removes both together.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { defaultDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import type { EmbeddingIndex, StoredEmbedding } from '#shared/ports/embeddings.ts';

export const EMBEDDING_KIND = 'embedding';
const QUERY_PAGE = 500;

export const embeddingKeys = {
  item: (workspace: string, id: string) => ({ id: `${id}#e`, workspace }),
  bySchema: (workspace: string, schemaName: string) => `${workspace}#e#${schemaName}`,
  byWorkspace: (workspace: string) => `${workspace}#e`,
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
    const sort = `${e.updated_at}#${e.id}`;
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
            vector: toBinary(e.vector),
            updated_at: e.updated_at,
            gsi1pk: embeddingKeys.bySchema(workspace, e.schema_name),
            gsi1sk: sort,
            gsi2pk: embeddingKeys.byWorkspace(workspace),
            gsi2sk: sort,
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

  async candidates(
    workspace: string,
    schemaName: string | undefined,
    limit: number,
  ): Promise<StoredEmbedding[]> {
    const index = schemaName === undefined ? 'gsi2' : 'gsi1';
    const pk =
      schemaName === undefined
        ? embeddingKeys.byWorkspace(workspace)
        : embeddingKeys.bySchema(workspace, schemaName);
    const out: StoredEmbedding[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: index,
          KeyConditionExpression: `${index}pk = :pk`,
          ExpressionAttributeValues: { ':pk': pk },
          ScanIndexForward: false,
          Limit: Math.min(QUERY_PAGE, limit - out.length),
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) if (item.kind === EMBEDDING_KIND) out.push(fromItem(item));
      start = page.LastEvaluatedKey;
    } while (start && out.length < limit);
    return out;
  }
}

function toBinary(vector: readonly number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(vector).buffer);
}

function fromBinary(value: unknown): number[] {
  if (!(value instanceof Uint8Array)) return [];
  const copy = value.slice();
  return Array.from(new Float32Array(copy.buffer, copy.byteOffset, Math.floor(copy.byteLength / 4)));
}

function fromItem(item: Record<string, unknown>): StoredEmbedding {
  return {
    id: String(item.ref),
    schema_name: String(item.schema_name),
    version: Number(item.version),
    checksum: String(item.checksum),
    model: String(item.model),
    vector: fromBinary(item.vector),
    updated_at: String(item.updated_at),
    ...(typeof item.expires_at === 'number' ? { expires_at: item.expires_at } : {}),
  };
}
