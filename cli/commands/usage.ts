/**
 * `crumbs usage [--by day|agent|run|thread] [--from DAY] [--to DAY] [--limit N]`: the workspace's model calls, tokens
 * and cost (`GET …/usage`), per day of the range or per agent, run or thread over it, with the range's totals.
 * `crumbs usage --request ID`: one request's calls, per write that recorded them (`GET …/usage/requests/{id}`).
 * Both trail the model calls by the stream (about a second).
 */
import type {
  RequestUsageReport,
  UsageReportAmounts as UsageAmounts,
  UsageReport,
} from '#shared/client/crumbs-client.ts';
import { type Command, noPositionals, optInt, optString, printJson, UsageError } from '../args.ts';
import { formatTable } from '../format.ts';

const DIMENSIONS = ['day', 'agent', 'run', 'thread'];

export const usageCommand: Command = {
  name: 'usage',
  summary: 'model calls, tokens and cost per day, agent, run, thread or request',
  usage: `Usage: crumbs usage [--by day|agent|run|thread] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--limit N]
       crumbs usage --request ID

Prints the workspace's model calls, input, output and cached tokens and their cost (from the operator's price
table), per day of the range (the default) or per agent, run or thread over it, the most expensive first, and the
range's totals. The range defaults to the last 30 days (UTC), at most 92. With --request, one request's calls:
one row per breadcrumb that recorded some (its answer, its tool requests, its conversation), and their sum.

Flags:
  --by D          day (default), agent, run or thread
  --request ID    one request's calls (not with --by, --from, --to, --limit)
  --from DAY      the first day (UTC)
  --to DAY        the last day (UTC), default today
  --limit N       at most N rows for --by other than day (default 50, at most 500)`,
  options: {
    by: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    limit: { type: 'string' },
    request: { type: 'string' },
  },
  async run(ctx) {
    noPositionals(ctx);
    const request = optString(ctx.values, 'request');
    if (request !== undefined) {
      const others = ['by', 'from', 'to', 'limit'].filter((f) => ctx.values[f] !== undefined);
      if (others.length > 0) {
        throw new UsageError(`--request: not with ${others.map((f) => `--${f}`).join(', ')}`, true);
      }
      const report = await ctx.client().requestUsage(request);
      if (ctx.global.json) printJson(ctx.io, report);
      else ctx.io.stdout(`${requestUsageTable(report)}\n`);
      return 0;
    }
    const by = optString(ctx.values, 'by') ?? 'day';
    if (!DIMENSIONS.includes(by)) {
      throw new UsageError(`--by: expected one of ${DIMENSIONS.join(', ')}, got ${JSON.stringify(by)}`, true);
    }
    const from = optString(ctx.values, 'from');
    const to = optString(ctx.values, 'to');
    const limit = optInt(ctx.values, 'limit', { min: 1, max: 500 });
    const report = await ctx.client().usage({
      by,
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
    if (ctx.global.json) {
      printJson(ctx.io, report);
      return 0;
    }
    ctx.io.stdout(`${usageTable(report)}\n`);
    return 0;
  },
};

type Row = UsageAmounts & { key: string };

export function requestUsageTable(report: RequestUsageReport): string {
  const table = formatTable<Row & { agent?: string }>(
    [
      { header: 'breadcrumb', value: (r) => r.key, max: 56 },
      { header: 'agent', value: (r) => r.agent ?? '', max: 32 },
      ...amountColumns,
    ],
    [
      ...report.items.map((i) => ({ ...i, key: `${i.id}@${i.version}`, agent: i.agent_id })),
      { key: 'total', ...report.totals },
    ],
  );
  const notes = [
    `${report.workspace}, request ${report.request}`,
    ...(report.items.length === 0
      ? ['no model calls recorded for this request (yet: they trail it by a second)']
      : []),
    ...(report.totals.unpriced_calls > 0
      ? [`${report.totals.unpriced_calls} calls of models without a price: tokens counted, cost not`]
      : []),
    ...(report.truncated ? ['cut short: the request wrote more breadcrumbs than one read takes'] : []),
  ];
  return `${table}\n\n${notes.join('\n')}`;
}

const amountColumns = [
  { header: 'calls', value: (r: Row) => r.calls, align: 'right' as const },
  { header: 'input', value: (r: Row) => r.input_tokens, align: 'right' as const },
  { header: 'cached', value: (r: Row) => r.cached_tokens, align: 'right' as const },
  { header: 'output', value: (r: Row) => r.output_tokens, align: 'right' as const },
  { header: 'cost usd', value: (r: Row) => dollars(r), align: 'right' as const },
];

export function usageTable(report: UsageReport): string {
  const rows: Row[] = report.by === 'day' ? report.items.filter((i) => i.calls > 0) : report.items;
  const table = formatTable<Row>(
    [{ header: report.by, value: (r) => r.key, max: 48 }, ...amountColumns],
    [...rows, { key: 'total', ...report.totals }],
  );
  const notes = [
    `${report.workspace}, ${report.from} to ${report.to} (UTC)`,
    ...(report.totals.unpriced_calls > 0
      ? [`${report.totals.unpriced_calls} calls of models without a price: tokens counted, cost not`]
      : []),
    ...(report.truncated ? ['cut short: more rows than one read takes; narrow --from/--to'] : []),
  ];
  return `${table}\n\n${notes.join('\n')}`;
}

/** Dollars to the nano-dollar, trailing zeros dropped (totals are exact sums of the calls). */
function dollars(amounts: UsageAmounts): string {
  const n = amounts.cost_nusd;
  const whole = Math.floor(n / 1e9);
  const fraction = String(n % 1e9)
    .padStart(9, '0')
    .replace(/0+$/, '');
  return fraction === '' ? `${whole}` : `${whole}.${fraction}`;
}
