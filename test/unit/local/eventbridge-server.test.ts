/**
 * The local EventBridge driven only through @aws-sdk/client-eventbridge, with deliveries read back from fauxqs
 * through @aws-sdk/client-sqs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  DescribeEventBusCommand,
  DescribeRuleCommand,
  DisableRuleCommand,
  EnableRuleCommand,
  EventBridgeClient,
  ListEventBusesCommand,
  ListRulesCommand,
  ListTargetsByRuleCommand,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
  TestEventPatternCommand,
} from '@aws-sdk/client-eventbridge';
import {
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalEventBridge, startLocalEventBridge } from '#local/eventbridge/server.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const region = 'us-east-1';
const account = '000000000000';

let sqsServer: FauxqsServer;
let bridge: LocalEventBridge;
let eb: EventBridgeClient;
let sqs: SQSClient;
let queueSeq = 0;

beforeAll(async () => {
  sqsServer = await startFauxqs({ port: 0, logger: false });
  bridge = await startLocalEventBridge({
    port: 0,
    sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
    retryBaseDelayMs: 1,
    maxDeliveryAttempts: 2,
  });
  // maxAttempts 1: the SDK would retry LimitExceededException as throttling.
  eb = new EventBridgeClient({ endpoint: bridge.endpoint, region, credentials, maxAttempts: 1 });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${sqsServer.port}`, region, credentials });
});

afterAll(async () => {
  eb?.destroy();
  sqs?.destroy();
  await bridge?.stop();
  await sqsServer?.stop();
});

function newQueue(): { url: string; arn: string } {
  const name = `eb-test-${++queueSeq}`;
  const q = sqsServer.createQueue(name);
  return { url: q.queueUrl, arn: `arn:aws:sqs:${region}:${account}:${name}` };
}

/** Everything in the queue once deliveries have settled (short polls; deliveries are already done). */
async function drain(url: string): Promise<string[]> {
  await bridge.idle();
  const bodies: string[] = [];
  for (;;) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (!r.Messages || r.Messages.length === 0) return bodies;
    for (const m of r.Messages) {
      bodies.push(m.Body ?? '');
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
    }
  }
}

async function rejection(
  promise: Promise<unknown>,
): Promise<{ name: string; message: string; status?: number }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return {
      name: e.name,
      message: e.message,
      ...(e.$metadata?.httpStatusCode ? { status: e.$metadata.httpStatusCode } : {}),
    };
  }
  throw new Error('expected the call to fail');
}

const pattern = (source: string) =>
  JSON.stringify({ source: [source], 'detail-type': ['Breadcrumb Created'] });
const entry = (source: string, detail: unknown, extra: Record<string, unknown> = {}) => ({
  Source: source,
  DetailType: 'Breadcrumb Created',
  Detail: JSON.stringify(detail),
  ...extra,
});

describe('local EventBridge: delivery', () => {
  it('routes a matching event through an InputTransformer to the SQS target, after the PutEvents response', async () => {
    const q = newQueue();
    const put = await eb.send(new PutRuleCommand({ Name: 'transform', EventPattern: pattern('crumbs.t1') }));
    expect(put.RuleArn).toBe(`arn:aws:events:${region}:${account}:rule/transform`);
    const targets = await eb.send(
      new PutTargetsCommand({
        Rule: 'transform',
        Targets: [
          {
            Id: 'q',
            Arn: q.arn,
            InputTransformer: {
              InputPathsMap: { id: '$.detail.id', tags: '$.detail.tags' },
              InputTemplate:
                '{"crumb": <id>, "tags": <tags>, "rule": <aws.events.rule-name>, "note": "crumb <id> from <aws.events.rule-arn>"}',
            },
          },
        ],
      }),
    );
    expect(targets).toMatchObject({ FailedEntryCount: 0, FailedEntries: [] });

    const result = await eb.send(
      new PutEventsCommand({
        Entries: [
          entry('crumbs.t1', { id: 'c1', tags: ['a', 'b'] }, { Time: new Date('2026-11-22T07:50:00.123Z') }),
        ],
      }),
    );
    expect(result.FailedEntryCount).toBe(0);
    expect(result.Entries?.[0]?.EventId).toMatch(/^[0-9a-f-]{36}$/);

    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: q.url, WaitTimeSeconds: 5, MaxNumberOfMessages: 10 }),
    );
    expect(r.Messages).toHaveLength(1);
    expect(JSON.parse(r.Messages?.[0]?.Body ?? '')).toEqual({
      crumb: 'c1',
      tags: ['a', 'b'],
      rule: 'transform',
      note: `crumb c1 from arn:aws:events:${region}:${account}:rule/transform`,
    });
  });

  it('delivers the whole event by default, with EventBridge envelope fields', async () => {
    const q = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'whole', EventPattern: pattern('crumbs.whole') }));
    await eb.send(new PutTargetsCommand({ Rule: 'whole', Targets: [{ Id: 'q', Arn: q.arn }] }));
    const result = await eb.send(
      new PutEventsCommand({
        Entries: [
          entry('crumbs.whole', { n: 1 }, { Time: new Date('2026-11-22T07:50:00.123Z'), Resources: ['r1'] }),
        ],
      }),
    );
    const bodies = await drain(q.url);
    expect(bodies.map((b) => JSON.parse(b))).toEqual([
      {
        version: '0',
        id: result.Entries?.[0]?.EventId,
        'detail-type': 'Breadcrumb Created',
        source: 'crumbs.whole',
        account,
        time: '2026-11-22T07:50:00Z',
        region,
        resources: ['r1'],
        detail: { n: 1 },
      },
    ]);
  });

  it('delivers nothing for a non-matching event', async () => {
    const q = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'nomatch', EventPattern: pattern('crumbs.nomatch') }));
    await eb.send(new PutTargetsCommand({ Rule: 'nomatch', Targets: [{ Id: 'q', Arn: q.arn }] }));
    const before = bridge.stats().matched;
    await eb.send(new PutEventsCommand({ Entries: [entry('crumbs.other', { n: 1 })] }));
    expect(await drain(q.url)).toEqual([]);
    expect(bridge.stats().matched).toBe(before);
  });

  it('sends Input verbatim and the value at InputPath', async () => {
    const q = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'inputs', EventPattern: pattern('crumbs.inputs') }));
    await eb.send(
      new PutTargetsCommand({
        Rule: 'inputs',
        Targets: [
          { Id: 'fixed', Arn: q.arn, Input: '{"fixed": true}' },
          { Id: 'detail', Arn: q.arn, InputPath: '$.detail' },
          { Id: 'deep', Arn: q.arn, InputPath: '$.detail.context.a' },
        ],
      }),
    );
    await eb.send(
      new PutEventsCommand({ Entries: [entry('crumbs.inputs', { context: { a: 'deep value' } })] }),
    );
    const bodies = await drain(q.url);
    expect(bodies.sort()).toEqual(
      ['"deep value"', '{"context":{"a":"deep value"}}', '{"fixed": true}'].sort(),
    );
  });

  it('stops delivering when the rule is disabled and resumes when enabled', async () => {
    const q = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'toggle', EventPattern: pattern('crumbs.toggle') }));
    await eb.send(
      new PutTargetsCommand({ Rule: 'toggle', Targets: [{ Id: 'q', Arn: q.arn, InputPath: '$.detail' }] }),
    );
    await eb.send(new DisableRuleCommand({ Name: 'toggle' }));
    expect((await eb.send(new DescribeRuleCommand({ Name: 'toggle' }))).State).toBe('DISABLED');
    await eb.send(new PutEventsCommand({ Entries: [entry('crumbs.toggle', { n: 1 })] }));
    expect(await drain(q.url)).toEqual([]);
    await eb.send(new EnableRuleCommand({ Name: 'toggle' }));
    await eb.send(new PutEventsCommand({ Entries: [entry('crumbs.toggle', { n: 2 })] }));
    expect(await drain(q.url)).toEqual(['{"n":2}']);
  });

  it('reports per-entry PutEvents errors and accepts the rest', async () => {
    const result = await eb.send(
      new PutEventsCommand({
        Entries: [
          { DetailType: 'x', Detail: '{}' },
          { Source: 'crumbs.e', Detail: '{}' },
          { Source: 'crumbs.e', DetailType: 'x' },
          { Source: 'crumbs.e', DetailType: 'x', Detail: '[1]' },
          { Source: 'crumbs.e', DetailType: 'x', Detail: '{not json' },
          { Source: 'crumbs.e', DetailType: 'x', Detail: '{}', EventBusName: 'no-such-bus' },
          { Source: 'crumbs.e', DetailType: 'x', Detail: '{}' },
        ],
      }),
    );
    expect(result.FailedEntryCount).toBe(6);
    const entries = result.Entries ?? [];
    expect(entries.map((e) => e.ErrorCode)).toEqual([
      'InvalidArgument',
      'InvalidArgument',
      'InvalidArgument',
      'MalformedDetail',
      'MalformedDetail',
      'ResourceNotFoundException',
      undefined,
    ]);
    expect(entries[0]?.ErrorMessage).toBe(
      'Parameter Source is not valid. Reason: Source is a required argument.',
    );
    expect(entries[6]?.EventId).toBeDefined();
  });

  it('rejects more than 10 entries', async () => {
    const entries = Array.from({ length: 11 }, () => entry('crumbs.many', {}));
    const error = await rejection(eb.send(new PutEventsCommand({ Entries: entries })));
    expect(error.name).toBe('ValidationException');
    expect(error.status).toBe(400);
  });

  it('accepts non-SQS targets but counts their deliveries as failed', async () => {
    await eb.send(new PutRuleCommand({ Name: 'lambda', EventPattern: pattern('crumbs.lambda') }));
    await eb.send(
      new PutTargetsCommand({
        Rule: 'lambda',
        Targets: [{ Id: 'fn', Arn: `arn:aws:lambda:${region}:${account}:function:fn` }],
      }),
    );
    const before = bridge.stats();
    await eb.send(
      new PutEventsCommand({ Entries: [entry('crumbs.lambda', {}), entry('crumbs.lambda', {})] }),
    );
    await bridge.idle();
    const after = bridge.stats();
    expect(after.eventsPut - before.eventsPut).toBe(2);
    expect(after.matched - before.matched).toBe(2);
    expect(after.failed - before.failed).toBe(2);
    expect(after.delivered - before.delivered).toBe(0);
  });

  it('sends the original event for a target whose queue was deleted to its DLQ at once, with EventBridge attributes', async () => {
    const dlq = newQueue();
    const target = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'dlq', EventPattern: pattern('crumbs.dlq') }));
    await eb.send(
      new PutTargetsCommand({
        Rule: 'dlq',
        Targets: [
          {
            Id: 'gone',
            Arn: target.arn,
            InputTransformer: { InputPathsMap: { n: '$.detail.n' }, InputTemplate: '{"n": <n>}' },
            DeadLetterConfig: { Arn: dlq.arn },
            RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 60 },
          },
        ],
      }),
    );
    await sqs.send(new DeleteQueueCommand({ QueueUrl: target.url }));
    const before = bridge.stats();
    await eb.send(new PutEventsCommand({ Entries: [entry('crumbs.dlq', { n: 1 })] }));
    await bridge.idle();
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlq.url,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    expect(out.Messages).toHaveLength(1);
    const message = out.Messages?.[0];
    // The event as matched, not the transformed input.
    expect(JSON.parse(message?.Body ?? '{}')).toMatchObject({ source: 'crumbs.dlq', detail: { n: 1 } });
    const attributes = Object.fromEntries(
      Object.entries(message?.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]),
    );
    expect(attributes).toMatchObject({
      RULE_ARN: `arn:aws:events:${region}:${account}:rule/dlq`,
      TARGET_ARN: target.arn,
      ERROR_CODE: 'NO_RESOURCE',
      ERROR_MESSAGE: expect.any(String),
      // A missing resource is not retried.
      RETRY_ATTEMPTS: '0',
    });
    const after = bridge.stats();
    expect(after.failed - before.failed).toBe(1);
    expect(after.deadLettered - before.deadLettered).toBe(1);
    expect(after.retries - before.retries).toBe(0);
    expect(after.inFlight).toBe(0);
  });

  it('drops an undeliverable event when the target has no dead-letter queue', async () => {
    await eb.send(new PutRuleCommand({ Name: 'no-dlq', EventPattern: pattern('crumbs.nodlq') }));
    await eb.send(
      new PutTargetsCommand({
        Rule: 'no-dlq',
        Targets: [{ Id: 'gone', Arn: `arn:aws:sqs:${region}:${account}:does-not-exist` }],
      }),
    );
    const before = bridge.stats();
    await eb.send(new PutEventsCommand({ Entries: [entry('crumbs.nodlq', { n: 1 })] }));
    await bridge.idle();
    const after = bridge.stats();
    expect(after.failed - before.failed).toBe(1);
    expect(after.deadLettered - before.deadLettered).toBe(0);
  });
});

describe('local EventBridge: rules and targets', () => {
  it('TestEventPattern answers true and false, and rejects invalid patterns and events', async () => {
    const event = JSON.stringify({
      id: '1',
      account,
      source: 'crumbs',
      time: '2026-11-22T07:50:00Z',
      region,
      resources: [],
      'detail-type': 'Breadcrumb Created',
      detail: { schema_name: 'user.message.v1' },
    });
    const yes = await eb.send(
      new TestEventPatternCommand({
        EventPattern: JSON.stringify({ detail: { schema_name: ['user.message.v1'] } }),
        Event: event,
      }),
    );
    expect(yes.Result).toBe(true);
    const no = await eb.send(
      new TestEventPatternCommand({ EventPattern: JSON.stringify({ source: ['other'] }), Event: event }),
    );
    expect(no.Result).toBe(false);

    const bad = await rejection(
      eb.send(new TestEventPatternCommand({ EventPattern: '{"source": "not-an-array"}', Event: event })),
    );
    expect(bad.name).toBe('InvalidEventPatternException');
    expect(bad.message).toMatch(/^Event pattern is not valid\. Reason: /);
    const notJson = await rejection(
      eb.send(new TestEventPatternCommand({ EventPattern: '{', Event: event })),
    );
    expect(notJson.name).toBe('InvalidEventPatternException');

    const missing = await rejection(
      eb.send(
        new TestEventPatternCommand({ EventPattern: '{"source":["crumbs"]}', Event: '{"source":"crumbs"}' }),
      ),
    );
    expect(missing).toMatchObject({ name: 'ValidationException', message: 'Parameter Event is not valid.' });
  });

  it('PutRule rejects invalid patterns and names', async () => {
    const bad = await rejection(
      eb.send(new PutRuleCommand({ Name: 'bad', EventPattern: '{"source": "x"}' })),
    );
    expect(bad.name).toBe('InvalidEventPatternException');
    const name = await rejection(
      eb.send(new PutRuleCommand({ Name: 'has space', EventPattern: pattern('x') })),
    );
    expect(name.name).toBe('ValidationException');
    const long = await rejection(
      eb.send(new PutRuleCommand({ Name: 'x'.repeat(65), EventPattern: pattern('x') })),
    );
    expect(long.name).toBe('ValidationException');
    const neither = await rejection(eb.send(new PutRuleCommand({ Name: 'neither' })));
    expect(neither.name).toBe('ValidationException');
  });

  it('answers ResourceNotFoundException for unknown rules and buses', async () => {
    const rule = await rejection(eb.send(new DescribeRuleCommand({ Name: 'nope' })));
    expect(rule).toEqual({
      name: 'ResourceNotFoundException',
      message: 'Rule nope does not exist on EventBus default.',
      status: 400,
    });
    const bus = await rejection(eb.send(new DescribeEventBusCommand({ Name: 'nope-bus' })));
    expect(bus).toMatchObject({
      name: 'ResourceNotFoundException',
      message: 'Event bus nope-bus does not exist.',
    });
    const onBus = await rejection(
      eb.send(new PutRuleCommand({ Name: 'r', EventBusName: 'nope-bus', EventPattern: pattern('x') })),
    );
    expect(onBus.name).toBe('ResourceNotFoundException');
    const targets = await rejection(eb.send(new ListTargetsByRuleCommand({ Rule: 'nope' })));
    expect(targets.name).toBe('ResourceNotFoundException');
    const disable = await rejection(eb.send(new DisableRuleCommand({ Name: 'nope' })));
    expect(disable.name).toBe('ResourceNotFoundException');
  });

  it('ListRules filters by NamePrefix and pages with Limit and NextToken', async () => {
    for (const n of ['page-c', 'page-a', 'page-b', 'page-d', 'page-e']) {
      await eb.send(new PutRuleCommand({ Name: n, EventPattern: pattern(n) }));
    }
    const names: string[] = [];
    let NextToken: string | undefined;
    let pages = 0;
    do {
      const r = await eb.send(new ListRulesCommand({ NamePrefix: 'page-', Limit: 2, NextToken }));
      names.push(...(r.Rules ?? []).map((x) => x.Name ?? ''));
      NextToken = r.NextToken;
      pages++;
    } while (NextToken);
    expect(names).toEqual(['page-a', 'page-b', 'page-c', 'page-d', 'page-e']);
    expect(pages).toBe(3);
    const one = await eb.send(new ListRulesCommand({ NamePrefix: 'page-c' }));
    expect(one.Rules).toEqual([
      {
        Name: 'page-c',
        Arn: `arn:aws:events:${region}:${account}:rule/page-c`,
        EventPattern: pattern('page-c'),
        State: 'ENABLED',
        EventBusName: 'default',
      },
    ]);
    expect(one.NextToken).toBeUndefined();
  });

  it('refuses to delete a rule with targets; RemoveTargets then DeleteRule works', async () => {
    const q = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'doomed', EventPattern: pattern('doomed') }));
    await eb.send(
      new PutTargetsCommand({
        Rule: 'doomed',
        Targets: [
          { Id: 'a', Arn: q.arn },
          { Id: 'b', Arn: q.arn },
        ],
      }),
    );
    const listed = await eb.send(new ListTargetsByRuleCommand({ Rule: 'doomed' }));
    expect(listed.Targets?.map((t) => t.Id)).toEqual(['a', 'b']);

    const error = await rejection(eb.send(new DeleteRuleCommand({ Name: 'doomed' })));
    expect(error).toMatchObject({
      name: 'ValidationException',
      message: "Rule can't be deleted since it has targets.",
    });

    const removed = await eb.send(new RemoveTargetsCommand({ Rule: 'doomed', Ids: ['a', 'b'] }));
    expect(removed.FailedEntryCount).toBe(0);
    await eb.send(new DeleteRuleCommand({ Name: 'doomed' }));
    expect((await rejection(eb.send(new DescribeRuleCommand({ Name: 'doomed' })))).name).toBe(
      'ResourceNotFoundException',
    );
    // Deleting again succeeds, as in EventBridge.
    await eb.send(new DeleteRuleCommand({ Name: 'doomed' }));
  });

  it("keeps each target's DeadLetterConfig and RetryPolicy, lists them, and checks the policy's ranges", async () => {
    const q = newQueue();
    const dlq = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'guarded', EventPattern: pattern('guarded') }));
    await eb.send(
      new PutTargetsCommand({
        Rule: 'guarded',
        Targets: [
          {
            Id: 'a',
            Arn: q.arn,
            DeadLetterConfig: { Arn: dlq.arn },
            RetryPolicy: { MaximumRetryAttempts: 24, MaximumEventAgeInSeconds: 3600 },
          },
        ],
      }),
    );
    const listed = await eb.send(new ListTargetsByRuleCommand({ Rule: 'guarded' }));
    expect(listed.Targets?.[0]).toMatchObject({
      Id: 'a',
      Arn: q.arn,
      DeadLetterConfig: { Arn: dlq.arn },
      RetryPolicy: { MaximumRetryAttempts: 24, MaximumEventAgeInSeconds: 3600 },
    });
    for (const RetryPolicy of [{ MaximumRetryAttempts: 186 }, { MaximumEventAgeInSeconds: 59 }]) {
      const error = await rejection(
        eb.send(new PutTargetsCommand({ Rule: 'guarded', Targets: [{ Id: 'a', Arn: q.arn, RetryPolicy }] })),
      );
      expect(error.name).toBe('ValidationException');
    }
  });

  it('limits a rule to 5 targets', async () => {
    const q = newQueue();
    await eb.send(new PutRuleCommand({ Name: 'crowded', EventPattern: pattern('crowded') }));
    const five = Array.from({ length: 5 }, (_, i) => ({ Id: `t${i}`, Arn: q.arn }));
    await eb.send(new PutTargetsCommand({ Rule: 'crowded', Targets: five }));
    const error = await rejection(
      eb.send(new PutTargetsCommand({ Rule: 'crowded', Targets: [{ Id: 't5', Arn: q.arn }] })),
    );
    expect(error.name).toBe('LimitExceededException');
    // Replacing an existing target is not adding one.
    await eb.send(
      new PutTargetsCommand({ Rule: 'crowded', Targets: [{ Id: 't0', Arn: q.arn, Input: '{}' }] }),
    );
    const bad = await rejection(
      eb.send(
        new PutTargetsCommand({
          Rule: 'crowded',
          Targets: [{ Id: 't0', Arn: q.arn, Input: '{', InputPath: '$' }],
        }),
      ),
    );
    expect(bad.name).toBe('ValidationException');
  });

  it('creates, describes, lists and deletes custom buses, whose rules have bus-scoped ARNs', async () => {
    const created = await eb.send(new CreateEventBusCommand({ Name: 'crumbs-bus' }));
    expect(created.EventBusArn).toBe(`arn:aws:events:${region}:${account}:event-bus/crumbs-bus`);
    const again = await rejection(eb.send(new CreateEventBusCommand({ Name: 'crumbs-bus' })));
    expect(again.name).toBe('ResourceAlreadyExistsException');

    const described = await eb.send(new DescribeEventBusCommand({ Name: 'crumbs-bus' }));
    expect(described).toMatchObject({ Name: 'crumbs-bus', Arn: created.EventBusArn });
    const byArn = await eb.send(new DescribeEventBusCommand({ Name: created.EventBusArn }));
    expect(byArn.Name).toBe('crumbs-bus');
    expect((await eb.send(new DescribeEventBusCommand({}))).Name).toBe('default');

    const buses = await eb.send(new ListEventBusesCommand({}));
    expect(buses.EventBuses?.map((b) => b.Name)).toEqual(expect.arrayContaining(['default', 'crumbs-bus']));
    const prefixed = await eb.send(new ListEventBusesCommand({ NamePrefix: 'crumbs-' }));
    expect(prefixed.EventBuses?.map((b) => b.Name)).toEqual(['crumbs-bus']);

    const rule = await eb.send(
      new PutRuleCommand({ Name: 'on-bus', EventBusName: 'crumbs-bus', EventPattern: pattern('crumbs.bus') }),
    );
    expect(rule.RuleArn).toBe(`arn:aws:events:${region}:${account}:rule/crumbs-bus/on-bus`);
    const q = newQueue();
    await eb.send(
      new PutTargetsCommand({
        Rule: 'on-bus',
        EventBusName: 'crumbs-bus',
        Targets: [{ Id: 'q', Arn: q.arn, InputPath: '$.detail' }],
      }),
    );
    // The default bus does not see the custom bus's rules.
    expect((await rejection(eb.send(new DescribeRuleCommand({ Name: 'on-bus' })))).name).toBe(
      'ResourceNotFoundException',
    );
    await eb.send(new PutEventsCommand({ Entries: [entry('crumbs.bus', { on: 'default' })] }));
    await eb.send(
      new PutEventsCommand({
        Entries: [entry('crumbs.bus', { on: 'custom' }, { EventBusName: 'crumbs-bus' })],
      }),
    );
    expect(await drain(q.url)).toEqual(['{"on":"custom"}']);

    const defaultDelete = await rejection(eb.send(new DeleteEventBusCommand({ Name: 'default' })));
    expect(defaultDelete.name).toBe('ValidationException');
    await eb.send(new DeleteEventBusCommand({ Name: 'crumbs-bus' }));
    expect((await rejection(eb.send(new DescribeEventBusCommand({ Name: 'crumbs-bus' })))).name).toBe(
      'ResourceNotFoundException',
    );
  });
});

describe('local EventBridge: persistence', () => {
  it('keeps buses, rules and targets across restarts when given a state file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crumbs-eb-'));
    const stateFile = join(dir, 'eventbridge.json');
    const q = newQueue();
    try {
      const first = await startLocalEventBridge({
        port: 0,
        sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
        stateFile,
      });
      const c1 = new EventBridgeClient({ endpoint: first.endpoint, region, credentials });
      await c1.send(new CreateEventBusCommand({ Name: 'kept' }));
      await c1.send(
        new PutRuleCommand({ Name: 'kept-rule', EventBusName: 'kept', EventPattern: pattern('crumbs.kept') }),
      );
      await c1.send(
        new PutTargetsCommand({
          Rule: 'kept-rule',
          EventBusName: 'kept',
          Targets: [{ Id: 'q', Arn: q.arn }],
        }),
      );
      c1.destroy();
      await first.stop();

      const second = await startLocalEventBridge({
        port: 0,
        sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
        stateFile,
      });
      const c2 = new EventBridgeClient({ endpoint: second.endpoint, region, credentials });
      const rule = await c2.send(new DescribeRuleCommand({ Name: 'kept-rule', EventBusName: 'kept' }));
      expect(rule.Arn).toBe(`arn:aws:events:${region}:${account}:rule/kept/kept-rule`);
      await c2.send(
        new PutEventsCommand({ Entries: [entry('crumbs.kept', { k: 1 }, { EventBusName: 'kept' })] }),
      );
      await second.idle();
      const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.url, WaitTimeSeconds: 0 }));
      expect(JSON.parse(r.Messages?.[0]?.Body ?? '{}').detail).toEqual({ k: 1 });
      c2.destroy();
      await second.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('local EventBridge: quotas', () => {
  it('refuses the 301st rule on a bus with LimitExceededException, as AWS does at its default quota', async () => {
    await eb.send(new CreateEventBusCommand({ Name: 'quota-default' }));
    const put = (i: number) =>
      eb.send(
        new PutRuleCommand({ Name: `r-${i}`, EventBusName: 'quota-default', EventPattern: pattern(`q${i}`) }),
      );
    for (let i = 1; i <= 300; i++) await put(i);
    const error = await rejection(put(301));
    expect(error.name).toBe('LimitExceededException');
    expect(error.message).toBe('The requested resource exceeds the maximum number allowed.');
    // Nothing was created; replacing one of the 300 is not a new rule; another bus has its own quota.
    const missing = await rejection(
      eb.send(new DescribeRuleCommand({ Name: 'r-301', EventBusName: 'quota-default' })),
    );
    expect(missing.name).toBe('ResourceNotFoundException');
    await eb.send(
      new PutRuleCommand({ Name: 'r-7', EventBusName: 'quota-default', EventPattern: pattern('changed') }),
    );
    await eb.send(new PutRuleCommand({ Name: 'r-301', EventPattern: pattern('elsewhere') }));
    // Deleting one makes room for one.
    await eb.send(new DeleteRuleCommand({ Name: 'r-1', EventBusName: 'quota-default' }));
    await put(301);
    expect((await rejection(put(302))).name).toBe('LimitExceededException');
  });

  it('enforces raised or lowered quotas: rules per bus, targets per rule, pattern size and PutEvents size', async () => {
    const small = await startLocalEventBridge({
      port: 0,
      sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
      quotas: { rulesPerBus: 2, targetsPerRule: 2, eventPatternSize: 100, putEventsBytes: 1000 },
    });
    const c = new EventBridgeClient({ endpoint: small.endpoint, region, credentials, maxAttempts: 1 });
    try {
      expect(small.quotas).toEqual({
        rulesPerBus: 2,
        targetsPerRule: 2,
        eventPatternSize: 100,
        putEventsBytes: 1000,
      });
      await c.send(new PutRuleCommand({ Name: 'a', EventPattern: pattern('a') }));
      await c.send(new PutRuleCommand({ Name: 'b', EventPattern: pattern('b') }));
      expect(
        (await rejection(c.send(new PutRuleCommand({ Name: 'c', EventPattern: pattern('c') })))).name,
      ).toBe('LimitExceededException');

      const q = newQueue();
      const targets = (ids: string[]) => ids.map((Id) => ({ Id, Arn: q.arn }));
      await c.send(new PutTargetsCommand({ Rule: 'a', Targets: targets(['t1', 't2']) }));
      const crowded = await rejection(c.send(new PutTargetsCommand({ Rule: 'a', Targets: targets(['t3']) })));
      expect(crowded.name).toBe('LimitExceededException');

      const long = JSON.stringify({ source: ['x'.repeat(120)] });
      const tooLong = await rejection(c.send(new PutRuleCommand({ Name: 'a', EventPattern: long })));
      expect(tooLong.name).toBe('LimitExceededException');
      expect(tooLong.message).toContain('Event pattern size');

      const big = await rejection(
        c.send(new PutEventsCommand({ Entries: [entry('crumbs.big', { text: 'x'.repeat(1000) })] })),
      );
      expect(big.name).toBe('ValidationException');
      const fits = await c.send(new PutEventsCommand({ Entries: [entry('crumbs.small', { text: 'x' })] }));
      expect(fits.FailedEntryCount).toBe(0);
    } finally {
      c.destroy();
      await small.stop();
    }
  });
});
