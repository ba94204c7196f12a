/**
 * Thread: the causal tree as a timeline. Each row is a breadcrumb under the one it answers; the bar shows when it
 * was written after the root, and the hop time beside it how long it took from its cause. Errors and loop stops
 * are highlighted. Refreshes while the thread is still changing.
 */
import { useEffect } from 'preact/hooks';
import type { Api } from '../api.ts';
import { ErrorLine, OutcomeBadge, useLoad } from '../components.tsx';
import { duration, time } from '../format.ts';
import { href } from '../session.ts';

export function ThreadView({ api, id }: { api: Api; id: string }) {
  const loaded = useLoad(() => api.thread(id), [api, id]);
  const { reload } = loaded;
  useEffect(() => {
    const controller = new AbortController();
    void api.follow({ thread: id, wait: '20' }, () => reload(), controller.signal);
    return () => controller.abort();
  }, [api, id]);

  if (loaded.error) return <ErrorLine error={loaded.error} />;
  const view = loaded.value;
  if (!view) return <p class="muted">Loading…</p>;
  const total = Math.max(1, ...view.nodes.map((n) => n.since_root_ms));
  const errors = view.nodes.filter((n) => n.outcome !== 'ok').length;

  return (
    <section>
      <div class="heading">
        <h2>Thread</h2>
        <span class="mono muted">{view.thread}</span>
        <span class="muted">
          {view.nodes.length} breadcrumbs · {duration(total)}
          {errors > 0 ? ` · ${errors} failed` : ''}
          {view.truncated ? ' · truncated' : ''}
        </span>
      </div>
      <table class="list timeline">
        <thead>
          <tr>
            <th>breadcrumb</th>
            <th>writer</th>
            <th>hop</th>
            <th>at</th>
            <th class="bar-col">timeline</th>
          </tr>
        </thead>
        <tbody>
          {view.nodes.map((n) => (
            <tr key={n.id} class={n.outcome !== 'ok' ? 'row-error' : ''} data-schema={n.schema_name}>
              <td style={{ paddingLeft: `${0.5 + n.depth * 1.25}rem` }}>
                {n.depth > 0 && <span class="elbow">└</span>}
                <a href={href({ view: 'breadcrumb', id: n.id })} class="mono">
                  {n.schema_name}
                </a>{' '}
                <OutcomeBadge outcome={n.outcome} status={n.status} />
                <div class="sub">{n.title}</div>
                {n.error && <div class="error sub">{n.error}</div>}
              </td>
              <td>
                <span class="mono">{n.writer}</span>
                {n.definition && <div class="sub">{n.definition.kind} definition</div>}
              </td>
              <td class="mono">{n.causation ? n.causation.hop : 'root'}</td>
              <td class="mono">
                {time(n.at)}
                <div class="sub">+{duration(n.since_root_ms)}</div>
              </td>
              <td class="bar-col">
                <div class="track">
                  <div
                    class={`bar ${n.outcome}`}
                    style={{
                      left: `${(100 * Math.max(0, n.since_root_ms - (n.hop_ms ?? 0))) / total}%`,
                      width: `${Math.max(0.8, (100 * (n.hop_ms ?? 0)) / total)}%`,
                    }}
                  />
                </div>
                <div class="sub">{n.hop_ms !== null ? `hop ${duration(n.hop_ms)}` : ''}</div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
