/**
 * `schedule.def.v1`: write a breadcrumb on a schedule (so a schedule can start runs or wake agents).
 *
 *   { schedule_id, cron: "0 9 ? * MON-FRI *" | rate: "15 minutes", timezone?: "Europe/Paris",
 *     breadcrumb: { schema_name, title?, tags?, context } }
 *
 * `cron` is EventBridge Scheduler's six fields (minutes hours day-of-month month day-of-week year; day-of-week
 * 1-7 is SUN-SAT; one of the day fields is `?`), `rate` is `<n> minute(s)|hour(s)|day(s)`; either may also be
 * written with its `cron(...)` / `rate(...)` wrapper. The rule manager keeps one recurring Scheduler schedule per
 * definition (created, replaced and deleted with it); each firing writes the breadcrumb, created by
 * `system:scheduler`, with the id `<definition id>.<scheduled time>` (a redelivered firing is a replay).
 *
 * Expressions are checked where definitions are accepted (`definition-validation.ts`, which carries the cron
 * library), like workflow expressions.
 */
import { ContextSchema, SchemaNameSchema, TagsSchema, TitleSchema } from './breadcrumb.ts';
import { NameSchema } from './definition-fields.ts';
import * as z from './zod.ts';

export { SCHEDULE_DEFINITION_SCHEMA } from '../topology.ts';

/** Says what is wrong with a schedule expression in a time zone, or undefined when Scheduler would take it. */
export type ScheduleExpressionCheck = (
  expression: string,
  timezone: string | undefined,
) => string | undefined;

function wrapped(kind: 'cron' | 'rate', value: string): string {
  const trimmed = value.trim();
  return trimmed.startsWith(`${kind}(`) ? trimmed : `${kind}(${trimmed})`;
}

export function scheduleDefinitionSchema(check?: ScheduleExpressionCheck) {
  return z.pipe(
    z
      .object({
        schedule_id: NameSchema,
        description: z.optional(z.string()),
        cron: z.optional(z.string({ error: 'expected a cron expression string' }).check(z.minLength(1))),
        rate: z.optional(z.string({ error: 'expected a rate like "15 minutes"' }).check(z.minLength(1))),
        timezone: z.optional(z.string({ error: 'expected an IANA time zone like "Europe/Paris"' })),
        breadcrumb: z.object(
          {
            schema_name: SchemaNameSchema,
            title: z.optional(TitleSchema),
            tags: z._default(TagsSchema, []),
            context: ContextSchema,
          },
          { error: 'expected { schema_name, title?, tags?, context }' },
        ),
      })
      .check(
        z.superRefine((def, ctx) => {
          if ((def.cron === undefined) === (def.rate === undefined)) {
            ctx.addIssue({ code: 'custom', path: [], message: 'expected exactly one of cron and rate' });
            return;
          }
          if (check === undefined) return;
          const field = def.cron !== undefined ? 'cron' : 'rate';
          const message = check(wrapped(field, def.cron ?? def.rate ?? ''), def.timezone);
          if (message !== undefined) ctx.addIssue({ code: 'custom', path: [field], message });
        }),
      ),
    z.transform((def) => ({
      ...def,
      /** The Scheduler expression: `cron(...)` or `rate(...)`. */
      expression: def.cron !== undefined ? wrapped('cron', def.cron) : wrapped('rate', def.rate ?? ''),
    })),
  );
}

export const ScheduleDefinitionSchema = scheduleDefinitionSchema();
export type ScheduleDefinition = z.output<typeof ScheduleDefinitionSchema>;
