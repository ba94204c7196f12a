/** Breadcrumb: the context view (what an LLM reads) beside the stored record, and its history with diffs. */
import { useState } from 'preact/hooks';
import type { Breadcrumb } from '#shared/client/api-types.ts';
import type { Api } from '../api.ts';
import { ErrorLine, Json, useLoad } from '../components.tsx';
import { dateTime, diff } from '../format.ts';
import { href } from '../session.ts';
import { AttachmentsPanel } from './attachments.tsx';

export function BreadcrumbView({ api, id }: { api: Api; id: string }) {
  const loaded = useLoad(() => Promise.all([api.contextView(id), api.full(id), api.history(id)]), [api, id]);
  const [selected, setSelected] = useState<number>();
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const [view, record, history] = loaded.value;
  const versions = history.items;
  const pick = selected ?? record.version;
  const index = versions.findIndex((v) => v.version === pick);
  const current = versions[index];
  const previous = versions[index + 1];

  return (
    <section>
      <div class="heading">
        <h2 class="mono">{record.schema_name}</h2>
        <span class="muted mono">{record.id}</span>
        <a href={href({ view: 'thread', id: record.causation?.thread ?? record.id })}>open its thread</a>
      </div>
      <p class="meta">
        <b>{record.title || '(no title)'}</b> · v{record.version} · written by{' '}
        <span class="mono">{record.updated_by}</span> at {dateTime(record.updated_at)} · tags{' '}
        {record.tags.join(', ') || '—'}
        {record.causation && (
          <>
            {' '}
            · caused by{' '}
            <a
              class="mono"
              href={href({ view: 'breadcrumb', id: record.causation.caused_by.split('@')[0]! })}
            >
              {record.causation.caused_by}
            </a>{' '}
            (hop {record.causation.hop})
          </>
        )}
      </p>
      <div class="split">
        <div class="panel" data-panel="context-view">
          <h3>Context view</h3>
          <Json value={view.context} />
        </div>
        <div class="panel" data-panel="stored-record">
          <h3>Stored record</h3>
          <Json value={record} />
        </div>
      </div>
      <AttachmentsPanel api={api} context={view.context} />
      <h3>History</h3>
      <div class="history">
        <ol class="versions">
          {versions.map((v) => (
            <li key={v.version} class={v.version === pick ? 'active' : ''}>
              <button type="button" class="link" onClick={() => setSelected(v.version)}>
                v{v.version}
              </button>{' '}
              <span class="muted">
                {dateTime(v.updated_at)} · {v.updated_by}
              </span>
            </li>
          ))}
        </ol>
        <div class="panel">
          {current && previous ? (
            <VersionDiff before={previous} after={current} />
          ) : (
            <p class="muted">v{pick} is the first version.</p>
          )}
        </div>
      </div>
    </section>
  );
}

/** What changed from `before` to `after`: title, tags, context and hints, leaf by leaf. */
export function VersionDiff({ before, after }: { before: Breadcrumb; after: Breadcrumb }) {
  const pick = (b: Breadcrumb) => ({
    title: b.title,
    tags: b.tags,
    context: b.context,
    llm_hints: b.llm_hints,
  });
  const lines = diff(pick(before), pick(after));
  return (
    <div class="diff">
      <h4>
        v{before.version} → v{after.version}
      </h4>
      {lines.length === 0 && <p class="muted">No change in title, tags, context or hints.</p>}
      <table>
        <tbody>
          {lines.map((l) => (
            <tr key={l.path} class={l.kind}>
              <td class="mono">{l.path}</td>
              <td class="mono del">{l.before ?? ''}</td>
              <td class="mono add">{l.after ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
