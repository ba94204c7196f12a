/**
 * EventBridge Scheduler adapter of the Timers and Schedules ports. Every schedule lives in one schedule group and
 * targets the timers queue through the scheduler execution role (which may only send to that queue); its `Input`
 * is a `TimerMessage` (shared/domain/timer-message.ts). Locally the same calls reach crumbs' Scheduler emulator
 * (`local/scheduler/`), through `AWS_ENDPOINT_URL_SCHEDULER`.
 *
 * - Schedule names are derived from the workspace and the timer id (or definition id) by hash: Scheduler names
 *   are at most 64 characters of `[0-9a-zA-Z-_.]`, timer ids are longer and use `:`.
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
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { isRetriable, RetriableError } from '#shared/domain/errors.ts';
import type { TimerMessage } from '#shared/domain/timer-message.ts';
import type { OneTimeTimer, RecurringSchedule, Schedules, Timers } from '#shared/ports/timers.ts';
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

function nameFor(kind: 't' | 's', workspace: string, id: string): string {
  return `crumbs-${kind}-${createHash('sha256').update(`${workspace}\u0000${id}`).digest('hex').slice(0, 48)}`;
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
    const at = new Date(Math.max(timer.at.getTime(), this.now() + (this.config.minLeadMs ?? MIN_LEAD_MS)));
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: nameFor('t', timer.workspace, timer.id),
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
    await this.remove(nameFor('t', workspace, id));
  }

  async put(schedule: RecurringSchedule): Promise<void> {
    const input = {
      Name: nameFor('s', schedule.workspace, schedule.definitionId),
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
    }
  }

  async delete(workspace: string, definitionId: string): Promise<void> {
    await this.remove(nameFor('s', workspace, definitionId));
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

/** The adapter as a function with `uses.timers` configures it from its environment (TimersEnvSchema). */
export function schedulerTimersFrom(env: {
  readonly [ENV.scheduleGroup]: string;
  readonly [ENV.timersQueueArn]: string;
  readonly [ENV.timersDlqArn]?: string | undefined;
  readonly [ENV.schedulerRoleArn]: string;
}): SchedulerTimers {
  return new SchedulerTimers({
    group: env[ENV.scheduleGroup],
    queueArn: env[ENV.timersQueueArn],
    roleArn: env[ENV.schedulerRoleArn],
    deadLetterArn: env[ENV.timersDlqArn],
  });
}
