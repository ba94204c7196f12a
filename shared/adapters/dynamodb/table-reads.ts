/**
 * The reads every adapter of the breadcrumbs table makes the same way: one item by key, many items by key (in
 * BatchGetItem requests of 100, unprocessed keys asked again with back-off), and one Query page — each with SDK
 * errors turned into domain errors (`translate`: what is worth another attempt becomes a RetriableError).
 */
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { isCrumbsError, isRetriable, RetriableError } from '#shared/domain/errors.ts';
import type { Key } from './items.ts';

export type Item = Record<string, unknown>;

/** BatchGetItem takes at most 100 keys a request. */
const BATCH_GET_KEYS = 100;

export interface QueryPage {
  items: Item[];
  /** Where the next page starts; absent when the query has been read to its end. */
  next?: Record<string, unknown>;
}

export class TableReads {
  constructor(
    readonly client: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async getItem(key: Key, consistent = true): Promise<Item | undefined> {
    try {
      const out = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: consistent }),
      );
      return out.Item;
    } catch (error) {
      throw translate(error);
    }
  }

  /** Items by key, answered in the order asked (undefined where missing); consistent reads. */
  async batchGet(wanted: readonly Key[]): Promise<(Item | undefined)[]> {
    if (wanted.length === 0) return [];
    const found = new Map<string, Item>();
    for (let i = 0; i < wanted.length; i += BATCH_GET_KEYS) {
      await this.batchGetChunk(wanted.slice(i, i + BATCH_GET_KEYS), found);
    }
    return wanted.map((k) => found.get(keyString(k)));
  }

  private async batchGetChunk(chunk: Key[], found: Map<string, Item>): Promise<void> {
    let pending: Key[] = chunk;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await sleep(Math.min(1000, 20 * 2 ** attempt));
      try {
        const out = await this.client.send(
          new BatchGetCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        for (const item of out.Responses?.[this.tableName] ?? []) found.set(keyString(item as Key), item);
        pending = (out.UnprocessedKeys?.[this.tableName]?.Keys as Key[] | undefined) ?? [];
      } catch (error) {
        throw translate(error);
      }
      if (attempt > 8 && pending.length > 0)
        throw new RetriableError('DynamoDB left keys unprocessed repeatedly');
    }
  }

  async query(input: Omit<QueryCommandInput, 'TableName'>): Promise<QueryPage> {
    try {
      const out = await this.client.send(new QueryCommand({ ...input, TableName: this.tableName }));
      return { items: out.Items ?? [], ...(out.LastEvaluatedKey ? { next: out.LastEvaluatedKey } : {}) };
    } catch (error) {
      throw translate(error);
    }
  }
}

export function keyString(key: Key): string {
  return `${key.id}\u0000${key.workspace}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * SDK errors → domain errors: what `isRetriable` calls retriable (throttling, service faults, timeouts) becomes a
 * RetriableError; the rest propagate unchanged.
 */
export function translate(error: unknown): unknown {
  if (!isCrumbsError(error) && isRetriable(error)) {
    return new RetriableError(`DynamoDB: ${(error as Error).message}`, { cause: error });
  }
  return error;
}
