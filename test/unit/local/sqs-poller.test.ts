import {
  EventBridgeClient,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Held, pickBatch, type Running, startSqsPoller } from '#local/event-sources/sqs-poller.ts';
import { FAIR_QUEUE_GROUP_ATTRIBUTE } from '#local/eventbridge/delivery.ts';
import { type LocalEventBridge, startLocalEventBridge } from '#local/eventbridge/server.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const region = 'us-east-1';
const account = '000000000000';

const heldMessage = (group: string, seq: number): Held => ({
  message: { MessageId: `${group}-${seq}` },
  group,
  heldSince: 0,
  seq,
});
const ids = (batch: Held[]) => batch.map((h) => h.message.MessageId);

describe('pickBatch (fair queue order)', () => {
  it('serves a quiet group before the backlog of a group with messages in flight', () => {
    const backlog = [0, 1, 2, 3].map((i) => heldMessage('hog', i));
    const running: Running[] = [{ group: 'hog', startedAt: 0, invocation: 1 }];
    const batch = pickBatch([...backlog, heldMessage('quiet', 9)], running, new Map(), 2, 10, undefined);
    expect(ids(batch)).toEqual(['quiet-9', 'hog-0']);
  });

  it('interleaves groups by what each has in flight, oldest first within a group', () => {
    const all = [
      heldMessage('a', 0),
      heldMessage('a', 1),
      heldMessage('a', 2),
      heldMessage('b', 3),
      heldMessage('b', 4),
    ];
    expect(ids(pickBatch(all, [], new Map(), 4, 0, undefined))).toEqual(['a-0', 'b-3', 'a-1', 'b-4']);
  });

  it('orders groups with equal messages in flight by their recent processing time', () => {
    const batch = pickBatch(
      [heldMessage('busy', 0), heldMessage('idle', 1)],
      [],
      new Map([['busy', 30_000]]),
      1,
      0,
      undefined,
    );
    expect(ids(batch)).toEqual(['idle-1']);
  });

  it('keeps a group out of the last invocation, for other groups', () => {
    const running: Running[] = [
      { group: 'busy', startedAt: 0, invocation: 1 },
      { group: 'busy', startedAt: 0, invocation: 2 },
    ];
    const held = [0, 1].map((i) => heldMessage('busy', i));
    expect(ids(pickBatch(held, running, new Map(), 5, 0, undefined, 2))).toEqual([]);
    expect(
      ids(pickBatch([...held, heldMessage('quiet', 2)], running, new Map(), 5, 0, undefined, 2)),
    ).toEqual(['quiet-2']);
    expect(ids(pickBatch(held, running, new Map(), 5, 0, undefined, 3))).toEqual(['busy-0', 'busy-1']);
  });

  it('holds back a group with its cap of messages running past the grace period', () => {
    const fair = { inFlightPerGroup: 2, graceMs: 1000 };
    const running: Running[] = [
      { group: 'hog', startedAt: 0, invocation: 1 },
      { group: 'hog', startedAt: 0, invocation: 1 },
    ];
    expect(ids(pickBatch([heldMessage('hog', 5)], running, new Map(), 5, 5000, fair))).toEqual([]);
    // Still within the grace period: quick work is not capped.
    expect(ids(pickBatch([heldMessage('hog', 5)], running, new Map(), 5, 500, fair))).toEqual(['hog-5']);
  });
});

describe('startSqsPoller (local fair queue)', () => {
  let sqsServer: FauxqsServer;
  let bridge: LocalEventBridge;
  let sqs: SQSClient;
  let eb: EventBridgeClient;
  let n = 0;

  beforeAll(async () => {
    sqsServer = await startFauxqs({ port: 0, logger: false });
    bridge = await startLocalEventBridge({ port: 0, sqsEndpoint: `http://127.0.0.1:${sqsServer.port}` });
    sqs = new SQSClient({ endpoint: `http://127.0.0.1:${sqsServer.port}`, region, credentials });
    eb = new EventBridgeClient({ endpoint: bridge.endpoint, region, credentials });
  });
  afterAll(async () => {
    sqs?.destroy();
    eb?.destroy();
    await bridge?.stop();
    await sqsServer?.stop();
  });

  function queue() {
    const name = `poller-test-${++n}`;
    const q = sqsServer.createQueue(name);
    return { url: q.queueUrl, arn: `arn:aws:sqs:${region}:${account}:${name}` };
  }

  it("answers a quiet group's message while a hog's messages hold the group's cap", async () => {
    const q = queue();
    const release: (() => void)[] = [];
    const seen: string[] = [];
    let quietSeen: () => void = () => undefined;
    const quietDone = new Promise<void>((resolve) => {
      quietSeen = resolve;
    });
    const poller = startSqsPoller({
      client: sqs,
      queueUrl: q.url,
      queueArn: q.arn,
      region,
      // Room for two messages at once; the hog may hold one (its cap), the quiet group gets the other.
      trigger: { batchSize: 1, maxBatchingWindowSeconds: 0, maxConcurrency: 2 },
      concurrency: 2,
      fn: { name: 'fair-test', timeoutSeconds: 30, memoryMb: 128 },
      fairShare: { inFlightPerGroup: 1, graceMs: 0 },
      handler: async (event) => {
        for (const r of event.Records) {
          seen.push(r.attributes.MessageGroupId ?? '');
          if (r.attributes.MessageGroupId === 'quiet') quietSeen();
          else await new Promise<void>((resolve) => release.push(resolve));
        }
        return { batchItemFailures: [] };
      },
    });
    try {
      for (let i = 0; i < 5; i++) await send(q.url, 'hog', `h${i}`);
      await send(q.url, 'quiet', 'q');
      await quietDone;
      // The quiet message was handled while the hog still held its one message in flight.
      expect(seen.filter((g) => g === 'hog')).toHaveLength(1);
      expect(seen).toContain('quiet');
    } finally {
      const stopping = poller.stop();
      for (;;) {
        const r = release.shift();
        if (r) r();
        else if (await Promise.race([stopping.then(() => true), sleep(20).then(() => false)])) break;
      }
    }
  });

  it('gets MessageGroupId from a rule target through the local EventBridge, without the carrier attribute', async () => {
    const q = queue();
    await eb.send(new PutRuleCommand({ Name: `fair-${n}`, EventPattern: JSON.stringify({ source: ['t'] }) }));
    await eb.send(
      new PutTargetsCommand({
        Rule: `fair-${n}`,
        Targets: [{ Id: 'q', Arn: q.arn, SqsParameters: { MessageGroupId: 'team-a' } }],
      }),
    );
    const records: SQSRecord[] = [];
    let got: () => void = () => undefined;
    const received = new Promise<void>((resolve) => {
      got = resolve;
    });
    const poller = startSqsPoller({
      client: sqs,
      queueUrl: q.url,
      queueArn: q.arn,
      region,
      trigger: { batchSize: 10, maxBatchingWindowSeconds: 0, maxConcurrency: 2 },
      fn: { name: 'group-test', timeoutSeconds: 30, memoryMb: 128 },
      handler: async (event) => {
        records.push(...event.Records);
        got();
        return { batchItemFailures: [] };
      },
    });
    try {
      await eb.send(new PutEventsCommand({ Entries: [{ Source: 't', DetailType: 'x', Detail: '{}' }] }));
      await received;
      expect(records[0]?.attributes.MessageGroupId).toBe('team-a');
      expect(Object.keys(records[0]?.messageAttributes ?? {})).not.toContain(FAIR_QUEUE_GROUP_ATTRIBUTE);
    } finally {
      await poller.stop();
    }
  });

  async function send(url: string, group: string, body: string) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: body,
        MessageAttributes: { [FAIR_QUEUE_GROUP_ATTRIBUTE]: { DataType: 'String', StringValue: group } },
      }),
    );
  }
});

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
