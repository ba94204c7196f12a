/**
 * Local DynamoDB Streams event-source mapping: reads the table's stream (DynamoDB Local) shard by shard and invokes
 * a handler with Lambda's DynamoDB stream event shape and semantics — batch size and window from the topology,
 * in-order per shard, `batchItemFailures` resume from the first failed record, a thrown error retries the batch,
 * bisect-on-error splits a failing batch, and after `retryAttempts` the batch goes to the on-failure handler.
 */
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { StreamTrigger } from '#shared/topology.ts';
import { invoke, type LambdaHandler } from './lambda-context.ts';
import type { Poller } from './sqs-poller.ts';

export interface StreamPollerOptions {
  client: DynamoDBStreamsClient;
  streamArn: string;
  region: string;
  trigger: Pick<StreamTrigger, 'batchSize' | 'maxBatchingWindowSeconds' | 'retryAttempts' | 'bisectBatchOnError'>;
  fn: { name: string; timeoutSeconds: number; memoryMb: number };
  handler: LambdaHandler<DynamoDBStreamEvent, DynamoDBBatchResponse | undefined | void>;
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
  const idleWaiters: (() => void)[] = [];
  let lastRecordAt = 0;

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
        new GetShardIteratorCommand({ StreamArn: options.streamArn, ShardId: shardId, ShardIteratorType: position }),
      )
    ).ShardIterator;
    const pending: DynamoDBRecord[] = [];
    while (running && (iterator || pending.length > 0)) {
      if (iterator && pending.length < options.trigger.batchSize) {
        const out = await options.client.send(
          new GetRecordsCommand({ ShardIterator: iterator, Limit: options.trigger.batchSize }),
        );
        iterator = out.NextShardIterator;
        pending.push(...(out.Records ?? []).map(toLambdaRecord));
      }
      if (pending.length === 0) {
        notifyIdle();
        await sleep(50);
        continue;
      }
      lastRecordAt = Date.now();
      busy++;
      try {
        const batch = pending.splice(0, options.trigger.batchSize);
        await deliver(batch);
      } finally {
        busy--;
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

  function notifyIdle(): void {
    if (busy === 0) for (const w of idleWaiters.splice(0)) w();
  }

  return {
    get invocations() {
      return invocations;
    },
    /** Resolves once every shard has caught up with the stream (no batch in flight). */
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        if (Date.now() - lastRecordAt > 5000) notifyIdle();
      });
    },
    async stop() {
      running = false;
      await Promise.allSettled([discovery, ...shards.values()]);
    },
  };

  function toLambdaRecord(record: _Record): DynamoDBRecord {
    const d = record.dynamodb ?? {};
    return {
      eventID: record.eventID,
      eventName: record.eventName as DynamoDBRecord['eventName'],
      eventVersion: record.eventVersion ?? '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: options.region,
      eventSourceARN: options.streamArn,
      ...(record.userIdentity
        ? { userIdentity: { type: record.userIdentity.Type ?? '', principalId: record.userIdentity.PrincipalId ?? '' } }
        : {}),
      dynamodb: {
        ApproximateCreationDateTime:
          d.ApproximateCreationDateTime instanceof Date
            ? Math.floor(d.ApproximateCreationDateTime.getTime() / 1000)
            : Math.floor(Date.now() / 1000),
        Keys: d.Keys as NonNullable<DynamoDBRecord['dynamodb']>['Keys'],
        NewImage: d.NewImage as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'],
        OldImage: d.OldImage as NonNullable<DynamoDBRecord['dynamodb']>['OldImage'],
        SequenceNumber: d.SequenceNumber,
        SizeBytes: d.SizeBytes,
        StreamViewType: d.StreamViewType as NonNullable<DynamoDBRecord['dynamodb']>['StreamViewType'],
      },
    };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
