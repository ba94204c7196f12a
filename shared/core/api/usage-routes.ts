/**
 * `GET /v1/workspaces/{ws}/usage?by=day|agent|run|thread|request[&from=YYYY-MM-DD&to=YYYY-MM-DD&limit=N]`: the
 * workspace's model calls, tokens and cost (the stream consumer's hourly counters, summed) per day of the range,
 * or per agent, run, thread or request over it, the most expensive first. The range defaults to the last 30 days
 * (UTC) and spans at most `MAX_DAYS`; a read takes at most `MAX_COUNTERS` counters and says when it was cut short.
 * Totals trail the writes by the stream (a second or so). Behind the API's workspace authorization (api.ts).
 */
import { parseOrThrow, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError } from '#shared/domain/errors.ts';
import {
  addAmounts,
  USAGE_DIMENSIONS,
  type UsageAmounts,
  type UsageDimension,
  type UsageTotals,
  zeroAmounts,
} from '#shared/ports/usage-totals.ts';
import { type HttpRequest, type HttpResult, json } from './http.ts';

export const MAX_DAYS = 92;
const DEFAULT_DAYS = 30;
export const MAX_COUNTERS = 5000;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** Amounts as `GET …/usage` answers them: with the cost in dollars beside the exact nano-dollars. */
export type UsageReportAmounts = UsageAmounts & { cost_usd: number };

export interface UsageItem extends UsageReportAmounts {
  key: string;
}

/** `GET …/usage`: one item per day of the range (`by=day`, every day), or per key, the most expensive first. */
export interface UsageReport {
  workspace: string;
  by: UsageDimension;
  from: string;
  to: string;
  items: UsageItem[];
  totals: UsageReportAmounts;
  truncated: boolean;
}

export function usageRoutes(totals: UsageTotals) {
  return [
    {
      template: '/v1/workspaces/{ws}/usage',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/usage$/,
      methods: {
        GET: async (req: HttpRequest, p: Record<string, string>): Promise<HttpResult> =>
          json(200, await readUsage(totals, parseOrThrow(WorkspaceSchema, p.ws, 'workspace'), req.query)),
      },
    },
  ];
}

export async function readUsage(
  totals: UsageTotals,
  workspace: string,
  query: Record<string, string | undefined>,
): Promise<UsageReport> {
  const by = dimensionOf(query.by);
  const { from, to } = rangeOf(query.from, query.to);
  const limit = limitOf(query.limit);
  const { rows, truncated } = await totals.read(
    workspace,
    by,
    { fromHour: `${from}T00`, toHour: `${to}T23` },
    MAX_COUNTERS,
  );
  const groups = new Map<string, UsageAmounts>();
  if (by === 'day') for (const day of daysOf(from, to)) groups.set(day, zeroAmounts());
  for (const row of rows) {
    const key = by === 'day' ? row.hour.slice(0, 10) : row.key;
    groups.set(key, addAmounts(groups.get(key) ?? zeroAmounts(), row));
  }
  let items: UsageItem[] = [...groups].map(([key, amounts]) => item(key, amounts));
  if (by !== 'day') {
    items.sort(
      (a, b) =>
        b.cost_nusd - a.cost_nusd ||
        b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens) ||
        a.key.localeCompare(b.key),
    );
  }
  const total = item(
    'total',
    [...groups.values()].reduce((s, a) => addAmounts(s, a), zeroAmounts()),
  );
  const cut = by !== 'day' && items.length > limit;
  if (cut) items = items.slice(0, limit);
  const { key: _key, ...totalAmounts } = total;
  return { workspace, by, from, to, items, totals: totalAmounts, truncated: truncated || cut };
}

function item(key: string, amounts: UsageAmounts): UsageItem {
  return { key, ...amounts, cost_usd: amounts.cost_nusd / 1e9 };
}

function dimensionOf(raw: string | undefined): UsageDimension {
  if (raw === undefined || raw === '') return 'day';
  if ((USAGE_DIMENSIONS as readonly string[]).includes(raw)) return raw as UsageDimension;
  throw new BadRequestError('by is not valid', [
    { path: 'by', message: `expected one of ${USAGE_DIMENSIONS.join(', ')}, got "${raw.slice(0, 40)}"` },
  ]);
}

function rangeOf(rawFrom: string | undefined, rawTo: string | undefined): { from: string; to: string } {
  const to = rawTo ? dayOf('to', rawTo) : new Date().toISOString().slice(0, 10);
  const from = rawFrom ? dayOf('from', rawFrom) : shift(to, -(DEFAULT_DAYS - 1));
  if (from > to) {
    throw new BadRequestError('from is after to', [
      { path: 'from', message: `expected a day on or before to (${to}), got ${from}` },
    ]);
  }
  if (daysBetween(from, to) >= MAX_DAYS) {
    throw new BadRequestError('the range is too long', [
      { path: 'from', message: `at most ${MAX_DAYS} days from from to to, got ${daysBetween(from, to) + 1}` },
    ]);
  }
  return { from, to };
}

function dayOf(name: string, raw: string): string {
  const time = DAY.test(raw) ? Date.parse(`${raw}T00:00:00Z`) : Number.NaN;
  // A day that does not exist (2026-02-30) parses to another day, or to nothing.
  const valid = Number.isFinite(time) && new Date(time).toISOString().slice(0, 10) === raw;
  if (!valid) {
    throw new BadRequestError(`${name} is not a valid day`, [
      { path: name, message: `expected a date YYYY-MM-DD (UTC), got "${raw.slice(0, 40)}"` },
    ]);
  }
  return raw;
}

function limitOf(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > MAX_LIMIT) {
    throw new BadRequestError('limit is not valid', [
      { path: 'limit', message: `expected an integer from 1 to ${MAX_LIMIT}, got ${raw.slice(0, 40)}` },
    ]);
  }
  return n;
}

function shift(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

function daysOf(from: string, to: string): string[] {
  const days: string[] = [];
  for (let d = from; d <= to; d = shift(d, 1)) days.push(d);
  return days;
}
