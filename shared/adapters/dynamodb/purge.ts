/**
 * Purging one breadcrumb: every item the table holds of it — the head (or its tombstone), each version, each tag
 * item, each change-log entry of a delete, its embedding ledger entry — so nothing of its content is left to read,
 * list or scan. What a person's "forget" needs (the memory room); an ordinary delete keeps history by design.
 *
 * The versions are 1..N (N the head's version, the tombstone keeps it), so every key is known without a listing;
 * the tags to remove are those of every version (a version may have carried a tag the head no longer has). Deletes
 * go in batches of 25 (BatchWriteItem), unprocessed keys retried. DynamoDB Streams still carry the images of these
 * writes for 24 hours, and point-in-time recovery keeps the table's past for its window (docs/memory.md).
 */
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
} from '@aws-sdk/lib-dynamodb';
import { defaultDocumentClient } from './client.ts';
import { keys } from './items.ts';

const BATCH = 25;

export class DynamoPurge {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  /** Removes every item of breadcrumb `id`; a breadcrumb that never existed is fine. */
  async purge(workspace: string, id: string): Promise<void> {
    const head = (
      await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.head(workspace, id) }))
    ).Item;
    const latest = typeof head?.version === 'number' ? head.version : 0;
    const tags = new Set<string>(Array.isArray(head?.tags) ? head.tags.map(String) : []);
    const versionKeys = Array.from({ length: latest }, (_, i) => keys.version(workspace, id, i + 1));
    for (let i = 0; i < versionKeys.length; i += 100) {
      const page = await this.client.send(
        new BatchGetCommand({
          RequestItems: {
            [this.tableName]: { Keys: versionKeys.slice(i, i + 100), ProjectionExpression: 'tags' },
          },
        }),
      );
      for (const item of page.Responses?.[this.tableName] ?? []) {
        if (Array.isArray(item.tags)) for (const t of item.tags) tags.add(String(t));
      }
    }
    const doomed = [
      ...versionKeys,
      ...Array.from({ length: latest }, (_, i) => keys.deletion(workspace, id, i + 1)),
      ...[...tags].map((t) => keys.tag(workspace, id, t)),
      { id: `${id}#e`, workspace },
      // The head last: until it goes, the breadcrumb (or its tombstone) still says the id is taken.
      keys.head(workspace, id),
    ];
    for (let i = 0; i < doomed.length; i += BATCH) {
      let requests = doomed.slice(i, i + BATCH).map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
        const out = await this.client.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: requests } }),
        );
        requests = (out.UnprocessedItems?.[this.tableName] ?? []).flatMap((r) =>
          r.DeleteRequest?.Key
            ? [{ DeleteRequest: { Key: r.DeleteRequest.Key as { id: string; workspace: string } } }]
            : [],
        );
        if (attempt > 8 && requests.length > 0)
          throw new Error(`purge of ${id}: ${requests.length} items left unprocessed`);
      }
    }
  }
}
