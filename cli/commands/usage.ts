/**
 * `crumbs usage [--by day|agent|run|thread|request] [--from DAY] [--to DAY] [--limit N]`: the workspace's model
 * calls, tokens and cost (`GET …/usage`), per day of the range or per agent, run, thread or request over it, with
 * the range's totals. Totals trail the model calls by the stream (about a second).
 */
import type { UsageReportAmounts as UsageAmounts, UsageReport } from '../api-client.ts';
import { type Command, noPositionals, optInt, optString, printJson, UsageError } from '../args.ts';
import { formatTable } from '../format.ts';

const DIMENSIONS = ['day', 'agent', 'run', 'thread'];

export const usageCommand: Command = {
  name: 'usage',
  summary: 'model calls, tokens and cost per day, agent, run, thread or request',
  usage: `Usage: crumbs usage [--by day|agent|run|thread|request] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--limit N]

Prints the workspace's model calls, input, output and cached tokens and their cost (from the operator's price
table), per day of the range (the default) or per agent, run, thread or request over it, the most expensive first,
and the range's totals. The range defaults to the last 30 days (UTC), at most 92.

Flags:
  --by D          day (default), agent, run, thread or request
  --from DAY      the first day (UTC)
  --to DAY        the last day (UTC), default today
  --limit N       at most N rows for --by other than day (default 50, at most 500)`,
  options: {
    by: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    limit: { type: 'string' },
  },
  async run(ctx) {
    noPositionals(ctx);
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

export function usageTable(report: UsageReport): string {
  const rows: Row[] = report.by === 'day' ? report.items.filter((i) => i.calls > 0) : report.items;
  const table = formatTable<Row>(
    [
      { header: report.by, value: (r) => r.key, max: 48 },
      { header: 'calls', value: (r) => r.calls, align: 'right' },
      { header: 'input', value: (r) => r.input_tokens, align: 'right' },
      { header: 'cached', value: (r) => r.cached_tokens, align: 'right' },
      { header: 'output', value: (r) => r.output_tokens, align: 'right' },
      { header: 'cost usd', value: (r) => dollars(r), align: 'right' },
    ],
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
