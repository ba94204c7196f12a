/**
 * Local SQS event-source mapping: long-polls a queue and invokes a handler with Lambda's SQS event shape and
 * semantics — batch size and batching window from the topology, `batchItemFailures` (only the failed messages
 * stay), a thrown error leaves the whole batch, and the queue's redrive policy moves a message to the DLQ after
 * `maxReceiveCount` receives.
 *
 * Like Lambda's event source mapping, the poller does nothing to a failed message: it stays invisible for as long
 * as the handler set with `ChangeMessageVisibility` (the crumbs consumers back off in seconds, see
 * `shared/core/sqs-batch.ts`), else for the queue's visibility timeout. There is deliberately no local-only knob
 * to shorten that wait: it would hide exactly the difference between a handler that backs off and one that
 * leaves a throttled message waiting for minutes.
 */
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { SqsTrigger } from '#shared/topology.ts';
import { type InvocationObserver, invoke, type LambdaHandler } from './lambda-context.ts';

export interface SqsPollerOptions {
  client: SQSClient;
  queueUrl: string;
  queueArn: string;
  region: string;
  trigger: Pick<SqsTrigger, 'batchSize' | 'maxBatchingWindowSeconds' | 'maxConcurrency'>;
  fn: { name: string; timeoutSeconds: number; memoryMb: number };
  handler: LambdaHandler<SQSEvent, SQSBatchResponse | undefined | undefined>;
  /** Concurrent pollers (Lambda's maximum concurrency, capped locally). */
  concurrency?: number;
  log?: (line: string) => void;
  /** Told about every invocation (benchmarks). */
  onInvocation?: InvocationObserver;
}

export interface Poller {
  stop(): Promise<void>;
  /** Batches handled so far (for tests and benchmarks). */
  readonly invocations: number;
}

export function startSqsPoller(options: SqsPollerOptions): Poller {
  let running = true;
  let invocations = 0;
  const abort = new AbortController();
  const workers = Array.from({ length: Math.max(1, options.concurrency ?? 1) }, () => loop());

  async function loop(): Promise<void> {
    while (running) {
      try {
        const batch = await collect();
        if (batch.length === 0 || !running) continue;
        invocations++;
        await handle(batch);
      } catch (error) {
        if (!running) return;
        options.log?.(`${options.fn.name}: poll error: ${(error as Error).message}`);
        await sleep(500);
      }
    }
  }

  /** Up to batchSize messages, waiting at most the batching window after the first one. */
  async function collect(): Promise<Message[]> {
    const { batchSize, maxBatchingWindowSeconds } = options.trigger;
    const messages: Message[] = [];
    const windowEnds = Date.now() + maxBatchingWindowSeconds * 1000;
    do {
      const out = await options.client.send(
        new ReceiveMessageCommand({
          QueueUrl: options.queueUrl,
          MaxNumberOfMessages: Math.min(10, batchSize - messages.length),
          WaitTimeSeconds: messages.length === 0 ? 1 : 0,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: abort.signal },
      );
      messages.push(...(out.Messages ?? []));
      if ((out.Messages ?? []).length === 0 && messages.length > 0) break;
    } while (running && messages.length > 0 && messages.length < batchSize && Date.now() < windowEnds);
    return messages;
  }

  async function handle(messages: Message[]): Promise<void> {
    const event: SQSEvent = { Records: messages.map(toRecord) };
    let failed: Set<string>;
    try {
      const result = await invoke(options.handler, event, options.fn, options.onInvocation);
      failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (error) {
      options.log?.(
        `${options.fn.name}: handler failed, the batch stays on the queue: ${(error as Error).message}`,
      );
      failed = new Set(messages.map((m) => m.MessageId ?? ''));
    }
    const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
    if (done.length > 0) {
      await options.client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: options.queueUrl,
          Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
        }),
      );
    }
  }

  function toRecord(m: Message): SQSRecord {
    const a = m.Attributes ?? {};
    return {
      messageId: m.MessageId ?? '',
      receiptHandle: m.ReceiptHandle ?? '',
      body: m.Body ?? '',
      attributes: {
        ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
        SentTimestamp: a.SentTimestamp ?? String(Date.now()),
        SenderId: a.SenderId ?? 'local',
        ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: Object.fromEntries(
        Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
          k,
          {
            dataType: v.DataType ?? 'String',
            ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
          },
        ]),
      ),
      md5OfBody: m.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: options.queueArn,
      awsRegion: options.region,
    };
  }

  return {
    get invocations() {
      return invocations;
    },
    async stop() {
      running = false;
      abort.abort();
      await Promise.allSettled(workers);
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
