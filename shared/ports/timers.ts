/**
 * The timers port: one-time timers (a run's waits, step timeouts and retry back-offs) and recurring schedules
 * (`schedule.def.v1`). Both fire into the timers queue, whose function writes a breadcrumb (shared/domain/CONVENTIONS.md
 * "Timers"). On AWS and locally the adapter is EventBridge Scheduler (`shared/adapters/scheduler/`).
 */
import type { TimerBreadcrumb } from '#shared/domain/timer-message.ts';

export interface OneTimeTimer {
  readonly workspace: string;
  /** Deterministic: setting the same timer again is a no-op, and `cancel` finds it. */
  readonly id: string;
  readonly at: Date;
  /** What the timer function writes when it fires (id = the timer's breadcrumb id). */
  readonly breadcrumb: TimerBreadcrumb;
}

export interface RecurringSchedule {
  readonly workspace: string;
  /** The `schedule.def.v1` breadcrumb's id: the firing reads the definition's current breadcrumb. */
  readonly definitionId: string;
  /** `cron(<AWS six fields>)` or `rate(<n> <unit>)`. */
  readonly expression: string;
  readonly timezone?: string | undefined;
}

export interface Timers {
  /** Sets a one-time timer; an existing timer of that id is left as it is. */
  set(timer: OneTimeTimer): Promise<void>;
  /** Cancels a one-time timer; a timer that fired or never existed is fine. */
  cancel(workspace: string, id: string): Promise<void>;
}

export interface Schedules {
  /** Creates or replaces the recurring schedule of a definition. */
  put(schedule: RecurringSchedule): Promise<void>;
  /** Removes it; a missing schedule is fine. */
  delete(workspace: string, definitionId: string): Promise<void>;
}

/** Every timer and schedule of one workspace, cancelled a bounded page at a time (a workspace's deletion). */
export interface WorkspaceTimers {
  /** Cancels one page from `cursor`; says how many it cancelled and where to go on (undefined: none left). */
  cancelAll(workspace: string, cursor: string | undefined): Promise<{ cancelled: number; cursor?: string }>;
}
