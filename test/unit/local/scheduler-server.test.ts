/**
 * The local EventBridge Scheduler driven only through @aws-sdk/client-scheduler, with firings read back from
 * fauxqs through @aws-sdk/client-sqs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalScheduler, startLocalScheduler } from '#local/scheduler/server.ts';
import { nextFireTime, parseScheduleExpression } from '#shared/domain/schedule-expression.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const region = 'us-east-1';
const account = '000000000000';
const role = `arn:aws:iam::${account}:role/scheduler`;

let sqsServer: FauxqsServer;
let scheduler: LocalScheduler;
let client: SchedulerClient;
let sqs: SQSClient;
let seq = 0;
const stateDir = mkdtempSync(join(tmpdir(), 'crumbs-scheduler-'));
const stateFile = join(stateDir, 'scheduler.json');

beforeAll(async () => {
  sqsServer = await startFauxqs({ port: 0, logger: false });
  scheduler = await startLocalScheduler({
    port: 0,
    sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
    stateFile,
    tickMs: 50,
    retryBaseDelayMs: 1,
    maxDeliveryAttempts: 2,
  });
  client = new SchedulerClient({ endpoint: scheduler.endpoint, region, credentials, maxAttempts: 1 });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${sqsServer.port}`, region, credentials });
  await client.send(new CreateScheduleGroupCommand({ Name: 'crumbs' }));
});

afterAll(async () => {
  client?.destroy();
  sqs?.destroy();
  await scheduler?.stop();
  await sqsServer?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

function newQueue(): { url: string; arn: string } {
  const name = `sched-test-${++seq}`;
  const q = sqsServer.createQueue(name);
  return { url: q.queueUrl, arn: `arn:aws:sqs:${region}:${account}:${name}` };
}

async function drain(url: string): Promise<string[]> {
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

/** Waits (bounded) until the queue has `count` messages; the scheduler's own clock delivers them. */
async function receive(url: string, count: number, timeoutMs = 5000): Promise<string[]> {
  const bodies: string[] = [];
  const deadline = Date.now() + timeoutMs;
  while (bodies.length < count && Date.now() < deadline) {
    bodies.push(...(await drain(url)));
    if (bodies.length < count) await new Promise((r) => setTimeout(r, 50));
  }
  return bodies;
}

/** `at(...)` for a UTC time `ms` from now, whole seconds. */
function atIn(ms: number): string {
  return `at(${new Date(Date.now() + ms).toISOString().slice(0, 19)})`;
}

function schedule(name: string, over: Partial<CreateScheduleCommandInput>): CreateScheduleCommandInput {
  const { arn } = newQueue();
  return {
    Name: name,
    GroupName: 'crumbs',
    ScheduleExpression: atIn(0),
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: arn, RoleArn: role, Input: '{"hello":"world"}' },
    ...over,
  };
}

describe('local Scheduler', () => {
  it('fires a one-time schedule into its SQS target with its Input, then deletes it (ActionAfterCompletion)', async () => {
    const { url, arn } = newQueue();
    await client.send(
      new CreateScheduleCommand(
        schedule('once', {
          // at() has whole seconds: 3 s leaves at least 2 for the read below, even on a loaded machine.
          ScheduleExpression: atIn(3000),
          ActionAfterCompletion: 'DELETE',
          Target: {
            Arn: arn,
            RoleArn: role,
            Input:
              '{"timer":"t1","at":"<aws.scheduler.scheduled-time>","arn":"<aws.scheduler.schedule-arn>"}',
          },
        }),
      ),
    );
    const got = await client.send(new GetScheduleCommand({ Name: 'once', GroupName: 'crumbs' }));
    expect(got).toMatchObject({
      Name: 'once',
      GroupName: 'crumbs',
      State: 'ENABLED',
      ActionAfterCompletion: 'DELETE',
    });
    expect(got.CreationDate).toBeInstanceOf(Date);

    const [body] = await receive(url, 1);
    expect(JSON.parse(body ?? '{}')).toMatchObject({
      timer: 't1',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      arn: `arn:aws:scheduler:${region}:${account}:schedule/crumbs/once`,
    });
    await expect(
      client.send(new GetScheduleCommand({ Name: 'once', GroupName: 'crumbs' })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
  });

  it('fires an at() in a time zone at that wall-clock time', () => {
    const parsed = parseScheduleExpression('at(2026-07-01T09:30:00)', 'Europe/Paris');
    expect(parsed).toMatchObject({ kind: 'at', at: new Date('2026-07-01T07:30:00.000Z') });
  });

  it("reads AWS's six-field cron (1 = Sunday, ?, L, #, steps, years) in a time zone", () => {
    const next = (expression: string, after: string, zone = 'UTC') =>
      nextFireTime(parseScheduleExpression(expression, zone), { from: new Date(after) })?.toISOString();
    expect(next('cron(0 9 ? * MON-FRI *)', '2026-03-07T12:00:00Z', 'Europe/Paris')).toBe(
      '2026-03-09T08:00:00.000Z',
    );
    expect(next('cron(0 12 ? * 1 *)', '2026-03-02T00:00:00Z')).toBe('2026-03-08T12:00:00.000Z'); // a Sunday
    expect(next('cron(15 10 ? * 6L 2026)', '2026-03-01T00:00:00Z')).toBe('2026-03-27T10:15:00.000Z');
    expect(next('cron(0/15 * * * ? *)', '2026-03-01T00:07:00Z')).toBe('2026-03-01T00:15:00.000Z');
    expect(next('cron(0 12 L * ? *)', '2026-02-01T00:00:00Z')).toBe('2026-02-28T12:00:00.000Z');
    expect(next('rate(5 minutes)', '2026-03-01T00:00:00Z')).toBe('2026-03-01T00:05:00.000Z');
    expect(next('cron(0 12 ? * 1 2020)', '2026-03-02T00:00:00Z')).toBeUndefined();
  });

  it('fires a recurring schedule repeatedly until it is deleted', async () => {
    const { url, arn } = newQueue();
    // A cron every minute would take minutes; a schedule whose StartDate is past catches up once, then a rate.
    await client.send(
      new CreateScheduleCommand(
        schedule('recurring', {
          ScheduleExpression: 'rate(1 minute)',
          StartDate: new Date(Date.now() - 60_500),
          Target: { Arn: arn, RoleArn: role, Input: '{"at":"<aws.scheduler.scheduled-time>"}' },
        }),
      ),
    );
    expect(await receive(url, 1)).toHaveLength(1);
    await scheduler.tick();
    expect(await drain(url)).toEqual([]);
    await client.send(new DeleteScheduleCommand({ Name: 'recurring', GroupName: 'crumbs' }));
  });

  it('does not fire a disabled schedule, and an update replaces it', async () => {
    const { url, arn } = newQueue();
    const input = schedule('toggled', { State: 'DISABLED', Target: { Arn: arn, RoleArn: role } });
    await client.send(new CreateScheduleCommand(input));
    await scheduler.tick();
    expect(await drain(url)).toEqual([]);
    await client.send(new UpdateScheduleCommand({ ...input, State: 'ENABLED', Description: 'on' }));
    expect(await receive(url, 1)).toEqual(['{}']);
    expect(await client.send(new GetScheduleCommand({ Name: 'toggled', GroupName: 'crumbs' }))).toMatchObject(
      {
        State: 'ENABLED',
        Description: 'on',
      },
    );
  });

  it('lists schedules by group and prefix, page by page', async () => {
    for (const n of ['list-a', 'list-b', 'list-c']) {
      await client.send(
        new CreateScheduleCommand(schedule(n, { ScheduleExpression: 'cron(0 0 1 1 ? 2099)' })),
      );
    }
    const first = await client.send(
      new ListSchedulesCommand({ GroupName: 'crumbs', NamePrefix: 'list-', MaxResults: 2 }),
    );
    expect(first.Schedules?.map((s) => s.Name)).toEqual(['list-a', 'list-b']);
    const second = await client.send(
      new ListSchedulesCommand({
        GroupName: 'crumbs',
        NamePrefix: 'list-',
        MaxResults: 2,
        NextToken: first.NextToken,
      }),
    );
    expect(second.Schedules?.map((s) => s.Name)).toEqual(['list-c']);
    expect(second.NextToken).toBeUndefined();
  });

  it("answers with Scheduler's errors", async () => {
    await client.send(
      new CreateScheduleCommand(schedule('dup', { ScheduleExpression: 'cron(0 0 1 1 ? 2099)' })),
    );
    await expect(
      client.send(new CreateScheduleCommand(schedule('dup', { ScheduleExpression: 'cron(0 0 1 1 ? 2099)' }))),
    ).rejects.toBeInstanceOf(ConflictException);
    await expect(
      client.send(new GetScheduleCommand({ Name: 'nope', GroupName: 'crumbs' })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
    await expect(
      client.send(
        new CreateScheduleCommand(schedule('bad-cron', { ScheduleExpression: 'cron(0 9 * * MON *)' })),
      ),
    ).rejects.toThrow(/exactly one of day-of-month and day-of-week must be "\?"/);
    await expect(
      client.send(
        new CreateScheduleCommand(schedule('bad-zone', { ScheduleExpressionTimezone: 'Mars/Olympus' })),
      ),
    ).rejects.toBeInstanceOf(ValidationException);
    await expect(
      client.send(new CreateScheduleCommand(schedule('no-group', { GroupName: 'missing' }))),
    ).rejects.toThrow(/Schedule group missing does not exist/);
  });

  it('keeps its schedules across a restart', async () => {
    await client.send(
      new CreateScheduleCommand(schedule('kept', { ScheduleExpression: 'cron(0 0 1 1 ? 2099)' })),
    );
    const again = await startLocalScheduler({
      port: 0,
      sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
      stateFile,
    });
    const other = new SchedulerClient({ endpoint: again.endpoint, region, credentials, maxAttempts: 1 });
    try {
      expect(await other.send(new GetScheduleCommand({ Name: 'kept', GroupName: 'crumbs' }))).toMatchObject({
        ScheduleExpression: 'cron(0 0 1 1 ? 2099)',
      });
    } finally {
      other.destroy();
      await again.stop();
    }
  });
});
