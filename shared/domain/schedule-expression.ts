/**
 * EventBridge Scheduler's schedule expressions, as crumbs checks them (`schedule.def.v1`) and as the local
 * Scheduler emulator evaluates them:
 *
 *   at(yyyy-mm-ddThh:mm:ss)           once, at that wall-clock time in `ScheduleExpressionTimezone` (default UTC)
 *   rate(value minute|minutes|hour|hours|day|days)
 *                                     every interval, the first one interval after StartDate (or creation)
 *   cron(minutes hours day-of-month month day-of-week year)
 *                                     AWS's six fields: day-of-week 1-7 is SUN-SAT, one of day-of-month and
 *                                     day-of-week must be `?`; `L`, `W`, `#`, names (JAN, MON) and `a/b` steps
 *
 * Cron (and the time-zone arithmetic of `at`) is croner's, a maintained cron library with time zones, Quartz
 * weekday numbering (`alternativeWeekdays`, which is AWS's) and a year field (`7-part` mode): AWS's six fields
 * become croner's seven by putting seconds (0) in front. Our own parser would be a second cron dialect to keep right.
 */
import { Cron } from 'croner';

/** An expression or time zone Scheduler would refuse; the message says why. */
export class ScheduleExpressionError extends Error {
  override readonly name = 'ScheduleExpressionError';
}

export type ParsedExpression =
  | { readonly kind: 'at'; readonly at: Date }
  | { readonly kind: 'rate'; readonly intervalMs: number }
  | { readonly kind: 'cron'; readonly cron: Cron };

const RATE_UNITS: Record<string, number> = {
  minute: 60_000,
  minutes: 60_000,
  hour: 3_600_000,
  hours: 3_600_000,
  day: 86_400_000,
  days: 86_400_000,
};

function invalid(expression: string, why: string): ScheduleExpressionError {
  return new ScheduleExpressionError(`Invalid Schedule Expression ${expression}: ${why}`);
}

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function cronFor(pattern: string, timezone: string, expression: string): Cron {
  try {
    return new Cron(pattern, {
      timezone,
      mode: '7-part',
      alternativeWeekdays: true,
      sloppyRanges: true,
      domAndDow: true,
    });
  } catch (error) {
    throw invalid(expression, (error as Error).message);
  }
}

export function parseScheduleExpression(expression: string, timezone = 'UTC'): ParsedExpression {
  if (!isTimeZone(timezone)) {
    throw new ScheduleExpressionError(`Invalid ScheduleExpressionTimezone ${timezone}.`);
  }
  const at = /^at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\)$/.exec(expression);
  if (at !== null) {
    const [, y, mo, d, h, mi, s] = at.map(Number) as [number, number, number, number, number, number, number];
    // The instant that wall-clock time names in the zone: the one time a cron pattern for exactly it matches.
    const cron = cronFor(`${s} ${mi} ${h} ${d} ${mo} * ${y}`, timezone, expression);
    const instant = cron.nextRun(new Date(Date.UTC(y, mo - 1, d) - 3 * 86_400_000));
    if (instant === null) throw invalid(expression, 'no such date');
    return { kind: 'at', at: instant };
  }
  const rate = /^rate\((\d+)\s+([a-z]+)\)$/.exec(expression);
  if (rate !== null) {
    const value = Number(rate[1]);
    const unit = RATE_UNITS[rate[2] ?? ''];
    if (unit === undefined) throw invalid(expression, 'the unit is minute(s), hour(s) or day(s)');
    if (value < 1) throw invalid(expression, 'the value is at least 1');
    return { kind: 'rate', intervalMs: value * unit };
  }
  const cron = /^cron\((.+)\)$/.exec(expression);
  if (cron !== null) {
    const fields = (cron[1] ?? '').trim().split(/\s+/);
    if (fields.length !== 6) {
      throw invalid(expression, 'expected six fields: minutes hours day-of-month month day-of-week year');
    }
    const [, , dayOfMonth, , dayOfWeek] = fields;
    if ((dayOfMonth === '?') === (dayOfWeek === '?')) {
      throw invalid(expression, 'exactly one of day-of-month and day-of-week must be "?"');
    }
    return { kind: 'cron', cron: cronFor(`0 ${fields.join(' ')}`, timezone, expression) };
  }
  throw invalid(expression, 'expected at(...), rate(...) or cron(...)');
}

export interface FireWindow {
  /** StartDate, or when the schedule was created (rate schedules count from it). */
  readonly from: Date;
  readonly end?: Date | undefined;
  /** The scheduled time of the last firing; undefined before the first. */
  readonly lastScheduled?: Date | undefined;
  /** When the last firing happened (missed cron times while the emulator was down fire once, on restart). */
  readonly lastFiredAt?: Date | undefined;
}

/** The next scheduled time, or undefined when the schedule will not fire again. */
export function nextFireTime(parsed: ParsedExpression, window: FireWindow): Date | undefined {
  let next: Date | undefined;
  switch (parsed.kind) {
    case 'at':
      next = window.lastScheduled === undefined ? parsed.at : undefined;
      break;
    case 'rate': {
      const from = window.from.getTime();
      const after = Math.max(window.lastFiredAt?.getTime() ?? from, window.lastScheduled?.getTime() ?? from);
      const steps = Math.floor((after - from) / parsed.intervalMs) + 1;
      next = new Date(from + steps * parsed.intervalMs);
      break;
    }
    case 'cron': {
      const after = new Date(
        Math.max(
          window.from.getTime() - 1,
          window.lastScheduled?.getTime() ?? 0,
          window.lastFiredAt?.getTime() ?? 0,
        ),
      );
      next = parsed.cron.nextRun(after) ?? undefined;
      break;
    }
  }
  if (next !== undefined && window.end !== undefined && next.getTime() > window.end.getTime())
    return undefined;
  return next;
}
