/** Errors: error answers, dead-letter answers and loop stops, newest first, each linked to its thread. */
import type { Api } from '../api.ts';
import { Badge, ErrorLine, useLoad } from '../components.tsx';
import { dateTime } from '../format.ts';
import { href } from '../session.ts';

export function ErrorsView({ api }: { api: Api }) {
  const loaded = useLoad(() => api.errors(), [api]);
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const items = loaded.value.items;
  return (
    <section>
      <div class="heading">
        <h2>Errors</h2>
        <span class="muted">
          {items.length} in {api.workspace}
        </span>
        <button type="button" class="link" onClick={loaded.reload}>
          refresh
        </button>
      </div>
      {items.length === 0 && <p class="muted">Nothing failed in this workspace.</p>}
      <table class="list">
        <thead>
          <tr>
            <th>when</th>
            <th>what</th>
            <th>error</th>
            <th>writer</th>
            <th>thread</th>
          </tr>
        </thead>
        <tbody>
          {items.map((f) => (
            <tr key={f.id} data-error={f.id}>
              <td class="mono">{dateTime(f.at)}</td>
              <td>
                <a class="mono" href={href({ view: 'breadcrumb', id: f.id })}>
                  {f.schema_name}
                </a>{' '}
                {f.dead_letter && <Badge kind="error">dead letter</Badge>}
                {f.outcome === 'loop_stopped' && <Badge kind="warn">loop stopped</Badge>}
                <div class="sub">{f.title}</div>
              </td>
              <td class="error-text">{f.error}</td>
              <td class="mono">{f.writer}</td>
              <td>
                <a class="mono" href={href({ view: 'thread', id: f.thread })}>
                  open thread
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
