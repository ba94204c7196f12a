/**
 * EventBridge Scheduler adapter of the Timers and Schedules ports. Every schedule lives in one schedule group and
 * targets the timers queue through the scheduler execution role (which may only send to that queue); its `Input`
 * is a `TimerMessage` (shared/domain/timer-message.ts). Locally the same calls reach crumbs' Scheduler emulator
 * (`local/scheduler/`), through `AWS_ENDPOINT_URL_SCHEDULER`.
 *
 * - Schedule names are derived from the workspace and the timer id (or definition id) by hash: Scheduler names
 *   are at most 64 characters of `[0-9a-zA-Z-_.]`, timer ids are longer and use `:`. A name starts with its kind and
 *   a hash of its workspace alone (`crumbs-t-<ws hash>-…`), so every timer and schedule of a workspace is found by
 *   name prefix (ListSchedules' NamePrefix): deleting a workspace cancels them all (`cancelWorkspace`). Names of
 *   the earlier form (`crumbs-t-<hash of both>`) are removed too wherever a timer or schedule is cancelled or
 *   replaced by id; a timer set in that form before and never cancelled is not found by prefix, and fires into a
 *   deleted workspace's tombstone (refused).
 * - A timer is not set for a workspace whose deletion has sealed it (`seals`): it would fire into nothing.
 * - One-time timers are `at(...)` in UTC with ActionAfterCompletion DELETE, so a fired timer costs nothing after.
 *   Scheduler does not fire an at() whose time has passed, so a timer due sooner than MIN_LEAD_MS is set for then:
 *   a late timer is better than a lost one.
 * - Creating a timer that exists is a replay (ConflictException is success); cancelling a missing one is fine.
 */
import { createHash } from 'node:crypto';
import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { isRetriable, RetriableError } from '#shared/domain/errors.ts';
import type { TimerMessage } from '#shared/domain/timer-message.ts';
import type {
  OneTimeTimer,
  RecurringSchedule,
  Schedules,
  Timers,
  WorkspaceTimers,
} from '#shared/ports/timers.ts';
import { ENV } from '#shared/topology.ts';

export const MIN_LEAD_MS = 2000;

export interface SchedulerTimersConfig {
  /** The schedule group (e.g. `crumbs`). */
  readonly group: string;
  /** The timers queue's ARN: every schedule's target. */
  readonly queueArn: string;
  /** The role Scheduler assumes to send to the queue. */
  readonly roleArn: string;
  /** Where Scheduler sends a firing it could not deliver. */
  readonly deadLetterArn?: string | undefined;
  /** The least time ahead a timer is set for; @default MIN_LEAD_MS */
  readonly minLeadMs?: number;
  /** Throws WorkspaceDeletedError for a workspace its deletion has sealed; absent: every timer is set. */
  readonly seals?: { refuseSealed(workspace: string): Promise<void> } | undefined;
}

let defaultClient: SchedulerClient | undefined;
export function defaultSchedulerClient(): SchedulerClient {
  defaultClient ??= new SchedulerClient({});
  return defaultClient;
}

/**
 * A Scheduler failure judged like every other (`isRetriable`: throttling, service faults, and by status 408 and
 * 409, the ConflictException of a concurrent update) becomes a RetriableError naming Scheduler. Scheduler's
 * ServiceQuotaExceededException is retried too: one-time schedules delete themselves after firing, so the account's
 * schedules quota frees up by itself. Anything else is passed on as it is.
 */
function classify(error: unknown): unknown {
  if (error instanceof Error && (isRetriable(error) || error.name === 'ServiceQuotaExceededException')) {
    return new RetriableError(`EventBridge Scheduler: ${error.message}`, { cause: error });
  }
  return error;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Where every name of a workspace's timers (`t`) or schedules (`s`) starts: 64 bits of the workspace's hash. */
export function workspaceSchedulePrefix(kind: 't' | 's', workspace: string): string {
  return `crumbs-${kind}-${sha256(workspace).slice(0, 16)}-`;
}

/** A timer's or schedule's name: its workspace's prefix, then 128 bits of the hash of workspace and id (58 chars). */
export function scheduleNameFor(kind: 't' | 's', workspace: string, id: string): string {
  return `${workspaceSchedulePrefix(kind, workspace)}${sha256(`${workspace}\u0000${id}`).slice(0, 32)}`;
}

/** The earlier form of a name, which no prefix finds: removed too wherever a name is cancelled or replaced. */
function legacyNameFor(kind: 't' | 's', workspace: string, id: string): string {
  return `crumbs-${kind}-${sha256(`${workspace}\u0000${id}`).slice(0, 48)}`;
}

/** `at(yyyy-mm-ddThh:mm:ss)` in UTC, rounded up to the second. */
export function atExpression(at: Date): string {
  const seconds = new Date(Math.ceil(at.getTime() / 1000) * 1000);
  return `at(${seconds.toISOString().slice(0, 19)})`;
}

export class SchedulerTimers implements Timers, Schedules {
  constructor(
    private readonly config: SchedulerTimersConfig,
    private readonly client: SchedulerClient = defaultSchedulerClient(),
    private readonly now: () => number = Date.now,
  ) {}

  private target(message: TimerMessage): CreateScheduleCommandInput['Target'] {
    return {
      Arn: this.config.queueArn,
      RoleArn: this.config.roleArn,
      Input: JSON.stringify(message),
      ...(this.config.deadLetterArn !== undefined
        ? { DeadLetterConfig: { Arn: this.config.deadLetterArn } }
        : {}),
    };
  }

  async set(timer: OneTimeTimer): Promise<void> {
    await this.config.seals?.refuseSealed(timer.workspace);
    const at = new Date(Math.max(timer.at.getTime(), this.now() + (this.config.minLeadMs ?? MIN_LEAD_MS)));
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: scheduleNameFor('t', timer.workspace, timer.id),
          GroupName: this.config.group,
          ScheduleExpression: atExpression(at),
          ScheduleExpressionTimezone: 'UTC',
          FlexibleTimeWindow: { Mode: 'OFF' },
          ActionAfterCompletion: 'DELETE',
          Description: timer.id.slice(0, 512),
          Target: this.target({ kind: 'timer', workspace: timer.workspace, breadcrumb: timer.breadcrumb }),
        }),
      );
    } catch (error) {
      if (error instanceof ConflictException) return;
      throw classify(error);
    }
  }

  async cancel(workspace: string, id: string): Promise<void> {
    await this.remove(scheduleNameFor('t', workspace, id));
    await this.remove(legacyNameFor('t', workspace, id));
  }

  async put(schedule: RecurringSchedule): Promise<void> {
    const input = {
      Name: scheduleNameFor('s', schedule.workspace, schedule.definitionId),
      GroupName: this.config.group,
      ScheduleExpression: schedule.expression,
      ...(schedule.timezone !== undefined ? { ScheduleExpressionTimezone: schedule.timezone } : {}),
      FlexibleTimeWindow: { Mode: 'OFF' as const },
      Description: `schedule.def.v1 ${schedule.definitionId}`.slice(0, 512),
      Target: this.target({
        kind: 'schedule',
        workspace: schedule.workspace,
        definition_id: schedule.definitionId,
        fired_at: '<aws.scheduler.scheduled-time>',
      }),
    };
    try {
      await this.client.send(new UpdateScheduleCommand(input));
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw classify(error);
      try {
        await this.client.send(new CreateScheduleCommand(input));
      } catch (created) {
        // Created meanwhile by another delivery: replace it with this definition.
        if (!(created instanceof ConflictException)) throw classify(created);
        await this.client.send(new UpdateScheduleCommand(input)).catch((e: unknown) => {
          throw classify(e);
        });
      }
      // Created under this name: the same schedule under the earlier form of its name would fire too.
      await this.remove(legacyNameFor('s', schedule.workspace, schedule.definitionId));
    }
  }

  async delete(workspace: string, definitionId: string): Promise<void> {
    await this.remove(scheduleNameFor('s', workspace, definitionId));
    await this.remove(legacyNameFor('s', workspace, definitionId));
  }

  private async remove(name: string): Promise<void> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.config.group }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return;
      throw classify(error);
    }
  }
}

/**
 * Cancels every timer and schedule of one workspace, found by the prefix of their names (ListSchedules, 100 a
 * page; the timers first, then the schedules), one page a call from `cursor`; says how many it removed and where to
 * go on (undefined: none left). A deletion does this before it sweeps the table, so nothing fires into it later.
 */
export class SchedulerWorkspaceTimers implements WorkspaceTimers {
  constructor(
    private readonly group: string,
    private readonly client: SchedulerClient = defaultSchedulerClient(),
  ) {}

  async cancelAll(
    workspace: string,
    cursor: string | undefined,
  ): Promise<{ cancelled: number; cursor?: string }> {
    const kind = parseCancelCursor(cursor);
    let out: { Schedules?: { Name?: string }[]; NextToken?: string };
    try {
      out = await this.client.send(
        new ListSchedulesCommand({
          GroupName: this.group,
          NamePrefix: workspaceSchedulePrefix(kind, workspace),
          MaxResults: 100,
        }),
      );
    } catch (error) {
      throw classify(error);
    }
    const names = (out.Schedules ?? []).flatMap((s) => (s.Name ? [s.Name] : []));
    for (const name of names) {
      try {
        await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.group }));
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw classify(error);
      }
    }
    // The page's names are gone, so the listing goes on from its start (a NextToken would skip what followed them).
    const next = out.NextToken !== undefined ? kind : kind === 't' ? 's' : undefined;
    return { cancelled: names.length, ...(next !== undefined ? { cursor: next } : {}) };
  }
}

/** Which names a cancellation is at: the timers (`t`, first), then the schedules (`s`). */
function parseCancelCursor(cursor: string | undefined): 't' | 's' {
  if (cursor === undefined || cursor === 't') return 't';
  if (cursor === 's') return 's';
  throw new Error('not a timer cancellation position');
}

/**
 * The adapter as a function with `uses.timers` configures it from its environment (TimersEnvSchema); `seals` keeps
 * it from setting timers of deleted workspaces.
 */
export function schedulerTimersFrom(
  env: {
    readonly [ENV.scheduleGroup]: string;
    readonly [ENV.timersQueueArn]: string;
    readonly [ENV.timersDlqArn]?: string | undefined;
    readonly [ENV.schedulerRoleArn]: string;
  },
  seals?: SchedulerTimersConfig['seals'],
): SchedulerTimers {
  return new SchedulerTimers({
    group: env[ENV.scheduleGroup],
    queueArn: env[ENV.timersQueueArn],
    roleArn: env[ENV.schedulerRoleArn],
    deadLetterArn: env[ENV.timersDlqArn],
    seals,
  });
}
