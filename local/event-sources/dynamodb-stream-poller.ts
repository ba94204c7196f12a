/**
 * Local DynamoDB Streams event-source mapping: reads the table's stream (DynamoDB Local) shard by shard and invokes
 * a handler with Lambda's DynamoDB stream event shape and semantics — batch size and window from the topology,
 * in-order per shard, `batchItemFailures` resume from the first failed record, a thrown error retries the batch,
 * bisect-on-error splits a failing batch, and after `retryAttempts` the batch goes to the on-failure handler.
 *
 * Position: like Lambda's event source mapping, the poller checkpoints each shard after every batch it is done
 * with (delivered, or handed to on-failure) and resumes after the checkpoint when it starts again, so changes
 * committed just before a crash are still delivered (at least once: a batch in flight at the crash is delivered
 * again). Shards with no checkpoint are read from `startingPosition`. `fileCheckpoints` keeps them in the data
 * directory; without one (an in-memory table, new at every start) there is nothing to resume.
 */

import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetShardIteratorCommand,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { compileEventPattern } from '#shared/routing/event-pattern.ts';
import type { StreamTrigger } from '#shared/topology.ts';
import { type InvocationObserver, invoke, type LambdaHandler } from './lambda-context.ts';
import type { Poller } from './sqs-poller.ts';

export interface StreamPollerOptions {
  client: DynamoDBStreamsClient;
  /** DynamoDB Local's endpoint: GetRecords is read as raw JSON (see `getRecordsRaw`). */
  endpoint: string;
  streamArn: string;
  region: string;
  trigger: Pick<
    StreamTrigger,
    'batchSize' | 'maxBatchingWindowSeconds' | 'retryAttempts' | 'bisectBatchOnError' | 'filters'
  >;
  fn: { name: string; timeoutSeconds: number; memoryMb: number };
  handler: LambdaHandler<DynamoDBStreamEvent, DynamoDBBatchResponse | undefined | undefined>;
  /** Where shards without a checkpoint are read from (TRIM_HORIZON: everything the stream still holds). */
  startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /** Where each shard's position is kept across restarts; none: every start reads from `startingPosition`. */
  checkpoints?: StreamCheckpoints;
  /** Receives each batch that exhausted its retries (Lambda's on-failure destination, see `onFailureRecord`). */
  onFailure?: (failure: StreamBatchFailure) => Promise<void>;
  log?: (line: string) => void;
  /** Told about every invocation (benchmarks). */
  onInvocation?: InvocationObserver;
}

/** A batch the poller gave up on: the records still failing after the retries, and why. */
export interface StreamBatchFailure {
  streamArn: string;
  shardId: string;
  records: DynamoDBRecord[];
  /** Invocations this batch (or the part of it still failing) had. */
  invokeCount: number;
  reason: string;
  /** True when the function threw (Lambda's `functionError: Unhandled`), false when it reported item failures. */
  threw: boolean;
}

/**
 * What Lambda sends to a stream event source's on-failure destination for a batch it gave up on: where the records
 * are in the stream, not the records (AWS Lambda Developer Guide, "Retaining discarded batches for a DynamoDB
 * event source": the invocation record with `DDBStreamBatchInfo`). Reading the records back is up to whoever
 * handles it, within the stream's 24 hours.
 */
export function onFailureRecord(
  failure: StreamBatchFailure,
  functionArn: string,
  now: Date = new Date(),
): Record<string, unknown> {
  const first = failure.records[0]?.dynamodb;
  const last = failure.records.at(-1)?.dynamodb;
  const arrival = (seconds: number | undefined) =>
    new Date((seconds ?? now.getTime() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    requestContext: {
      requestId: randomUUID(),
      functionArn,
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: failure.invokeCount,
    },
    responseContext: {
      statusCode: 200,
      executedVersion: '$LATEST',
      ...(failure.threw ? { functionError: 'Unhandled' } : {}),
    },
    version: '1.0',
    timestamp: now.toISOString(),
    DDBStreamBatchInfo: {
      shardId: failure.shardId,
      startSequenceNumber: first?.SequenceNumber ?? '',
      endSequenceNumber: last?.SequenceNumber ?? '',
      approximateArrivalOfFirstRecord: arrival(first?.ApproximateCreationDateTime),
      approximateArrivalOfLastRecord: arrival(last?.ApproximateCreationDateTime),
      batchSize: failure.records.length,
      streamArn: failure.streamArn,
    },
  };
}

/** The last sequence number handled per shard of a stream. */
export interface StreamCheckpoints {
  get(streamArn: string, shardId: string): string | undefined;
  set(streamArn: string, shardId: string, sequenceNumber: string): Promise<void>;
}

/**
 * Checkpoints in a JSON file (`{ streamArn: { shardId: sequenceNumber } }`), written atomically (temporary file,
 * then rename) after each batch, one write at a time.
 */
export function fileCheckpoints(path: string): StreamCheckpoints {
  let state: Record<string, Record<string, string>> = {};
  try {
    state = JSON.parse(readFileSync(path, 'utf8')) as typeof state;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new Error(`cannot read the stream checkpoints in ${path}: ${(error as Error).message}`);
    }
  }
  mkdirSync(dirname(path), { recursive: true });
  let writing: Promise<void> = Promise.resolve();
  return {
    get: (streamArn, shardId) => state[streamArn]?.[shardId],
    set(streamArn, shardId, sequenceNumber) {
      state = { ...state, [streamArn]: { ...state[streamArn], [shardId]: sequenceNumber } };
      const snapshot = JSON.stringify(state);
      // Chained after the previous write whatever became of it: one failed write (a full disk, a removed
      // directory) must not fail every later one.
      writing = writing
        .catch(() => undefined)
        .then(async () => {
          await writeFile(`${path}.tmp`, snapshot);
          await rename(`${path}.tmp`, path);
        });
      return writing;
    },
  };
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

  /** After the checkpoint when there is one (and the stream still holds it), else at `position`. */
  async function firstIterator(shardId: string, position: ShardIteratorType): Promise<string | undefined> {
    const after = options.checkpoints?.get(options.streamArn, shardId);
    if (after !== undefined) {
      try {
        return await iteratorAfter(shardId, after);
      } catch (error) {
        options.log?.(
          `${options.fn.name}: cannot resume shard ${shardId} after ${after} (${(error as Error).message}); reading it from TRIM_HORIZON`,
        );
        position = 'TRIM_HORIZON';
      }
    }
    const out = await options.client.send(
      new GetShardIteratorCommand({
        StreamArn: options.streamArn,
        ShardId: shardId,
        ShardIteratorType: position,
      }),
    );
    return out.ShardIterator;
  }

  // Lambda's event filtering, as the CDK app configures it: a record no filter matches never reaches the function
  // (and a batch left empty is no invocation).
  const filters = (options.trigger.filters ?? []).map((pattern) => compileEventPattern(pattern));
  const passes = (record: DynamoDBRecord): boolean =>
    filters.length === 0 || filters.some((filter) => filter.matches(record));

  /**
   * Reads one shard until it is closed and drained (or the poller stops). A failed read (DynamoDB Local busy or
   * restarting, an expired iterator) is retried after a back-off from just after the last record read, as Lambda's
   * event source mapping keeps polling: a read error never ends the shard, and nothing read is read twice.
   */
  async function readShard(shardId: string, position: ShardIteratorType): Promise<void> {
    let iterator: string | undefined;
    let needIterator = true;
    let lastRead: string | undefined;
    let readFailures = 0;
    const pending: DynamoDBRecord[] = [];
    while (running) {
      try {
        if (needIterator) {
          iterator =
            lastRead === undefined
              ? await firstIterator(shardId, position)
              : await iteratorAfter(shardId, lastRead);
          needIterator = false;
        }
        if (!iterator && pending.length === 0) return;
        if (iterator && pending.length < options.trigger.batchSize) {
          const out = await getRecordsRaw(options.endpoint, iterator, options.trigger.batchSize);
          iterator = out.NextShardIterator;
          const records = (out.Records ?? []).map(toLambdaRecord);
          lastRead = records.at(-1)?.dynamodb?.SequenceNumber ?? lastRead;
          pending.push(...records.filter(passes));
        }
        readFailures = 0;
      } catch (error) {
        if (!running) return;
        readFailures++;
        const delay = Math.min(5000, 100 * 2 ** readFailures);
        options.log?.(
          `${options.fn.name}: reading shard ${shardId} failed (${(error as Error).message}); again in ${delay} ms`,
        );
        needIterator = true;
        await sleep(delay);
        continue;
      }
      if (pending.length === 0) {
        await sleep(50);
        continue;
      }
      lastActivityAt = Date.now();
      busy++;
      try {
        const batch = pending.splice(0, options.trigger.batchSize);
        const done = await deliver(shardId, batch);
        const last = batch.at(-1)?.dynamodb?.SequenceNumber;
        // Only a batch the function is done with moves the checkpoint; one cut short by stop() is read again.
        if (done && last !== undefined) {
          // The checkpoint only saves a restart from re-reading; a write that fails is logged and the shard read
          // on (a restart then delivers again from the last checkpoint that was written: at least once).
          await options.checkpoints?.set(options.streamArn, shardId, last).catch((error: unknown) => {
            options.log?.(
              `${options.fn.name}: could not keep the checkpoint of shard ${shardId} (${(error as Error).message})`,
            );
          });
        }
      } finally {
        busy--;
        lastActivityAt = Date.now();
      }
    }
  }

  async function iteratorAfter(shardId: string, sequenceNumber: string): Promise<string | undefined> {
    const out = await options.client.send(
      new GetShardIteratorCommand({
        StreamArn: options.streamArn,
        ShardId: shardId,
        ShardIteratorType: 'AFTER_SEQUENCE_NUMBER',
        SequenceNumber: sequenceNumber,
      }),
    );
    return out.ShardIterator;
  }

  /**
   * Delivers a batch in order, with Lambda's retry, partial-failure and bisect semantics. True once the batch is
   * done with (delivered, or given to on-failure); false when stop() cut it short.
   */
  async function deliver(shardId: string, batch: DynamoDBRecord[]): Promise<boolean> {
    let remaining = batch;
    for (let attempt = 0; remaining.length > 0; attempt++) {
      if (!running) return false;
      invocations++;
      let failedFrom: number;
      let reason = '';
      let threw = false;
      try {
        const result = await invoke(
          options.handler,
          { Records: remaining },
          options.fn,
          options.onInvocation,
        );
        const failedIds = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        failedFrom = remaining.findIndex((r) => failedIds.has(r.dynamodb?.SequenceNumber ?? ''));
        reason = 'reported as a batch item failure';
      } catch (error) {
        failedFrom = 0;
        reason = (error as Error).message;
        threw = true;
      }
      if (failedFrom < 0) return running;
      remaining = remaining.slice(failedFrom);
      if (attempt >= options.trigger.retryAttempts) {
        options.log?.(`${options.fn.name}: giving up on ${remaining.length} stream records: ${reason}`);
        const failure = {
          streamArn: options.streamArn,
          shardId,
          records: remaining,
          invokeCount: attempt + 1,
          reason,
          threw,
        };
        // The batch is let go only once its record is at the destination: moving on without it would lose it unseen.
        for (let sends = 1; options.onFailure; sends++) {
          try {
            await options.onFailure(failure);
            break;
          } catch (error) {
            if (!running) return false;
            options.log?.(
              `${options.fn.name}: on-failure destination refused the record (${(error as Error).message}); again`,
            );
            await sleep(Math.min(5000, 100 * 2 ** sends));
          }
        }
        return true;
      }
      if (options.trigger.bisectBatchOnError && remaining.length > 1) {
        const half = Math.ceil(remaining.length / 2);
        return (
          (await deliver(shardId, remaining.slice(0, half))) &&
          (await deliver(shardId, remaining.slice(half)))
        );
      }
      await sleep(Math.min(2000, 100 * 2 ** attempt));
    }
    return true;
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
