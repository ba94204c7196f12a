/**
 * Definitions: every agent, tool, workflow and context definition with its rule state, its versions (each with a
 * diff against the one before; a step may pin one, `crumbs rollback` writes one again), and explain a trigger.
 */
import { useState } from 'preact/hooks';
import type { DefinitionSummary, Explanation } from '#shared/client/api-types.ts';
import type { Api } from '../api.ts';
import { Badge, ErrorLine, Json, useLoad } from '../components.tsx';
import { dateTime } from '../format.ts';
import { href } from '../session.ts';
import { VersionDiff } from './breadcrumb.tsx';

export function DefinitionsView({ api }: { api: Api }) {
  const loaded = useLoad(() => api.definitions(), [api]);
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const items = loaded.value.items;
  return (
    <section>
      <div class="heading">
        <h2>Definitions</h2>
        <span class="muted">
          {items.length} in {api.workspace}
        </span>
        <button type="button" class="link" onClick={loaded.reload}>
          refresh
        </button>
      </div>
      {items.length === 0 && <p class="muted">No definitions in this workspace.</p>}
      <div class="cards">
        {items.map((d) => (
          <Definition key={d.id} api={api} d={d} />
        ))}
      </div>
    </section>
  );
}

function Definition({ api, d }: { api: Api; d: DefinitionSummary }) {
  const [target, setTarget] = useState('');
  const [result, setResult] = useState<Explanation>();
  const [error, setError] = useState<string>();
  const [showVersions, setShowVersions] = useState(false);
  return (
    <article class="card" data-definition={d.id}>
      <header>
        <a class="mono" href={href({ view: 'breadcrumb', id: d.id })}>
          {d.id}
        </a>
        <Badge kind={d.state === 'active' ? 'ok' : d.state === 'invalid' ? 'error' : 'warn'}>{d.state}</Badge>
      </header>
      <p class="meta">
        {d.kind} · {d.schema_name} · v{d.version} · {dateTime(d.updated_at)}
      </p>
      {d.title && <p>{d.title}</p>}
      {d.errors.length > 0 && (
        <ul class="error">
          {d.errors.map((e) => (
            <li key={e.path}>
              <span class="mono">{e.path}</span>: {e.message}
            </li>
          ))}
        </ul>
      )}
      <details>
        <summary>
          pattern{' '}
          {d.rule_name ? (
            <span class="mono muted">
              {d.rule_name}
              {d.event_bus ? ` on ${d.event_bus}` : ''}
            </span>
          ) : null}
        </summary>
        <Json value={d.pattern} />
      </details>
      <div class="versions-panel" data-versions={d.id}>
        <button type="button" class="link" onClick={() => setShowVersions((shown) => !shown)}>
          {showVersions ? 'hide versions' : `versions (latest v${d.version})`}
        </button>
        {showVersions && <Versions api={api} id={d.id} latest={d.version} />}
      </div>
      <form
        class="explain"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          setResult(undefined);
          try {
            setResult(await api.explain(d.id, target.trim()));
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <input
          name="breadcrumb"
          placeholder="breadcrumb id"
          value={target}
          onInput={(e) => setTarget(e.currentTarget.value)}
        />
        <button type="submit">Explain</button>
      </form>
      {error && <p class="error">{error}</p>}
      {result && (
        <div class={`explanation ${result.matched ? 'ok' : 'error'}`}>
          <b>{result.matched ? `triggers it (selector ${result.matchedSelector})` : 'does not trigger it'}</b>
          {result.envelope && (
            <div>
              {result.envelope.field}: {result.envelope.reason}
            </div>
          )}
          <ul>
            {result.selectors.map((s) => (
              <li key={s.index}>
                selector {s.index}:{' '}
                {s.matched ? 'matches' : `fails at ${s.failure?.field}: ${s.failure?.reason ?? ''}`}
              </li>
            ))}
          </ul>
        </div>
      )}
    </article>
  );
}

/** A definition's versions, newest first (the last 50), each with what changed from the one before. */
function Versions({ api, id, latest }: { api: Api; id: string; latest: number }) {
  const loaded = useLoad(() => api.history(id), [api, id, latest]);
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const versions = loaded.value.items;
  return (
    <ol class="definition-versions">
      {versions.map((v, i) => {
        const previous = versions[i + 1];
        return (
          <li key={v.version} data-version={v.version}>
            <p class="meta">
              <b>v{v.version}</b> · {dateTime(v.updated_at)} · <span class="mono">{v.updated_by}</span>
              {v.version === latest ? (
                ' · live'
              ) : (
                <>
                  {' · '}
                  <span class="mono muted" title="write this version's content again as the next version">
                    crumbs rollback {id} --to {v.version}
                  </span>
                </>
              )}
            </p>
            {previous ? (
              <VersionDiff before={previous} after={v} />
            ) : (
              <p class="muted">
                {v.version === 1 ? 'the first version' : `v${v.version - 1} is past the last 50 versions`}
              </p>
            )}
          </li>
        );
      })}
    </ol>
  );
}
