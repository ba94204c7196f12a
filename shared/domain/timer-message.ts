/**
 * What a fired timer or schedule puts on the timers queue (the Scheduler target's `Input`), and what the timer
 * function makes of it. Small on purpose: a Scheduler target input is at most 8 KB, so a recurring schedule names
 * its `schedule.def.v1` (read when it fires) instead of carrying the breadcrumb it writes.
 *
 *   { "kind": "timer", "workspace", "breadcrumb": { id, schema_name, title, tags, context } }
 *   { "kind": "schedule", "workspace", "definition_id", "fired_at": "<aws.scheduler.scheduled-time>" }
 *
 * A timer's breadcrumb has a deterministic id, so a repeated delivery is a replay; a schedule's firing is
 * `<definition id>.<scheduled time>`, the same for every delivery of one firing.
 */
import * as z from '#shared/domain/zod.ts';

export const TimerBreadcrumbSchema = z.object({
  id: z.string().check(z.minLength(1)),
  schema_name: z.string().check(z.minLength(1)),
  title: z.optional(z.string()),
  tags: z.array(z.string()),
  context: z.record(z.string(), z.unknown()),
});
export type TimerBreadcrumb = z.infer<typeof TimerBreadcrumbSchema>;

export const TimerMessageSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('timer'),
    workspace: z.string().check(z.minLength(1)),
    breadcrumb: TimerBreadcrumbSchema,
  }),
  z.object({
    kind: z.literal('schedule'),
    workspace: z.string().check(z.minLength(1)),
    definition_id: z.string().check(z.minLength(1)),
    fired_at: z.string().check(z.minLength(1)),
  }),
]);
export type TimerMessage = z.infer<typeof TimerMessageSchema>;

/** The id of the breadcrumb one firing of a schedule writes: the same for every delivery of that firing. */
export function scheduleFiringId(definitionId: string, firedAt: string): string {
  const stamp = firedAt.replace(/[^0-9A-Za-z]/g, '');
  return `${definitionId.slice(0, 100)}.${stamp}`;
}

/** Who writes what timers and schedules fire. */
export const SCHEDULER_PRINCIPAL = 'system:scheduler';
