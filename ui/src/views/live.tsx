/**
 * Live: changes as they happen, filterable by schema, tag, writer and thread — pushed over the workspace's change
 * channel where the stack has one (the newest 50 read once first), long-polled otherwise.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ChangeEvent } from '#shared/client/api-types.ts';
import type { Api } from '../api.ts';
import { OutcomeBadge } from '../components.tsx';
import { time } from '../format.ts';
import { href } from '../session.ts';

const KEEP = 500;

export function LiveView({ api }: { api: Api }) {
  const [events, setEvents] = useState<ChangeEvent[]>([]);
  const [error, setError] = useState<string>();
  const [connected, setConnected] = useState(false);
  const [filters, setFilters] = useState({ schema: '', tag: '', writer: '', thread: '' });

  useEffect(() => {
    const controller = new AbortController();
    setConnected(true);
    void api.follow(
      { backlog: '50' },
      (batch) => {
        setError(undefined);
        setEvents((current) => [...batch.slice().reverse(), ...current].slice(0, KEEP));
      },
      controller.signal,
      (e) => setError(e?.message),
    );
    return () => {
      setConnected(false);
      controller.abort();
    };
  }, [api]);

  const shown = useMemo(
    () =>
      events.filter(
        (e) =>
          (!filters.schema || e.schema_name.includes(filters.schema)) &&
          (!filters.tag || e.tags.some((t) => t.includes(filters.tag))) &&
          (!filters.writer || e.updated_by.includes(filters.writer)) &&
          (!filters.thread || e.id === filters.thread || e.causation?.thread === filters.thread),
      ),
    [events, filters],
  );
  const field = (name: keyof typeof filters, label: string) => (
    <label>
      {label}
      <input
        name={name}
        value={filters[name]}
        placeholder="any"
        onInput={(e) => setFilters({ ...filters, [name]: e.currentTarget.value.trim() })}
      />
    </label>
  );

  return (
    <section>
      <div class="heading">
        <h2>Live</h2>
        <span
          class={`dot ${connected && !error ? 'on' : 'off'}`}
          title={error ?? 'following the change stream'}
        />
        <span class="muted">
          {shown.length} of {events.length} changes in {api.workspace}
        </span>
      </div>
      <div class="filters">
        {field('schema', 'schema')}
        {field('tag', 'tag')}
        {field('writer', 'writer')}
        {field('thread', 'thread')}
      </div>
      {error && <p class="error">{error}</p>}
      <table class="list live">
        <thead>
          <tr>
            <th>time</th>
            <th>change</th>
            <th>schema</th>
            <th>title</th>
            <th>writer</th>
            <th>tags</th>
            <th>thread</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((e) => (
            <tr key={`${e.id}@${e.version}:${e.type}`} class={e.outcome !== 'ok' ? 'row-error' : ''}>
              <td class="mono">{time(e.updated_at)}</td>
              <td class="nowrap">
                {e.type} v{e.version}
              </td>
              <td>
                <a href={href({ view: 'breadcrumb', id: e.id })} class="mono">
                  {e.schema_name}
                </a>{' '}
                <OutcomeBadge outcome={e.outcome} status={e.status} />
              </td>
              <td class="title">{e.title || <span class="muted">{e.id}</span>}</td>
              <td class="mono">{e.updated_by}</td>
              <td class="tags">{e.tags.slice(0, 4).join(' ')}</td>
              <td>
                <a href={href({ view: 'thread', id: e.causation?.thread ?? e.id })} class="mono muted">
                  {(e.causation?.thread ?? e.id).slice(-8)}
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {events.length === 0 && !error && <p class="muted">Waiting for changes…</p>}
    </section>
  );
}
