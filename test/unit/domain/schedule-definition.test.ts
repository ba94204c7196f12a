import { describe, expect, it } from 'vitest';
import { toFieldIssues } from '#shared/domain/breadcrumb.ts';
import { scheduleDefinitionSchema } from '#shared/domain/schedule-definition.ts';
import { parseScheduleExpression, ScheduleExpressionError } from '#shared/domain/schedule-expression.ts';

const checked = scheduleDefinitionSchema((expression, timezone) => {
  try {
    parseScheduleExpression(expression, timezone ?? 'UTC');
    return undefined;
  } catch (error) {
    if (error instanceof ScheduleExpressionError) return error.message;
    throw error;
  }
});

const breadcrumb = { schema_name: 'workflow.request.v1', context: { workflow: 'daily-report', input: {} } };

function issues(context: unknown) {
  const result = checked.safeParse(context);
  return result.success ? [] : toFieldIssues(result.error);
}

describe('schedule.def.v1', () => {
  it('reads a cron or a rate, with or without its wrapper, into a Scheduler expression', () => {
    expect(
      checked.parse({
        schedule_id: 'daily',
        cron: '0 9 ? * MON-FRI *',
        timezone: 'Europe/Paris',
        breadcrumb,
      }),
    ).toMatchObject({
      expression: 'cron(0 9 ? * MON-FRI *)',
      timezone: 'Europe/Paris',
      breadcrumb: { tags: [] },
    });
    expect(checked.parse({ schedule_id: 'often', rate: 'rate(15 minutes)', breadcrumb }).expression).toBe(
      'rate(15 minutes)',
    );
  });

  it('names what is wrong', () => {
    expect(issues({ schedule_id: 'x', breadcrumb })).toEqual([
      { path: '', message: 'expected exactly one of cron and rate' },
    ]);
    expect(issues({ schedule_id: 'x', cron: '0 9 * * MON *', breadcrumb })[0]).toMatchObject({
      path: 'cron',
      message: expect.stringContaining('exactly one of day-of-month and day-of-week must be "?"'),
    });
    expect(issues({ schedule_id: 'x', rate: '5 weeks', breadcrumb })[0]?.path).toBe('rate');
    expect(
      issues({ schedule_id: 'x', rate: '5 minutes', timezone: 'Nowhere/Land', breadcrumb })[0]?.message,
    ).toMatch(/ScheduleExpressionTimezone/);
    expect(
      issues({ schedule_id: 'x', rate: '5 minutes', breadcrumb: { schema_name: 'Bad', context: {} } })[0]
        ?.path,
    ).toBe('breadcrumb.schema_name');
  });
});
