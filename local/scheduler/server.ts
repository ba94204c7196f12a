/**
 * crumbs' local EventBridge Scheduler: a node:http service speaking the Scheduler API wire protocol (REST-JSON:
 * `POST /schedules/{Name}`, `GET /schedules?ScheduleGroup=…`, …), so `@aws-sdk/client-scheduler` works against it
 * unchanged, and a clock that fires due schedules into their SQS targets (every `tickMs`, 200 ms by default).
 *
 * Supported: Create/Get/Update/Delete/ListSchedules and Create/Get/Delete/ListScheduleGroups; at() / rate() /
 * cron() with ScheduleExpressionTimezone, StartDate, EndDate, State and ActionAfterCompletion (DELETE removes a
 * schedule after its last firing); SQS targets with `Input` and the `<aws.scheduler.*>` context attributes;
 * retries (bounded locally) and DeadLetterConfig. Not supported: other target types (the firing fails with a log
 * line), flexible windows (a FLEXIBLE schedule fires at its earliest time), tags, KMS. Signatures are not verified.
 *
 * Where AWS leaves the local case open: a time that passed while the emulator was not running fires once when it
 * starts (missed cron and rate times coalesce), and an at() already in the past fires at once. State (groups,
 * schedules, last firing) is saved to `stateFile`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { nextFireTime } from '#shared/domain/schedule-expression.ts';
import {
  type EmulatorOptions,
  loadStateFile,
  pageByName,
  parseJsonObject,
  readBody,
  saveStateFile,
  sendJson,
  startEmulatorServer,
} from '../emulator-http.ts';
import { parseSqsArn } from '../eventbridge/delivery.ts';
import { SchedulerError, validation } from './errors.ts';
import {
  DEFAULT_GROUP,
  type Schedule,
  type ScheduleGroup,
  SchedulerState,
  type SerializedState,
} from './state.ts';

/** `stateFile` keeps groups, schedules and each schedule's last firing. */
export interface LocalSchedulerOptions extends EmulatorOptions {
  /** How often due schedules are looked for (default 200 ms). */
  tickMs?: number;
  /** Delivery attempts before dead-lettering or dropping (default 5). */
  maxDeliveryAttempts?: number;
  retryBaseDelayMs?: number;
}

export interface LocalSchedulerStats {
  fired: number;
  delivered: number;
  failed: number;
  deadLettered: number;
}

export interface LocalScheduler {
  readonly endpoint: string;
  readonly port: number;
  stats(): LocalSchedulerStats;
  /** Fires what is due now (the clock does this on its own; tests call it to not wait for a tick). */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

const MAX_REQUEST_BYTES = 1024 * 1024;

type Input = Record<string, unknown>;

/** Scheduler's `scheduled-time` context attribute: ISO 8601 without milliseconds. */
function isoSeconds(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** The target input with Scheduler's context attributes filled in. */
export function renderInput(
  input: string | undefined,
  context: { scheduleArn: string; scheduledTime: Date; executionId: string; attempt: number },
): string {
  return (input ?? '{}')
    .replaceAll('<aws.scheduler.schedule-arn>', context.scheduleArn)
    .replaceAll('<aws.scheduler.scheduled-time>', isoSeconds(context.scheduledTime))
    .replaceAll('<aws.scheduler.execution-id>', context.executionId)
    .replaceAll('<aws.scheduler.attempt-number>', String(context.attempt));
}

function describe(s: Schedule): Input {
  const { lastScheduled: _ls, lastFiredAt: _lf, ...wire } = s;
  return wire;
}

function summary(s: Schedule): Input {
  return {
    Arn: s.Arn,
    Name: s.Name,
    GroupName: s.GroupName,
    State: s.State,
    CreationDate: s.CreationDate,
    LastModificationDate: s.LastModificationDate,
    Target: { Arn: s.Target.Arn },
  };
}

function describeGroup(g: ScheduleGroup): Input {
  return { ...g, State: 'ACTIVE' };
}

function paged<T>(
  items: T[],
  nameOf: (item: T) => string,
  query: URLSearchParams,
): { items: T[]; NextToken?: string } {
  const maxRaw = query.get('MaxResults');
  const max = maxRaw === null ? 100 : Number(maxRaw);
  if (!Number.isInteger(max) || max < 1 || max > 100)
    throw validation('MaxResults must be between 1 and 100.');
  return pageByName(items, nameOf, (a, b) => a.localeCompare(b), max, query.get('NextToken') ?? undefined);
}

export async function startLocalScheduler(options: LocalSchedulerOptions): Promise<LocalScheduler> {
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '000000000000';
  const log = options.log;
  const state = new SchedulerState(region, accountId);
  const saved = loadStateFile(options.stateFile);
  if (saved !== undefined) state.load(saved as SerializedState, log);
  const stats: LocalSchedulerStats = { fired: 0, delivered: 0, failed: 0, deadLettered: 0 };
  const sqs = new SQSClient({
    endpoint: options.sqsEndpoint,
    region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    useQueueUrlAsEndpoint: false,
  });
  const maxAttempts = options.maxDeliveryAttempts ?? 5;
  const baseDelayMs = options.retryBaseDelayMs ?? 100;
  const inFlight = new Set<Promise<void>>();

  function save(): void {
    saveStateFile(options.stateFile, state.serialize());
  }

  async function send(arn: string, body: string, groupId: string | undefined, dedup: string): Promise<void> {
    const queue = parseSqsArn(arn);
    if (queue === undefined)
      throw new Error(`${arn} is not an SQS queue ARN; only SQS targets are delivered locally`);
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: queue.queue }));
    const fifo = queue.queue.endsWith('.fifo');
    await sqs.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: body,
        ...(fifo ? { MessageGroupId: groupId ?? 'scheduler', MessageDeduplicationId: dedup } : {}),
      }),
    );
  }

  async function deliver(schedule: Schedule, scheduledTime: Date): Promise<void> {
    const executionId = randomUUID();
    const attempts = Math.min(
      maxAttempts,
      1 + (schedule.Target.RetryPolicy?.MaximumRetryAttempts ?? maxAttempts),
    );
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const body = renderInput(schedule.Target.Input, {
        scheduleArn: schedule.Arn,
        scheduledTime,
        executionId,
        attempt,
      });
      try {
        await send(schedule.Target.Arn, body, schedule.Target.SqsParameters?.MessageGroupId, executionId);
        stats.delivered++;
        return;
      } catch (error) {
        lastError = error;
        if (attempt < attempts) await new Promise((r) => setTimeout(r, baseDelayMs * 2 ** (attempt - 1)));
      }
    }
    stats.failed++;
    const message = lastError instanceof Error ? lastError.message : String(lastError);
    const dlq = schedule.Target.DeadLetterConfig?.Arn;
    if (dlq !== undefined) {
      try {
        const body = renderInput(schedule.Target.Input, {
          scheduleArn: schedule.Arn,
          scheduledTime,
          executionId,
          attempt: attempts,
        });
        await send(dlq, body, undefined, executionId);
        stats.deadLettered++;
        log?.(`scheduler: ${schedule.Name} to ${schedule.Target.Arn} failed (${message}); sent to ${dlq}`);
        return;
      } catch (error) {
        log?.(`scheduler: dead-letter queue ${dlq} failed: ${(error as Error).message}`);
      }
    }
    log?.(`scheduler: dropped firing of ${schedule.GroupName}/${schedule.Name}: ${message}`);
  }

  /** Starts the deliveries of what is due now; returns at once. */
  function fireDue(): void {
    const now = Date.now();
    let changed = false;
    for (const { schedule, parsed } of state.all()) {
      if (schedule.State !== 'ENABLED') continue;
      const window = {
        from: new Date((schedule.StartDate ?? schedule.CreationDate) * 1000),
        end: schedule.EndDate === undefined ? undefined : new Date(schedule.EndDate * 1000),
        lastScheduled: schedule.lastScheduled === undefined ? undefined : new Date(schedule.lastScheduled),
        lastFiredAt: schedule.lastFiredAt === undefined ? undefined : new Date(schedule.lastFiredAt),
      };
      const next = nextFireTime(parsed, window);
      if (next === undefined) {
        if (schedule.ActionAfterCompletion === 'DELETE') {
          state.delete(schedule.Name, schedule.GroupName);
          changed = true;
        }
        continue;
      }
      if (next.getTime() > now) continue;
      schedule.lastScheduled = next.getTime();
      schedule.lastFiredAt = now;
      stats.fired++;
      changed = true;
      const delivery: Promise<void> = deliver({ ...schedule, Target: { ...schedule.Target } }, next)
        .catch((error: unknown) => log?.(`scheduler: delivery crashed: ${String(error)}`))
        .finally(() => inFlight.delete(delivery));
      inFlight.add(delivery);
      const later = nextFireTime(parsed, { ...window, lastScheduled: next, lastFiredAt: new Date(now) });
      if (later === undefined && schedule.ActionAfterCompletion === 'DELETE') {
        state.delete(schedule.Name, schedule.GroupName);
      }
    }
    if (changed) save();
  }

  async function tick(): Promise<void> {
    fireDue();
    await Promise.allSettled([...inFlight]);
  }

  type Route = (params: string[], query: URLSearchParams, body: Input) => unknown;
  const routes: Array<[method: string, pattern: RegExp, handler: Route, mutating: boolean]> = [
    [
      'POST',
      /^\/schedules\/([^/]+)$/,
      ([n], _q, body) => ({ ScheduleArn: state.put(n ?? '', body, 'create').Arn }),
      true,
    ],
    [
      'PUT',
      /^\/schedules\/([^/]+)$/,
      ([n], _q, body) => ({ ScheduleArn: state.put(n ?? '', body, 'update').Arn }),
      true,
    ],
    [
      'GET',
      /^\/schedules\/([^/]+)$/,
      ([n], q) => describe(state.schedule(n ?? '', q.get('groupName') ?? DEFAULT_GROUP)),
      false,
    ],
    [
      'DELETE',
      /^\/schedules\/([^/]+)$/,
      ([n], q) => {
        state.delete(n ?? '', q.get('groupName') ?? DEFAULT_GROUP);
        return {};
      },
      true,
    ],
    [
      'GET',
      /^\/schedules$/,
      (_p, q) => {
        const group = q.get('ScheduleGroup') ?? undefined;
        if (group !== undefined) state.group(group);
        const list = state.list({
          group,
          prefix: q.get('NamePrefix') ?? undefined,
          state: q.get('State') ?? undefined,
        });
        const { items, NextToken } = paged(list, (s) => `${s.GroupName}/${s.Name}`, q);
        return { Schedules: items.map(summary), ...(NextToken ? { NextToken } : {}) };
      },
      false,
    ],
    [
      'POST',
      /^\/schedule-groups\/([^/]+)$/,
      ([n]) => ({ ScheduleGroupArn: state.createGroup(n ?? '').Arn }),
      true,
    ],
    ['GET', /^\/schedule-groups\/([^/]+)$/, ([n]) => describeGroup(state.group(n ?? '')), false],
    [
      'DELETE',
      /^\/schedule-groups\/([^/]+)$/,
      ([n]) => {
        state.deleteGroup(n ?? '');
        return {};
      },
      true,
    ],
    [
      'GET',
      /^\/schedule-groups$/,
      (_p, q) => {
        const { items, NextToken } = paged(state.listGroups(q.get('NamePrefix') ?? ''), (g) => g.Name, q);
        return { ScheduleGroups: items.map(describeGroup), ...(NextToken ? { NextToken } : {}) };
      },
      false,
    ],
  ];

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req, MAX_REQUEST_BYTES);
    if (text === undefined) {
      reply(res, new SchedulerError('ValidationException', 'Request is too large.'));
      req.destroy();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = routes.find(([method, pattern]) => method === req.method && pattern.test(url.pathname));
    if (route === undefined) {
      reply(
        res,
        new SchedulerError('UnknownOperationException', `Unknown operation ${req.method} ${url.pathname}`),
      );
      return;
    }
    const body = parseJsonObject(text);
    if ('problem' in body) {
      reply(res, validation(body.problem));
      return;
    }
    const params = (route[1].exec(url.pathname) ?? []).slice(1).map((p) => decodeURIComponent(p));
    try {
      const out = route[2](params, url.searchParams, body.input);
      if (route[3]) save();
      reply(res, undefined, out);
    } catch (error) {
      if (!(error instanceof SchedulerError)) throw error;
      reply(res, error);
    }
  }

  const server = await startEmulatorServer({
    port: options.port,
    host: options.host,
    handle: serve,
    crashed: (res, error) => {
      log?.(`scheduler: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) reply(res, new SchedulerError('InternalServerException', 'Internal error'));
    },
  });
  const { endpoint, port } = server;
  const clock = setInterval(() => {
    try {
      fireDue();
    } catch (error) {
      log?.(`scheduler: ${(error as Error).stack ?? String(error)}`);
    }
  }, options.tickMs ?? 200);
  clock.unref();
  log?.(`scheduler ready on ${endpoint}`);

  return {
    endpoint,
    port,
    stats: () => ({ ...stats }),
    tick,
    async stop() {
      clearInterval(clock);
      await server.close();
      await Promise.allSettled([...inFlight]);
      sqs.destroy();
    },
  };
}

/** REST-JSON: an error's code travels in the error type header, its message in the body. */
function reply(res: ServerResponse, error: SchedulerError | undefined, body?: unknown): void {
  if (error === undefined) sendJson(res, 200, 'application/json', body ?? {});
  else sendJson(res, error.statusCode, 'application/json', error.toBody(), error.code);
}
