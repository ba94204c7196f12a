/**
 * The rule manager's part for `schedule.def.v1`: one recurring EventBridge Scheduler schedule per valid schedule
 * definition (its cron or rate, in its time zone, firing into the timers queue, where the timer function writes
 * the definition's breadcrumb), recorded like every definition in a `definition.status.v1` breadcrumb. As with
 * rules, it reconciles to the stored definition: an invalid or deleted definition has no schedule.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { validateScheduleDefinition } from '#shared/domain/definition-validation.ts';
import { type FieldIssue, ValidationError } from '#shared/domain/errors.ts';
import { STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Schedules } from '#shared/ports/timers.ts';

export interface ScheduleStatus {
  definition_id: string;
  definition_schema: string;
  definition_version: number;
  kind: 'schedule';
  state: 'active' | 'invalid';
  errors: FieldIssue[];
  rule_name: null;
  schedule: { expression: string; timezone: string | null } | null;
}

export async function reconcileSchedule(
  record: Breadcrumb,
  deps: {
    store: Pick<BreadcrumbStore, 'upsert'>;
    schedules: Schedules | undefined;
    principal: string;
    statusId: string;
    /** Why the rule manager refuses the schedule before looking at it (a per-workspace quota). */
    refused?: readonly FieldIssue[];
  },
): Promise<'updated' | 'invalid'> {
  const base = {
    definition_id: record.id,
    definition_schema: record.schema_name,
    definition_version: record.version,
    kind: 'schedule' as const,
    rule_name: null,
  };
  let status: ScheduleStatus;
  try {
    if (deps.refused !== undefined && deps.refused.length > 0) throw new ValidationError([...deps.refused]);
    if (deps.schedules === undefined) {
      throw new ValidationError([
        { path: '', message: 'this stack has no Scheduler configured for schedules' },
      ]);
    }
    const schedule = validateScheduleDefinition(record.context);
    await deps.schedules.put({
      workspace: record.workspace,
      definitionId: record.id,
      expression: schedule.expression,
      timezone: schedule.timezone,
    });
    status = {
      ...base,
      state: 'active',
      errors: [],
      schedule: { expression: schedule.expression, timezone: schedule.timezone ?? null },
    };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    await deps.schedules?.delete(record.workspace, record.id);
    status = { ...base, state: 'invalid', errors: [...error.issues], schedule: null };
  }
  await deps.store.upsert(
    record.workspace,
    deps.statusId,
    {
      schema_name: STATUS_SCHEMA,
      title: `${record.id}: ${status.state}`,
      tags: [`definition:${record.id}`, `state:${status.state}`, 'definition-status'],
      context: { ...status } as Record<string, unknown>,
    },
    { principal: deps.principal },
  );
  return status.state === 'active' ? 'updated' : 'invalid';
}
