/**
 * Local SQS event-source mapping: long-polls a queue and invokes a handler with Lambda's SQS event shape and
 * semantics — batch size from the topology, `batchItemFailures` (only the failed messages stay), a thrown error
 * leaves the whole batch, the queue's redrive policy moves a message to the DLQ after `maxReceiveCount` receives.
 * Up to `concurrency` invocations run at once, each a batch of what is held (every queue's batching window is 0).
 *
 * Fair queues (DESIGN.md "Tenants"): a message's group is its `MessageGroupId`, which the emulator keeps on FIFO
 * queues only, so the local EventBridge also carries it in a message attribute, turned back into the record's
 * `MessageGroupId` here. Each batch takes first from the groups with the fewest messages in flight, then the least
 * processing time of late, then the oldest, as SQS documents; a group with `inFlightPerGroup` messages running
 * longer than `graceMs` gets no more until one ends, and no group is part of every running invocation. Held
 * messages keep their visibility extended and are made visible again on stop. A failed message stays invisible as
 * long as the handler set with `ChangeMessageVisibility` (`shared/adapters/sqs/sqs-batch.ts`), else for the
 * queue's visibility timeout; there is deliberately no local-only knob to shorten that wait.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { SqsTrigger } from '#shared/topology.ts';
import { FAIR_QUEUE_GROUP_ATTRIBUTE } from '../eventbridge/delivery.ts';
import { type InvocationObserver, invoke, type LambdaHandler } from './lambda-context.ts';

export interface FairShareOptions {
  /** Messages of one group that may run longer than `graceMs` at once. */
  inFlightPerGroup: number;
  /** How long a message runs before it counts against its group's cap. */
  graceMs: number;
}

export interface SqsPollerOptions {
  client: SQSClient;
  queueUrl: string;
  queueArn: string;
  region: string;
  trigger: Pick<SqsTrigger, 'batchSize' | 'maxBatchingWindowSeconds' | 'maxConcurrency'>;
  fn: { name: string; timeoutSeconds: number; memoryMb: number };
  handler: LambdaHandler<SQSEvent, SQSBatchResponse | undefined | undefined>;
  /** Concurrent batches' worth of messages (Lambda's maximum concurrency, capped locally). */
  concurrency?: number;
  /** The queue's visibility timeout: held messages are extended before it runs out. @default 30 */
  visibilityTimeoutSeconds?: number;
  /** The per-group cap; absent: groups are only ordered. */
  fairShare?: FairShareOptions | undefined;
  log?: (line: string) => void;
  /** Told about every invocation (benchmarks). */
  onInvocation?: InvocationObserver;
}

export interface Poller {
  stop(): Promise<void>;
  /** Batches handled so far (for tests and benchmarks). */
  readonly invocations: number;
}

/** A received message waiting for a batch. */
export interface Held {
  message: Message;
  group: string;
  /** When it was received, or its visibility last extended. */
  heldSince: number;
  seq: number;
}

/** A message being handled, in invocation `invocation`. */
export interface Running {
  group: string;
  startedAt: number;
  invocation: number;
}

/** How long past processing time still counts against a group (exponential decay). */
const USAGE_DECAY_MS = 60_000;
/** Messages the poller holds at most (then it stops receiving until batches take some). */
const MAX_HELD = 1000;

/**
 * The next batch: up to `size` held messages, group by group in fair order (fewest in flight, then least recent
 * processing time, then oldest), skipping groups at their cap. Pure, for the unit tests.
 */
export function pickBatch(
  held: readonly Held[],
  running: Iterable<Running>,
  usage: ReadonlyMap<string, number>,
  size: number,
  now: number,
  fairShare: FairShareOptions | undefined,
  /** Invocations one group may be part of at once (the rest stay free for other groups). */
  invocationsPerGroup = Number.POSITIVE_INFINITY,
): Held[] {
  if (size <= 0 || held.length === 0) return [];
  const inFlight = new Map<string, number>();
  const slow = new Map<string, number>();
  const invocations = new Map<string, Set<number>>();
  for (const r of running) {
    inFlight.set(r.group, (inFlight.get(r.group) ?? 0) + 1);
    invocations.set(r.group, (invocations.get(r.group) ?? new Set()).add(r.invocation));
    if (fairShare && now - r.startedAt >= fairShare.graceMs) slow.set(r.group, (slow.get(r.group) ?? 0) + 1);
  }
  const queues = new Map<string, Held[]>();
  for (const h of [...held].sort((a, b) => a.seq - b.seq)) {
    if (fairShare && (slow.get(h.group) ?? 0) >= fairShare.inFlightPerGroup) continue;
    if ((invocations.get(h.group)?.size ?? 0) >= invocationsPerGroup) continue;
    const q = queues.get(h.group) ?? [];
    q.push(h);
    queues.set(h.group, q);
  }
  const batch: Held[] = [];
  while (batch.length < size && queues.size > 0) {
    const rank = (group: string, q: readonly Held[]): [number, number, number] => [
      inFlight.get(group) ?? 0,
      usage.get(group) ?? 0,
      q[0]?.seq ?? 0,
    ];
    let best: string | undefined;
    let bestRank: [number, number, number] = [0, 0, 0];
    for (const [group, q] of queues) {
      const r = rank(group, q);
      if (
        best === undefined ||
        r[0] < bestRank[0] ||
        (r[0] === bestRank[0] && (r[1] < bestRank[1] || (r[1] === bestRank[1] && r[2] < bestRank[2])))
      ) {
        best = group;
        bestRank = r;
      }
    }
    const q = queues.get(best as string) ?? [];
    const next = q.shift();
    if (!next) break;
    batch.push(next);
    inFlight.set(next.group, (inFlight.get(next.group) ?? 0) + 1);
    if (q.length === 0) queues.delete(next.group);
  }
  return batch;
}

/** The message group: the system attribute (FIFO), else the one the local EventBridge carries; '' for none. */
export function groupOf(m: Message): string {
  return m.Attributes?.MessageGroupId ?? m.MessageAttributes?.[FAIR_QUEUE_GROUP_ATTRIBUTE]?.StringValue ?? '';
}

export function startSqsPoller(options: SqsPollerOptions): Poller {
  let running = true;
  let invocations = 0;
  let seq = 0;
  const abort = new AbortController();
  const concurrency = Math.max(1, options.concurrency ?? 1);
  // With a fair share, one group never holds every invocation: a batch of slow work cannot be left early (Lambda
  // ends an invocation when its last message ends), so a quiet group keeps one to itself.
  const invocationsPerGroup =
    options.fairShare && concurrency > 1 ? concurrency - 1 : Number.POSITIVE_INFINITY;
  const invoking = new Set<number>();
  let invocationSeq = 0;
  const visibilityMs = (options.visibilityTimeoutSeconds ?? 30) * 1000;
  const held: Held[] = [];
  const inFlight = new Set<Running>();
  const usage = new Map<string, { ms: number; at: number }>();
  const handling = new Set<Promise<void>>();
  let changed: () => void = () => undefined;
  const nextChange = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      changed = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const notify = () => changed();

  const receiver = receive();
  const dispatcher = dispatch();

  async function receive(): Promise<void> {
    while (running) {
      try {
        if (held.length >= MAX_HELD) {
          await sleep(100);
          continue;
        }
        const out = await options.client.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: abort.signal },
        );
        const now = Date.now();
        for (const message of out.Messages ?? [])
          held.push({ message, group: groupOf(message), heldSince: now, seq: seq++ });
        if ((out.Messages ?? []).length > 0) notify();
        await extendHeld(now);
      } catch (error) {
        if (!running) return;
        options.log?.(`${options.fn.name}: poll error: ${(error as Error).message}`);
        await sleep(500);
      }
    }
  }

  async function dispatch(): Promise<void> {
    while (running) {
      const now = Date.now();
      const batch = pickBatch(
        held,
        inFlight,
        decayedUsage(now),
        invoking.size < concurrency ? options.trigger.batchSize : 0,
        now,
        options.fairShare,
        invocationsPerGroup,
      );
      if (batch.length === 0) {
        await nextChange(200);
        continue;
      }
      for (const h of batch) held.splice(held.indexOf(h), 1);
      const invocation = invocationSeq++;
      invoking.add(invocation);
      const runs = batch.map((h) => ({ group: h.group, startedAt: now, invocation }));
      for (const r of runs) inFlight.add(r);
      invocations++;
      const done = handle(batch.map((h) => h.message))
        .catch((error: unknown) => {
          options.log?.(`${options.fn.name}: ${(error as Error).message}`);
        })
        .finally(() => {
          const end = Date.now();
          for (const r of runs) {
            inFlight.delete(r);
            const u = usage.get(r.group);
            const decayed = u ? u.ms * Math.exp(-(end - u.at) / USAGE_DECAY_MS) : 0;
            usage.set(r.group, { ms: decayed + (end - r.startedAt), at: end });
          }
          handling.delete(done);
          invoking.delete(invocation);
          notify();
        });
      handling.add(done);
    }
  }

  function decayedUsage(now: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const [group, u] of usage) {
      const ms = u.ms * Math.exp(-(now - u.at) / USAGE_DECAY_MS);
      if (ms < 1) usage.delete(group);
      else out.set(group, ms);
    }
    return out;
  }

  /** Held messages whose visibility would run out soon are given the queue's visibility timeout again. */
  async function extendHeld(now: number): Promise<void> {
    const due = held.filter((h) => now - h.heldSince > visibilityMs / 2).slice(0, 10);
    if (due.length === 0) return;
    await changeVisibility(due, Math.ceil(visibilityMs / 1000));
    for (const h of due) h.heldSince = now;
  }

  async function changeVisibility(items: readonly Held[], seconds: number): Promise<void> {
    for (let i = 0; i < items.length; i += 10) {
      await options.client
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: options.queueUrl,
            Entries: items.slice(i, i + 10).map((h, j) => ({
              Id: String(j),
              ReceiptHandle: h.message.ReceiptHandle,
              VisibilityTimeout: seconds,
            })),
          }),
        )
        .catch((error: unknown) => {
          options.log?.(`${options.fn.name}: visibility change failed: ${(error as Error).message}`);
        });
    }
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
    const group = groupOf(m);
    return {
      messageId: m.MessageId ?? '',
      receiptHandle: m.ReceiptHandle ?? '',
      body: m.Body ?? '',
      attributes: {
        ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
        SentTimestamp: a.SentTimestamp ?? String(Date.now()),
        SenderId: a.SenderId ?? 'local',
        ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
        ...(group !== '' ? { MessageGroupId: group } : {}),
      },
      messageAttributes: Object.fromEntries(
        Object.entries(m.MessageAttributes ?? {})
          .filter(([k]) => k !== FAIR_QUEUE_GROUP_ATTRIBUTE)
          .map(([k, v]) => [
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
      notify();
      await Promise.allSettled([receiver, dispatcher, ...handling]);
      // What was held but never handled is visible again at once, for the next poller.
      await changeVisibility(held.splice(0), 0);
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
