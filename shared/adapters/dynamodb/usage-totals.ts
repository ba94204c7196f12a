/**
 * DynamoDB adapter of the usage totals (`shared/ports/usage-totals.ts`): one item per workspace, dimension, key
 * and UTC hour, `#usage#<dimension>#<hour>#<key>` (kind `usage`, which the publisher's stream filter passes over).
 * The workspace's own counters (`day`) are read by key, hour by hour (a range names them all), so they stay out of
 * any index and an update costs one write unit, not two; the others are listed through gsi1 under
 * `<workspace>#u#<dimension>` sorted by `<hour>#<key>` (a partition no schema listing, `<workspace>#s#…`, can name).
 *
 * A batch adds to a counter with one UpdateItem ADD whose condition is that none of its contributions' names is in
 * the counter's `applied` set, which the same update extends: so a redelivered stream batch adds nothing twice.
 * When the condition fails (some were added before), the counter is read and only the rest is added. Names are
 * 10-character (60-bit) hashes of `<breadcrumb id>@<version>`; an hour's set holds that hour's writes into the
 * counter, so an update's size (and write units) grows by about one unit per 80 such writes in the hour.
 * Counters expire after `RETENTION_DAYS`.
 */
import { createHash } from 'node:crypto';
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { RetriableError } from '#shared/domain/errors.ts';
import {
  addAmounts,
  type UsageContribution,
  type UsageCounter,
  type UsageDimension,
  type UsageRow,
  type UsageTotals,
  zeroAmounts,
} from '#shared/ports/usage-totals.ts';
import { defaultDocumentClient, translate } from './client.ts';

/** The item kind of a usage counter (not a breadcrumb: no event, no listing by schema or tag). */
const USAGE_KIND = 'usage';
/** How long counters are kept. */
export const RETENTION_DAYS = 400;
/** Names checked per update: the condition expression stays within DynamoDB's 4 KB. */
const NAMES_PER_UPDATE = 40;
/** Attempts at a counter whose condition keeps failing (others adding to it at once). */
const ATTEMPTS = 5;

export class DynamoUsageTotals implements UsageTotals {
  private readonly client: DynamoDBDocumentClient;

  constructor(
    private readonly tableName: string,
    client?: DynamoDBDocumentClient,
  ) {
    this.client = client ?? defaultDocumentClient();
  }

  async add(workspace: string, counter: UsageCounter, contributions: readonly UsageContribution[]) {
    const named = contributions.map((c) => ({ name: nameOf(c.id), amounts: c.amounts }));
    for (let i = 0; i < named.length; i += NAMES_PER_UPDATE) {
      await this.addChunk(workspace, counter, named.slice(i, i + NAMES_PER_UPDATE));
    }
  }

  private async addChunk(
    workspace: string,
    counter: UsageCounter,
    chunk: { name: string; amounts: UsageContribution['amounts'] }[],
  ): Promise<void> {
    let todo = chunk;
    for (let attempt = 1; todo.length > 0; attempt++) {
      try {
        await this.update(workspace, counter, todo);
        return;
      } catch (error) {
        const conditionFailed = (error as { name?: string }).name === 'ConditionalCheckFailedException';
        if (!conditionFailed || attempt >= ATTEMPTS) throw translate(error);
      }
      // Some were added already (a batch handed over again): add only the others.
      const applied = await this.applied(workspace, counter);
      todo = todo.filter((c) => !applied.has(c.name));
    }
  }

  private async update(
    workspace: string,
    counter: UsageCounter,
    todo: { name: string; amounts: UsageContribution['amounts'] }[],
  ): Promise<void> {
    const sum = todo.reduce((s, c) => addAmounts(s, c.amounts), zeroAmounts());
    const values: Record<string, unknown> = {
      ':calls': sum.calls,
      ':in': sum.input_tokens,
      ':out': sum.output_tokens,
      ':cached': sum.cached_tokens,
      ':cost': sum.cost_nusd,
      ':unpriced': sum.unpriced_calls,
      ':names': new Set(todo.map((c) => c.name)),
      ':kind': USAGE_KIND,
      ':dim': counter.dimension,
      ':key': counter.key,
      ':hour': counter.hour,
      ':exp': expiry(counter.hour),
      ...(listed(counter.dimension)
        ? { ':gpk': listingKey(workspace, counter.dimension), ':gsk': `${counter.hour}#${counter.key}` }
        : {}),
    };
    todo.forEach((c, i) => {
      values[`:n${i}`] = c.name;
    });
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { id: itemId(counter), workspace },
        UpdateExpression:
          'ADD calls :calls, input_tokens :in, output_tokens :out, cached_tokens :cached, cost_nusd :cost, ' +
          'unpriced_calls :unpriced, applied :names ' +
          'SET #kind = :kind, dimension = :dim, #key = :key, #hour = :hour, expires_at = :exp' +
          (listed(counter.dimension) ? ', gsi1pk = :gpk, gsi1sk = :gsk' : ''),
        ConditionExpression: todo.map((_, i) => `NOT contains(applied, :n${i})`).join(' AND '),
        ExpressionAttributeNames: { '#kind': 'kind', '#key': 'key', '#hour': 'hour' },
        ExpressionAttributeValues: values,
      }),
    );
  }

  private async applied(workspace: string, counter: UsageCounter): Promise<Set<string>> {
    const out = await this.client
      .send(
        new GetCommand({
          TableName: this.tableName,
          Key: { id: itemId(counter), workspace },
          ProjectionExpression: 'applied',
          ConsistentRead: true,
        }),
      )
      .catch((error: unknown) => {
        throw translate(error);
      });
    return new Set((out.Item?.applied as Set<string> | undefined) ?? []);
  }

  async read(
    workspace: string,
    dimension: UsageDimension,
    range: { fromHour: string; toHour: string },
    limit: number,
  ): Promise<{ rows: UsageRow[]; truncated: boolean }> {
    if (!listed(dimension)) return this.readByKey(workspace, dimension, range, limit);
    const rows: UsageRow[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.client
        .send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: 'gsi1',
            KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk BETWEEN :lo AND :hi',
            ExpressionAttributeValues: {
              ':pk': listingKey(workspace, dimension),
              ':lo': `${range.fromHour}#`,
              ':hi': `${range.toHour}#\uffff`,
            },
            ProjectionExpression:
              '#key, #hour, calls, input_tokens, output_tokens, cached_tokens, cost_nusd, unpriced_calls',
            ExpressionAttributeNames: { '#key': 'key', '#hour': 'hour' },
            Limit: Math.min(1000, limit - rows.length + 1),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        )
        .catch((error: unknown) => {
          throw translate(error);
        });
      for (const item of out.Items ?? []) rows.push(rowOf(dimension, item));
      start = out.LastEvaluatedKey;
    } while (start && rows.length <= limit);
    return { rows: rows.slice(0, limit), truncated: rows.length > limit };
  }

  /** The workspace's hourly counters of the range, by key (at most `limit` hours). */
  private async readByKey(
    workspace: string,
    dimension: UsageDimension,
    range: { fromHour: string; toHour: string },
    limit: number,
  ): Promise<{ rows: UsageRow[]; truncated: boolean }> {
    const hours: string[] = [];
    for (
      let t = hourTime(range.fromHour);
      t <= hourTime(range.toHour) && hours.length <= limit;
      t += 3_600_000
    ) {
      hours.push(new Date(t).toISOString().slice(0, 13));
    }
    const truncated = hours.length > limit;
    const rows: UsageRow[] = [];
    for (let i = 0; i < Math.min(hours.length, limit); i += 100) {
      let keys: Record<string, unknown>[] = hours
        .slice(i, Math.min(i + 100, limit))
        .map((hour) => ({ id: itemId({ dimension, key: '*', hour }), workspace }));
      for (let attempt = 1; keys.length > 0; attempt++) {
        const out = await this.client
          .send(
            new BatchGetCommand({
              RequestItems: {
                [this.tableName]: {
                  Keys: keys,
                  ProjectionExpression:
                    '#key, #hour, calls, input_tokens, output_tokens, cached_tokens, cost_nusd, unpriced_calls',
                  ExpressionAttributeNames: { '#key': 'key', '#hour': 'hour' },
                },
              },
            }),
          )
          .catch((error: unknown) => {
            throw translate(error);
          });
        for (const item of out.Responses?.[this.tableName] ?? []) rows.push(rowOf(dimension, item));
        keys = (out.UnprocessedKeys?.[this.tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        if (keys.length > 0) {
          if (attempt >= ATTEMPTS)
            throw new RetriableError('usage counters could not all be read; try again');
          await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        }
      }
    }
    rows.sort((a, b) => a.hour.localeCompare(b.hour));
    return { rows, truncated };
  }
}

/** Whether a dimension's counters are listed through gsi1 (the workspace's own are read by key). */
function listed(dimension: UsageDimension): boolean {
  return dimension !== 'day';
}

function rowOf(dimension: UsageDimension, item: Record<string, unknown>): UsageRow {
  return {
    dimension,
    key: String(item.key),
    hour: String(item.hour),
    calls: Number(item.calls ?? 0),
    input_tokens: Number(item.input_tokens ?? 0),
    output_tokens: Number(item.output_tokens ?? 0),
    cached_tokens: Number(item.cached_tokens ?? 0),
    cost_nusd: Number(item.cost_nusd ?? 0),
    unpriced_calls: Number(item.unpriced_calls ?? 0),
  };
}

function hourTime(hour: string): number {
  return Date.parse(`${hour}:00:00Z`);
}

function itemId(counter: UsageCounter): string {
  return `#usage#${counter.dimension}#${counter.hour}#${counter.key}`;
}

function listingKey(workspace: string, dimension: UsageDimension): string {
  return `${workspace}#u#${dimension}`;
}

function nameOf(id: string): string {
  return createHash('sha256').update(id).digest('base64url').slice(0, 10);
}

function expiry(hour: string): number {
  return Math.floor(Date.parse(`${hour}:00:00Z`) / 1000) + RETENTION_DAYS * 86_400;
}
