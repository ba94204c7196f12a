/**
 * The Scheduler adapter of the Timers and Schedules ports, against the local Scheduler emulator over loopback
 * (the same wire calls as on AWS), with firings read back from fauxqs.
 */
import {
  CreateScheduleGroupCommand,
  GetScheduleCommand,
  ListSchedulesCommand,
  SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalScheduler, startLocalScheduler } from '#local/scheduler/server.ts';
import {
  atExpression,
  SchedulerTimers,
  SchedulerWorkspaceTimers,
  workspaceSchedulePrefix,
} from '#shared/adapters/scheduler/scheduler-timers.ts';
import { RetriableError, WorkspaceDeletedError } from '#shared/domain/errors.ts';
import { TimerMessageSchema } from '#shared/domain/timer-message.ts';
import { startHttpServer } from '../../../support/http-server.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const region = 'us-east-1';

let sqsServer: FauxqsServer;
let scheduler: LocalScheduler;
let client: SchedulerClient;
let sqs: SQSClient;
let queueUrl: string;
let timers: SchedulerTimers;

beforeAll(async () => {
  sqsServer = await startFauxqs({ port: 0, logger: false });
  queueUrl = sqsServer.createQueue('crumbs-timers').queueUrl;
  scheduler = await startLocalScheduler({
    port: 0,
    sqsEndpoint: `http://127.0.0.1:${sqsServer.port}`,
    tickMs: 50,
  });
  client = new SchedulerClient({ endpoint: scheduler.endpoint, region, credentials, maxAttempts: 1 });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${sqsServer.port}`, region, credentials });
  await client.send(new CreateScheduleGroupCommand({ Name: 'crumbs' }));
  timers = new SchedulerTimers(
    {
      group: 'crumbs',
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:crumbs-timers',
      roleArn: 'arn:aws:iam::000000000000:role/crumbs-scheduler',
      minLeadMs: 0,
    },
    client,
  );
});

afterAll(async () => {
  client?.destroy();
  sqs?.destroy();
  await scheduler?.stop();
  await sqsServer?.stop();
});

async function receive(count: number, timeoutMs = 5000): Promise<unknown[]> {
  const out: unknown[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < count && Date.now() < deadline) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    for (const m of r.Messages ?? []) {
      out.push(JSON.parse(m.Body ?? 'null'));
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
    }
    if (out.length < count) await new Promise((r) => setTimeout(r, 50));
  }
  return out;
}

const breadcrumb = {
  id: 'run-1.nap.1.wait',
  schema_name: 'workflow.timer.v1',
  tags: ['run:run-1', 'step:nap', 'reply-to:workflow:wf'],
  context: { timer_id: 'run-1.nap.1.wait' },
};

describe('SchedulerTimers', () => {
  it('sets a one-time timer that fires its breadcrumb into the timers queue once, and is gone after', async () => {
    const timer = { workspace: 'ws', id: 'run-1.nap.1.wait', at: new Date(Date.now() + 1000), breadcrumb };
    await timers.set(timer);
    await timers.set(timer); // a replay
    const [message] = await receive(1);
    expect(TimerMessageSchema.parse(message)).toEqual({ kind: 'timer', workspace: 'ws', breadcrumb });
    await scheduler.tick();
    expect(await receive(1, 300)).toEqual([]);
    const left = await client.send(
      new ListSchedulesCommand({ GroupName: 'crumbs', NamePrefix: 'crumbs-t-' }),
    );
    expect(left.Schedules).toEqual([]);
  });

  it('cancels a timer before it fires; cancelling again is fine', async () => {
    await timers.set({ workspace: 'ws', id: 'cancel-me', at: new Date(Date.now() + 60_000), breadcrumb });
    await timers.cancel('ws', 'cancel-me');
    await timers.cancel('ws', 'cancel-me');
    const left = await client.send(
      new ListSchedulesCommand({ GroupName: 'crumbs', NamePrefix: 'crumbs-t-' }),
    );
    expect(left.Schedules).toEqual([]);
  });

  it('puts, replaces and deletes the recurring schedule of a definition', async () => {
    await timers.put({
      workspace: 'ws',
      definitionId: 'daily',
      expression: 'cron(0 9 ? * MON-FRI *)',
      timezone: 'Europe/Paris',
    });
    await timers.put({ workspace: 'ws', definitionId: 'daily', expression: 'rate(1 hour)' });
    const list = await client.send(
      new ListSchedulesCommand({ GroupName: 'crumbs', NamePrefix: 'crumbs-s-' }),
    );
    expect(list.Schedules).toHaveLength(1);
    const got = await client.send(
      new GetScheduleCommand({ Name: list.Schedules?.[0]?.Name, GroupName: 'crumbs' }),
    );
    expect(got.ScheduleExpression).toBe('rate(1 hour)');
    expect(JSON.parse(got.Target?.Input ?? '{}')).toEqual({
      kind: 'schedule',
      workspace: 'ws',
      definition_id: 'daily',
      fired_at: '<aws.scheduler.scheduled-time>',
    });
    await timers.delete('ws', 'daily');
    await timers.delete('ws', 'daily');
    expect(
      (await client.send(new ListSchedulesCommand({ GroupName: 'crumbs', NamePrefix: 'crumbs-s-' })))
        .Schedules,
    ).toEqual([]);
  });

  it("cancels every timer and schedule of one workspace a page at a time, and no other workspace's", async () => {
    const far = new Date(Date.now() + 3_600_000);
    // More timers than one ListSchedules page (100), a recurring schedule, and the same ids in another workspace.
    await Promise.all(
      Array.from({ length: 105 }, (_, i) =>
        timers.set({ workspace: 'gone', id: `t${i}`, at: far, breadcrumb }),
      ),
    );
    await timers.put({ workspace: 'gone', definitionId: 'daily', expression: 'rate(1 hour)' });
    await timers.set({ workspace: 'kept', id: 't0', at: far, breadcrumb });
    await timers.put({ workspace: 'kept', definitionId: 'daily', expression: 'rate(1 hour)' });
    const names = async (kind: 't' | 's', ws: string) =>
      (
        await client.send(
          new ListSchedulesCommand({ GroupName: 'crumbs', NamePrefix: workspaceSchedulePrefix(kind, ws) }),
        )
      ).Schedules?.length ?? 0;
    expect(await names('t', 'gone')).toBe(100);

    const cancelling = new SchedulerWorkspaceTimers('crumbs', client);
    const pages: { cancelled: number; cursor?: string }[] = [];
    let cursor: string | undefined;
    do {
      const page = await cancelling.cancelAll('gone', cursor);
      pages.push(page);
      cursor = page.cursor;
    } while (cursor !== undefined);
    expect(pages.reduce((n, p) => n + p.cancelled, 0)).toBe(106);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect([await names('t', 'gone'), await names('s', 'gone')]).toEqual([0, 0]);
    expect([await names('t', 'kept'), await names('s', 'kept')]).toEqual([1, 1]);
    await timers.cancel('kept', 't0');
    await timers.delete('kept', 'daily');
  }, 60_000);

  it('sets no timer for a workspace its deletion has sealed', async () => {
    const sealed = new SchedulerTimers(
      {
        group: 'crumbs',
        queueArn: 'arn:aws:sqs:us-east-1:000000000000:crumbs-timers',
        roleArn: 'arn:aws:iam::000000000000:role/crumbs-scheduler',
        seals: {
          refuseSealed: async (workspace) => {
            if (workspace === 'sealed')
              throw new WorkspaceDeletedError(workspace, '2026-01-01T00:00:00Z', undefined);
          },
        },
      },
      client,
    );
    const at = new Date(Date.now() + 3_600_000);
    await expect(sealed.set({ workspace: 'sealed', id: 'late', at, breadcrumb })).rejects.toBeInstanceOf(
      WorkspaceDeletedError,
    );
    expect(
      (
        await client.send(
          new ListSchedulesCommand({
            GroupName: 'crumbs',
            NamePrefix: workspaceSchedulePrefix('t', 'sealed'),
          }),
        )
      ).Schedules,
    ).toEqual([]);
  });

  it.each([
    [408, 'RequestTimeoutError', true],
    [409, 'ConflictException', true],
    [429, 'ThrottlingException', true],
    [402, 'ServiceQuotaExceededException', true],
    [400, 'ValidationException', false],
  ])('judges a Scheduler answer %i (%s) by isRetriable', async (status, type, retriable) => {
    const refusing = await startHttpServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type });
      res.end(JSON.stringify({ message: `answered ${status}` }));
    });
    const refused = new SchedulerClient({ endpoint: refusing.url, region, credentials, maxAttempts: 1 });
    try {
      const scheduled = new SchedulerTimers(
        {
          group: 'crumbs',
          queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
          roleArn: 'arn:aws:iam::0:role/r',
        },
        refused,
      );
      const error = await scheduled.cancel('ws', 'nap').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(retriable ? RetriableError : Error);
      expect(error instanceof RetriableError).toBe(retriable);
    } finally {
      refused.destroy();
      await refusing.close();
    }
  });

  it('writes at() in UTC rounded up to the second', () => {
    expect(atExpression(new Date('2026-01-02T03:04:05.001Z'))).toBe('at(2026-01-02T03:04:06)');
    expect(atExpression(new Date('2026-01-02T03:04:05.000Z'))).toBe('at(2026-01-02T03:04:05)');
  });
});
