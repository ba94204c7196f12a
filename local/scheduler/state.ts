/**
 * Schedule groups and schedules of the local EventBridge Scheduler, with Scheduler's validation and error codes,
 * plus what the emulator needs to fire them (the last scheduled time). Serialisable so the service can persist it.
 */

import {
  type ParsedExpression,
  parseScheduleExpression as parse,
  ScheduleExpressionError,
} from '#shared/domain/schedule-expression.ts';
import { SchedulerError, validation } from './errors.ts';

/** Scheduler's ValidationException for an expression it cannot read. */
function parseScheduleExpression(expression: string, timezone: string): ParsedExpression {
  try {
    return parse(expression, timezone);
  } catch (error) {
    if (error instanceof ScheduleExpressionError) throw validation(error.message);
    throw error;
  }
}

export const DEFAULT_GROUP = 'default';
const NAME_PATTERN = /^[0-9a-zA-Z-_.]{1,64}$/;

export interface ScheduleTarget {
  Arn: string;
  RoleArn: string;
  Input?: string;
  DeadLetterConfig?: { Arn?: string };
  RetryPolicy?: { MaximumEventAgeInSeconds?: number; MaximumRetryAttempts?: number };
  SqsParameters?: { MessageGroupId?: string };
}

export interface Schedule {
  Name: string;
  GroupName: string;
  Arn: string;
  ScheduleExpression: string;
  ScheduleExpressionTimezone?: string;
  /** Epoch seconds, as the wire carries them. */
  StartDate?: number;
  EndDate?: number;
  Description?: string;
  State: 'ENABLED' | 'DISABLED';
  KmsKeyArn?: string;
  Target: ScheduleTarget;
  FlexibleTimeWindow: { Mode: 'OFF' | 'FLEXIBLE'; MaximumWindowInMinutes?: number };
  ActionAfterCompletion: 'NONE' | 'DELETE';
  CreationDate: number;
  LastModificationDate: number;
  /** Emulator bookkeeping (epoch ms): the scheduled time of the last firing, and when it happened. */
  lastScheduled?: number;
  lastFiredAt?: number;
}

export interface ScheduleGroup {
  Name: string;
  Arn: string;
  CreationDate: number;
  LastModificationDate: number;
}

export interface SerializedState {
  version: 1;
  groups: ScheduleGroup[];
  schedules: Schedule[];
}

type Input = Record<string, unknown>;

function str(input: Input, key: string): string | undefined {
  const v = input[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw validation(`${key} must be a string.`);
  return v;
}

function required(input: Input, key: string): string {
  const v = str(input, key);
  if (v === undefined || v === '') throw validation(`${key} is required.`);
  return v;
}

function epochSeconds(input: Input, key: string): number | undefined {
  const v = input[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw validation(`${key} must be a timestamp.`);
  return v;
}

function name(value: string, what: string): string {
  if (!NAME_PATTERN.test(value)) {
    throw validation(
      `1 validation error detected: Value '${value}' at '${what}' failed to satisfy constraint: Member must satisfy regular expression pattern: [0-9a-zA-Z-_.]+`,
    );
  }
  return value;
}

function target(raw: unknown): ScheduleTarget {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw validation('Target is required.');
  const t = raw as Input;
  const out: ScheduleTarget = { Arn: required(t, 'Arn'), RoleArn: required(t, 'RoleArn') };
  const input = str(t, 'Input');
  if (input !== undefined) out.Input = input;
  for (const key of ['DeadLetterConfig', 'RetryPolicy', 'SqsParameters'] as const) {
    const v = t[key];
    if (v !== undefined && v !== null) {
      if (typeof v !== 'object' || Array.isArray(v)) throw validation(`Target.${key} must be an object.`);
      (out as unknown as Record<string, unknown>)[key] = v;
    }
  }
  return out;
}

export class SchedulerState {
  private readonly groups = new Map<string, ScheduleGroup>();
  /** By `<group>/<name>`. */
  private readonly schedules = new Map<string, Schedule>();
  private readonly parsed = new Map<string, ParsedExpression>();

  constructor(
    private readonly region: string,
    private readonly account: string,
    private readonly now: () => number = Date.now,
  ) {
    this.ensureDefaultGroup();
  }

  private ensureDefaultGroup(): void {
    if (!this.groups.has(DEFAULT_GROUP)) {
      const at = this.now() / 1000;
      this.groups.set(DEFAULT_GROUP, {
        Name: DEFAULT_GROUP,
        Arn: this.groupArn(DEFAULT_GROUP),
        CreationDate: at,
        LastModificationDate: at,
      });
    }
  }

  groupArn(group: string): string {
    return `arn:aws:scheduler:${this.region}:${this.account}:schedule-group/${group}`;
  }

  scheduleArn(group: string, schedule: string): string {
    return `arn:aws:scheduler:${this.region}:${this.account}:schedule/${group}/${schedule}`;
  }

  // Groups

  createGroup(groupName: string): ScheduleGroup {
    name(groupName, 'name');
    if (this.groups.has(groupName))
      throw new SchedulerError('ConflictException', `Schedule group ${groupName} already exists.`);
    const at = this.now() / 1000;
    const group = {
      Name: groupName,
      Arn: this.groupArn(groupName),
      CreationDate: at,
      LastModificationDate: at,
    };
    this.groups.set(groupName, group);
    return group;
  }

  group(groupName: string): ScheduleGroup {
    const group = this.groups.get(groupName);
    if (group === undefined)
      throw new SchedulerError('ResourceNotFoundException', `Schedule group ${groupName} does not exist.`);
    return group;
  }

  listGroups(prefix = ''): ScheduleGroup[] {
    return [...this.groups.values()].filter((g) => g.Name.startsWith(prefix));
  }

  deleteGroup(groupName: string): void {
    if (groupName === DEFAULT_GROUP) throw validation('The default schedule group cannot be deleted.');
    this.group(groupName);
    this.groups.delete(groupName);
    for (const [key, schedule] of this.schedules) if (schedule.GroupName === groupName) this.forget(key);
  }

  // Schedules

  private key(group: string, schedule: string): string {
    return `${group}/${schedule}`;
  }

  private forget(key: string): void {
    this.schedules.delete(key);
    this.parsed.delete(key);
  }

  /** Create (existing undefined) or replace (UpdateSchedule replaces every field) a schedule. */
  put(scheduleName: string, input: Input, mode: 'create' | 'update'): Schedule {
    name(scheduleName, 'name');
    const groupName = name(str(input, 'GroupName') ?? DEFAULT_GROUP, 'groupName');
    this.group(groupName);
    const key = this.key(groupName, scheduleName);
    const existing = this.schedules.get(key);
    if (mode === 'create' && existing !== undefined) {
      throw new SchedulerError('ConflictException', `Schedule ${scheduleName} already exists.`);
    }
    if (mode === 'update' && existing === undefined) {
      throw new SchedulerError('ResourceNotFoundException', `Schedule ${scheduleName} does not exist.`);
    }
    const expression = required(input, 'ScheduleExpression');
    const timezone = str(input, 'ScheduleExpressionTimezone');
    const parsed = parseScheduleExpression(expression, timezone ?? 'UTC');
    const window = input.FlexibleTimeWindow as Input | undefined;
    if (window === undefined || window === null || typeof window !== 'object')
      throw validation('FlexibleTimeWindow is required.');
    const mode_ = window.Mode;
    if (mode_ !== 'OFF' && mode_ !== 'FLEXIBLE')
      throw validation('FlexibleTimeWindow.Mode must be OFF or FLEXIBLE.');
    const state = str(input, 'State') ?? 'ENABLED';
    if (state !== 'ENABLED' && state !== 'DISABLED') throw validation('State must be ENABLED or DISABLED.');
    const after = str(input, 'ActionAfterCompletion') ?? 'NONE';
    if (after !== 'NONE' && after !== 'DELETE')
      throw validation('ActionAfterCompletion must be NONE or DELETE.');
    const at = this.now() / 1000;
    const schedule: Schedule = {
      Name: scheduleName,
      GroupName: groupName,
      Arn: this.scheduleArn(groupName, scheduleName),
      ScheduleExpression: expression,
      ...(timezone !== undefined ? { ScheduleExpressionTimezone: timezone } : {}),
      State: state,
      Target: target(input.Target),
      FlexibleTimeWindow: {
        Mode: mode_,
        ...(typeof window.MaximumWindowInMinutes === 'number'
          ? { MaximumWindowInMinutes: window.MaximumWindowInMinutes }
          : {}),
      },
      ActionAfterCompletion: after,
      CreationDate: existing?.CreationDate ?? at,
      LastModificationDate: at,
    };
    for (const key of ['StartDate', 'EndDate'] as const) {
      const v = epochSeconds(input, key);
      if (v !== undefined) schedule[key] = v;
    }
    for (const key of ['Description', 'KmsKeyArn'] as const) {
      const v = str(input, key);
      if (v !== undefined) schedule[key] = v;
    }
    // A changed expression starts afresh; an unchanged one keeps its place (an update does not refire it).
    if (
      existing !== undefined &&
      existing.ScheduleExpression === expression &&
      existing.ScheduleExpressionTimezone === timezone
    ) {
      if (existing.lastScheduled !== undefined) schedule.lastScheduled = existing.lastScheduled;
      if (existing.lastFiredAt !== undefined) schedule.lastFiredAt = existing.lastFiredAt;
    }
    this.schedules.set(key, schedule);
    this.parsed.set(key, parsed);
    return schedule;
  }

  schedule(scheduleName: string, groupName = DEFAULT_GROUP): Schedule {
    const schedule = this.schedules.get(this.key(groupName, scheduleName));
    if (schedule === undefined)
      throw new SchedulerError('ResourceNotFoundException', `Schedule ${scheduleName} does not exist.`);
    return schedule;
  }

  delete(scheduleName: string, groupName = DEFAULT_GROUP): void {
    this.schedule(scheduleName, groupName);
    this.forget(this.key(groupName, scheduleName));
  }

  list(filter: {
    group?: string | undefined;
    prefix?: string | undefined;
    state?: string | undefined;
  }): Schedule[] {
    return [...this.schedules.values()].filter(
      (s) =>
        (filter.group === undefined || s.GroupName === filter.group) &&
        (filter.prefix === undefined || s.Name.startsWith(filter.prefix)) &&
        (filter.state === undefined || s.State === filter.state),
    );
  }

  all(): Array<{ schedule: Schedule; parsed: ParsedExpression }> {
    const out: Array<{ schedule: Schedule; parsed: ParsedExpression }> = [];
    for (const [key, schedule] of this.schedules) {
      const parsed = this.parsed.get(key);
      if (parsed !== undefined) out.push({ schedule, parsed });
    }
    return out;
  }

  serialize(): SerializedState {
    return { version: 1, groups: [...this.groups.values()], schedules: [...this.schedules.values()] };
  }

  load(state: SerializedState, log?: (line: string) => void): void {
    for (const group of state.groups ?? []) this.groups.set(group.Name, group);
    for (const schedule of state.schedules ?? []) {
      try {
        const parsed = parseScheduleExpression(
          schedule.ScheduleExpression,
          schedule.ScheduleExpressionTimezone ?? 'UTC',
        );
        const key = this.key(schedule.GroupName, schedule.Name);
        this.schedules.set(key, schedule);
        this.parsed.set(key, parsed);
      } catch (error) {
        log?.(`scheduler: dropped saved schedule ${schedule.Name}: ${(error as Error).message}`);
      }
    }
    this.ensureDefaultGroup();
  }
}
