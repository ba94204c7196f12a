/**
 * Local DynamoDB Streams event-source mapping: reads the table's stream (DynamoDB Local) shard by shard and invokes
 * a handler with Lambda's DynamoDB stream event shape and semantics — batch size and window from the topology,
 * in-order per shard, `batchItemFailures` resume from the first failed record, a thrown error retries the batch,
 * bisect-on-error splits a failing batch, and after `retryAttempts` the batch goes to the on-failure handler.
 */
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetShardIteratorCommand,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { StreamTrigger } from '#shared/topology.ts';
import { invoke, type LambdaHandler } from './lambda-context.ts';
import type { Poller } from './sqs-poller.ts';

export interface StreamPollerOptions {
  client: DynamoDBStreamsClient;
  /** DynamoDB Local's endpoint: GetRecords is read as raw JSON (see `getRecordsRaw`). */
  endpoint: string;
  streamArn: string;
  region: string;
  trigger: Pick<
    StreamTrigger,
    'batchSize' | 'maxBatchingWindowSeconds' | 'retryAttempts' | 'bisectBatchOnError'
  >;
  fn: { name: string; timeoutSeconds: number; memoryMb: number };
  handler: LambdaHandler<DynamoDBStreamEvent, DynamoDBBatchResponse | undefined | undefined>;
  /** Where shards already present at start are read from: TRIM_HORIZON for a new table, LATEST for a reopened one. */
  startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /** Receives records that exhausted their retries (Lambda's on-failure destination). */
  onFailure?: (records: DynamoDBRecord[], error: string) => Promise<void>;
  log?: (line: string) => void;
}

export function startStreamPoller(options: StreamPollerOptions): Poller & { idle(): Promise<void> } {
  let running = true;
  let invocations = 0;
  const shards = new Map<string, Promise<void>>();
  let busy = 0;
  let lastActivityAt = 0;

  const discovery = (async () => {
    let first = true;
    while (running) {
      try {
        const out = await options.client.send(new DescribeStreamCommand({ StreamArn: options.streamArn }));
        for (const shard of out.StreamDescription?.Shards ?? []) {
          const id = shard.ShardId;
          if (!id || shards.has(id)) continue;
          const position: ShardIteratorType = first ? options.startingPosition : 'TRIM_HORIZON';
          shards.set(id, readShard(id, position));
        }
        first = false;
      } catch (error) {
        if (running) options.log?.(`${options.fn.name}: describe stream failed: ${(error as Error).message}`);
      }
      await sleep(2000);
    }
  })();

  async function readShard(shardId: string, position: ShardIteratorType): Promise<void> {
    let iterator = (
      await options.client.send(
        new GetShardIteratorCommand({
          StreamArn: options.streamArn,
          ShardId: shardId,
          ShardIteratorType: position,
        }),
      )
    ).ShardIterator;
    const pending: DynamoDBRecord[] = [];
    while (running && (iterator || pending.length > 0)) {
      if (iterator && pending.length < options.trigger.batchSize) {
        const out = await getRecordsRaw(options.endpoint, iterator, options.trigger.batchSize);
        iterator = out.NextShardIterator;
        pending.push(...(out.Records ?? []).map(toLambdaRecord));
      }
      if (pending.length === 0) {
        await sleep(50);
        continue;
      }
      lastActivityAt = Date.now();
      busy++;
      try {
        const batch = pending.splice(0, options.trigger.batchSize);
        await deliver(batch);
      } finally {
        busy--;
        lastActivityAt = Date.now();
      }
    }
  }

  /** Delivers a batch in order, with Lambda's retry, partial-failure and bisect semantics. */
  async function deliver(batch: DynamoDBRecord[]): Promise<void> {
    let remaining = batch;
    for (let attempt = 0; remaining.length > 0 && running; attempt++) {
      invocations++;
      let failedFrom: number;
      let reason = '';
      try {
        const result = await invoke(options.handler, { Records: remaining }, options.fn);
        const failedIds = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        failedFrom = remaining.findIndex((r) => failedIds.has(r.dynamodb?.SequenceNumber ?? ''));
        reason = 'reported as a batch item failure';
      } catch (error) {
        failedFrom = 0;
        reason = (error as Error).message;
      }
      if (failedFrom < 0) return;
      remaining = remaining.slice(failedFrom);
      if (attempt >= options.trigger.retryAttempts) {
        options.log?.(`${options.fn.name}: giving up on ${remaining.length} stream records: ${reason}`);
        await options.onFailure?.(remaining, reason);
        return;
      }
      if (options.trigger.bisectBatchOnError && remaining.length > 1) {
        const half = Math.ceil(remaining.length / 2);
        await deliver(remaining.slice(0, half));
        await deliver(remaining.slice(half));
        return;
      }
      await sleep(Math.min(2000, 100 * 2 ** attempt));
    }
  }

  return {
    get invocations() {
      return invocations;
    },
    /**
     * Resolves once the stream has been read up to now: no batch in flight and no record seen for a few polling
     * intervals (each shard is read every 50 ms when it is empty).
     */
    async idle() {
      const since = Date.now();
      while (busy > 0 || Date.now() - Math.max(lastActivityAt, since) < 200) await sleep(25);
    },
    async stop() {
      running = false;
      await Promise.allSettled([discovery, ...shards.values()]);
    },
  };

  /** The wire record is what Lambda passes on, but for `userIdentity`'s key case and the source ARN. */
  function toLambdaRecord(record: WireRecord): DynamoDBRecord {
    const { userIdentity, ...rest } = record;
    if (rest.dynamodb) {
      for (const image of ['Keys', 'NewImage', 'OldImage'] as const) {
        const value = rest.dynamodb[image];
        if (value) rest.dynamodb[image] = repairEmptyMaps(value) as typeof value;
      }
    }
    return {
      ...rest,
      eventSourceARN: options.streamArn,
      ...(userIdentity
        ? { userIdentity: { type: userIdentity.Type ?? '', principalId: userIdentity.PrincipalId ?? '' } }
        : {}),
    };
  }
}

/**
 * DynamoDB Local writes an empty map as `{}` in stream records where DynamoDB writes `{"M":{}}`. An attribute
 * value with no type key can only be an empty map (sets cannot be empty; lists keep their `L`).
 */
function repairEmptyMaps(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(repairEmptyMaps);
  const out: Record<string, unknown> = {};
  for (const [key, attr] of Object.entries(value)) out[key] = repairAttribute(attr);
  return out;
}

function repairAttribute(attr: unknown): unknown {
  if (attr === null || typeof attr !== 'object' || Array.isArray(attr)) return attr;
  const entries = Object.entries(attr);
  if (entries.length === 0) return { M: {} };
  const [[type, inner]] = entries as [[string, unknown]];
  if (type === 'M') return { M: repairEmptyMaps(inner) };
  if (type === 'L' && Array.isArray(inner)) return { L: inner.map(repairAttribute) };
  return attr;
}

type WireRecord = Omit<DynamoDBRecord, 'userIdentity'> & {
  userIdentity?: { Type?: string; PrincipalId?: string };
};

/**
 * GetRecords as raw JSON. The SDK's deserializer turns an empty map (`{"M":{}}`) into `{}`, which no longer says
 * what it is; Lambda hands functions the wire JSON, so the local event-source mapping does too.
 */
async function getRecordsRaw(
  endpoint: string,
  iterator: string,
  limit: number,
): Promise<{ Records?: WireRecord[]; NextShardIterator?: string }> {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'DynamoDBStreams_20120810.GetRecords',
      // DynamoDB Local wants a SigV4-shaped header and checks nothing in it.
      authorization:
        'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: JSON.stringify({ ShardIterator: iterator, Limit: limit }),
  });
  const body = (await res.json()) as { Records?: WireRecord[]; NextShardIterator?: string; message?: string };
  if (!res.ok) throw new Error(`GetRecords failed (${res.status}): ${body.message ?? JSON.stringify(body)}`);
  return body;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
