/**
 * The timer function's core: a fired timer or schedule (a `TimerMessage` from the timers queue) becomes a
 * breadcrumb, written by `system:scheduler` under a deterministic id, so a repeated delivery is a replay.
 *
 * - `timer`: the breadcrumb the run asked for (`workflow.timer.v1`, tagged `run:`, `step:`, `reply-to:`), as is.
 * - `schedule`: the `schedule.def.v1` it names is read now (so an edit since the schedule was set applies), and its
 *   `breadcrumb` is written with the id `<definition id>.<scheduled time>`. A definition that is gone, or no longer
 *   a schedule, is logged and the firing dropped: the rule manager deletes its schedule.
 *
 * A message that is not a timer message is dropped with a log line (redelivering it cannot help); a store failure
 * is thrown, so SQS redelivers and, in the end, dead-letters it.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { SCHEDULE_DEFINITION_SCHEMA, ScheduleDefinitionSchema } from '#shared/domain/schedule-definition.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import { SCHEDULER_PRINCIPAL, scheduleFiringId, TimerMessageSchema } from '../../domain/timer-message.ts';

export interface TimerDeps {
  readonly store: Pick<BreadcrumbStore, 'create' | 'get'>;
  readonly log?: Log;
}

export type TimerOutcome =
  | { readonly status: 'written'; readonly id: string; readonly replayed: boolean }
  | { readonly status: 'dropped'; readonly reason: string };

export async function handleTimerMessage(body: unknown, deps: TimerDeps): Promise<TimerOutcome> {
  const log = deps.log ?? silentLog;
  const parsed = TimerMessageSchema.safeParse(body);
  if (!parsed.success) {
    log.warn('timer message dropped: not a timer message', { issues: parsed.error.issues.length });
    return { status: 'dropped', reason: 'not a timer message' };
  }
  const message = parsed.data;
  if (message.kind === 'timer') {
    const { id, schema_name, title, tags, context } = message.breadcrumb;
    const { replayed } = await deps.store.create(
      message.workspace,
      { schema_name, title: title ?? '', tags, context },
      { principal: SCHEDULER_PRINCIPAL, id },
    );
    return { status: 'written', id, replayed };
  }
  let definition: Breadcrumb;
  try {
    definition = await deps.store.get(message.workspace, message.definition_id);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    log.info('schedule firing dropped: its definition is gone', { definitionId: message.definition_id });
    return { status: 'dropped', reason: 'the schedule definition is gone' };
  }
  const schedule =
    definition.schema_name === SCHEDULE_DEFINITION_SCHEMA
      ? ScheduleDefinitionSchema.safeParse(definition.context)
      : undefined;
  if (schedule === undefined || !schedule.success) {
    log.warn('schedule firing dropped: not a valid schedule.def.v1', { definitionId: message.definition_id });
    return { status: 'dropped', reason: 'not a valid schedule.def.v1' };
  }
  const { breadcrumb } = schedule.data;
  const id = scheduleFiringId(message.definition_id, message.fired_at);
  const { replayed } = await deps.store.create(
    message.workspace,
    {
      schema_name: breadcrumb.schema_name,
      title: breadcrumb.title ?? `${schedule.data.schedule_id} at ${message.fired_at}`,
      tags: [...breadcrumb.tags, `schedule:${schedule.data.schedule_id}`],
      context: breadcrumb.context,
    },
    { principal: SCHEDULER_PRINCIPAL, id },
  );
  return { status: 'written', id, replayed };
}
