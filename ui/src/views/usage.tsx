/**
 * Usage: the workspace's model calls, tokens and cost over the last 30 days (UTC) — a bar chart of cost per day
 * (tokens when nothing was priced), the totals, and the top agents and runs. The figures are the stream consumer's
 * totals (`GET …/usage`), which trail the calls by a second or so. The chart is plain SVG: one bar per day.
 */
import type { UsageReportAmounts as UsageAmounts, UsageReport } from '#shared/client/api-types.ts';
import type { Api } from '../api.ts';
import { ErrorLine, useLoad } from '../components.tsx';
import { href } from '../session.ts';

export function UsageView({ api }: { api: Api }) {
  const loaded = useLoad(() => Promise.all([api.usage('day'), api.usage('agent'), api.usage('run')]), [api]);
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const [days, agents, runs] = loaded.value;
  return (
    <section>
      <div class="heading">
        <h2>Usage</h2>
        <span class="muted">
          {api.workspace}, {days.from} to {days.to} (UTC)
        </span>
        <button type="button" class="link" onClick={loaded.reload}>
          refresh
        </button>
      </div>
      <p data-usage-totals>
        <strong>{dollars(days.totals.cost_nusd)}</strong> for {days.totals.calls} model calls:{' '}
        {days.totals.input_tokens} input tokens ({days.totals.cached_tokens} cached),{' '}
        {days.totals.output_tokens} output
        {days.totals.unpriced_calls > 0 && (
          <span class="muted"> · {days.totals.unpriced_calls} calls of models without a price</span>
        )}
      </p>
      <DayChart report={days} />
      <div class="usage-tops">
        <Top title="Top agents" report={agents} link={() => undefined} />
        <Top title="Top runs" report={runs} link={(key) => href({ view: 'run', id: key })} />
      </div>
    </section>
  );
}

const WIDTH = 720;
const HEIGHT = 160;
const LABEL = 18;

function DayChart({ report }: { report: UsageReport }) {
  const priced = report.totals.cost_nusd > 0;
  const value = (d: UsageAmounts) => (priced ? d.cost_nusd : d.input_tokens + d.output_tokens);
  const max = Math.max(1, ...report.items.map(value));
  const step = WIDTH / Math.max(1, report.items.length);
  return (
    <figure class="usage-chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT + LABEL}`}
        role="img"
        aria-label={`${priced ? 'cost' : 'tokens'} per day`}
        data-usage-chart
      >
        {report.items.map((d, i) => {
          const h = Math.round((value(d) / max) * HEIGHT);
          return (
            <g key={d.key} data-day={d.key} data-calls={d.calls}>
              <rect
                x={i * step + 1}
                y={HEIGHT - h}
                width={Math.max(1, step - 2)}
                height={h}
                class="usage-bar"
              >
                <title>
                  {d.key}: {dollars(d.cost_nusd)}, {d.calls} calls, {d.input_tokens + d.output_tokens} tokens
                </title>
              </rect>
              {i % 7 === 0 && (
                <text x={i * step + 1} y={HEIGHT + LABEL - 4} class="axis">
                  {d.key.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="muted">{priced ? 'cost' : 'tokens'} per day</figcaption>
    </figure>
  );
}

function Top({
  title,
  report,
  link,
}: {
  title: string;
  report: UsageReport;
  link: (key: string) => string | undefined;
}) {
  return (
    <div data-usage-top={report.by}>
      <h3>{title}</h3>
      {report.items.length === 0 ? (
        <p class="muted">No model calls in this range.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th>{report.by}</th>
              <th>calls</th>
              <th>tokens</th>
              <th>cost</th>
            </tr>
          </thead>
          <tbody>
            {report.items.map((item) => {
              const target = link(item.key);
              return (
                <tr key={item.key} data-key={item.key}>
                  <td class="mono">{target ? <a href={target}>{item.key}</a> : item.key}</td>
                  <td>{item.calls}</td>
                  <td>{item.input_tokens + item.output_tokens}</td>
                  <td class="mono">{dollars(item.cost_nusd)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** Dollars from whole nano-dollars, exact (the totals are exact sums of the calls). */
export function dollars(nusd: number): string {
  const whole = Math.floor(nusd / 1e9);
  const fraction = String(nusd % 1e9)
    .padStart(9, '0')
    .replace(/0+$/, '');
  return `$${whole}${fraction ? `.${fraction}` : ''}`;
}
