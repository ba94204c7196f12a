/**
 * Runs: workflow runs by status, and one run's steps as a timeline with their inputs and outputs. A waiting human
 * step gets a form generated from its `input_schema` (read from the step's `human.request.v1`) to approve or
 * reject it; the run can be paused, resumed, cancelled, or retried from a step. Actions go through the run routes
 * (`POST …/runs/{id}/approve|reject|pause|resume|cancel|retry`), which write the human response or control
 * breadcrumb; the view follows the run's breadcrumb on the change stream and redraws as it advances.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { Badge, ErrorLine, Json, useLoad } from '../components.tsx';
import { dateTime, duration } from '../format.ts';
import { href } from '../session.ts';
import { RunApprovals } from './approvals.tsx';
import { SchemaForm } from './schema-form.tsx';

export const RUN_SCHEMA = 'workflow.run.v1';
const STATUSES = ['running', 'waiting', 'paused', 'succeeded', 'failed', 'cancelled'] as const;
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

/** What the dashboard reads of a run (`workflow.run.v1` context; shared/core/orchestration/run.ts). */
export interface RunState {
  run_id?: string;
  workflow: string;
  workflow_version?: number;
  status: string;
  input?: unknown;
  output?: unknown;
  error?: string;
  failed_step?: string;
  started_at?: string;
  ended_at?: string;
  steps: Record<string, StepState>;
  /** Responses and controls refused because of who wrote them (only people approve). */
  refused?: { id: string; by: string; what: string; reason: string; at: string }[];
  /** Model calls, tokens and cost (nano-dollars) counted against the run's budget. */
  counters?: { steps: number; llm_calls: number; tokens?: number; cost_nusd?: number };
  /** The budget that paused the run: a person resumes it raising that limit. */
  stopped_by?: {
    budget: string;
    limit: number;
    used: number;
    unit: 'tokens' | 'usd' | 'calls';
    step?: string;
  };
  raised_limits?: { max_tokens?: number; max_cost_usd?: number; max_llm_calls?: number; by: string };
}

export interface StepState {
  kind?: string;
  status: string;
  attempts?: number;
  attempt_id?: string;
  input?: unknown;
  message?: string;
  prompt?: string;
  output?: unknown;
  error?: string;
  started_at?: string;
  ended_at?: string;
  by?: string;
  decision?: string;
  comment?: string;
  /** Agent and tool steps: the definition and version the step ran. */
  definition?: { id: string; version: number };
  /** wait_for steps: the selector, the correlation it waits for and the deadline. */
  waiting_for?: {
    selector: unknown;
    correlation?: { field: string; value: string | number | boolean };
    until: string;
  };
}

function statusKind(status: string): string {
  return status === 'succeeded' ? 'ok' : status === 'failed' || status === 'cancelled' ? 'error' : 'warn';
}

export function RunsView({ api }: { api: Api }) {
  const loaded = useLoad(() => api.listBySchema(RUN_SCHEMA), [api]);
  const [filter, setFilter] = useState<string>('');
  const { reload } = loaded;
  useEffect(() => {
    const controller = new AbortController();
    void api.follow({ schema_name: RUN_SCHEMA, wait: '20' }, () => reload(), controller.signal);
    return () => controller.abort();
  }, [api]);
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const runs = loaded.value.items.map((b) => ({
    id: b.id,
    updated_at: b.updated_at,
    run: b.context as unknown as RunState,
  }));
  const counts = Object.fromEntries(STATUSES.map((s) => [s, runs.filter((r) => r.run.status === s).length]));
  const shown = filter ? runs.filter((r) => r.run.status === filter) : runs;
  return (
    <section>
      <div class="heading">
        <h2>Runs</h2>
        <span class="muted">
          {runs.length} in {api.workspace}
        </span>
      </div>
      <div class="status-filter">
        <button type="button" class={filter === '' ? 'chip active' : 'chip'} onClick={() => setFilter('')}>
          all {runs.length}
        </button>
        {STATUSES.map((s) => (
          <button
            type="button"
            key={s}
            data-status={s}
            class={filter === s ? 'chip active' : 'chip'}
            onClick={() => setFilter(s)}
          >
            {s} {counts[s]}
          </button>
        ))}
      </div>
      {shown.length === 0 && <p class="muted">No runs{filter ? ` ${filter}` : ''}.</p>}
      {loaded.value.stoppedAfter !== undefined && (
        <p class="muted" data-read-bound>
          Older runs may exist: the listing stopped after reading {loaded.value.stoppedAfter} index entries.
        </p>
      )}
      <table class="list">
        <thead>
          <tr>
            <th>run</th>
            <th>workflow</th>
            <th>status</th>
            <th>steps</th>
            <th>started</th>
            <th>last change</th>
          </tr>
        </thead>
        <tbody>
          {shown.map(({ id, updated_at, run }) => {
            const steps = Object.values(run.steps ?? {});
            return (
              <tr key={id} data-run={id}>
                <td>
                  <a class="mono" href={href({ view: 'run', id })}>
                    {id}
                  </a>
                </td>
                <td class="mono">{run.workflow}</td>
                <td>
                  <Badge kind={statusKind(run.status)}>{run.status}</Badge>
                </td>
                <td class="muted">
                  {steps.filter((s) => s.status === 'succeeded').length}/{steps.length} done
                </td>
                <td class="mono">{run.started_at ? dateTime(run.started_at) : ''}</td>
                <td class="mono">{dateTime(updated_at)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

export function RunView({ api, id }: { api: Api; id: string }) {
  const loaded = useLoad(() => api.full(id), [api, id]);
  // The steps retry accepts come from the run API (they depend on the definition, not on the run's progress).
  const retrySteps = useLoad(() => api.run(id), [api, id]).value?.retry_steps ?? [];
  const { reload } = loaded;
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const controller = new AbortController();
    void api.follow(
      { schema_name: RUN_SCHEMA, wait: '20' },
      (events) => {
        if (events.some((e) => e.id === id)) reload();
      },
      controller.signal,
    );
    return () => controller.abort();
  }, [api, id]);

  const run = loaded.value?.context as unknown as RunState | undefined;
  const steps = useMemo(
    () =>
      Object.entries(run?.steps ?? {}).sort(([, a], [, b]) =>
        (a.started_at ?? '~').localeCompare(b.started_at ?? '~'),
      ),
    [run],
  );
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value || !run) return <p class="muted">Loading…</p>;

  const act = async (action: string, body: Record<string, unknown> = {}) => {
    setBusy(true);
    setError(undefined);
    try {
      await api.runAction(id, action, body);
      reload();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const start = Date.parse(run.started_at ?? loaded.value.created_at);
  const end = Math.max(
    start + 1,
    ...steps.map(([, s]) => Date.parse(s.ended_at ?? s.started_at ?? '') || start),
    run.ended_at ? Date.parse(run.ended_at) : Date.now(),
  );
  const pct = (t: number) => `${(100 * (t - start)) / (end - start)}%`;
  const terminal = TERMINAL.includes(run.status);

  return (
    <section data-run-view={id}>
      <div class="heading">
        <h2>Run</h2>
        <span class="mono muted">{id}</span>
        <Badge kind={statusKind(run.status)}>
          <span data-run-status>{run.status}</span>
        </Badge>
        <span class="muted">
          workflow <span class="mono">{run.workflow}</span>
          {run.workflow_version ? ` v${run.workflow_version}` : ''} · {duration(end - start)}
        </span>
        <a href={href({ view: 'thread', id: loaded.value.causation?.thread ?? id })}>open its thread</a>
        <a href={href({ view: 'breadcrumb', id })}>history</a>
      </div>
      <div class="controls">
        {(run.status === 'running' || run.status === 'waiting') && (
          <button type="button" disabled={busy} onClick={() => act('pause')}>
            Pause
          </button>
        )}
        {run.status === 'paused' && !run.stopped_by && (
          <button type="button" disabled={busy} onClick={() => act('resume')}>
            Resume
          </button>
        )}
        {!terminal && (
          <button type="button" class="danger" disabled={busy} onClick={() => act('cancel')}>
            Cancel
          </button>
        )}
        <RetryControl steps={retrySteps} busy={busy} onRetry={(step) => act('retry', { from_step: step })} />
      </div>
      {error && <p class="error">{error}</p>}
      <BudgetLine run={run} />
      {run.status === 'paused' && run.stopped_by && (
        <RaiseAndResume stop={run.stopped_by} busy={busy} onResume={(limits) => act('resume', { limits })} />
      )}
      {run.error && (
        <p class="error">
          run failed{run.failed_step ? ` at ${run.failed_step}` : ''}: {run.error}
        </p>
      )}
      {(run.refused ?? []).map((r) => (
        <p class="error" key={r.id}>
          refused {r.what} by {r.by}: {r.reason}
        </p>
      ))}
      <div class="split">
        <div class="panel">
          <h3>Input</h3>
          <Json value={run.input} />
        </div>
        <div class="panel">
          <h3>Output</h3>
          {run.output === undefined ? <p class="muted">not yet</p> : <Json value={run.output} />}
        </div>
      </div>
      <h3>Steps</h3>
      <div class="steps-timeline">
        {steps.map(([key, step]) => {
          const s = step.started_at ? Date.parse(step.started_at) : undefined;
          const e = step.ended_at ? Date.parse(step.ended_at) : Date.now();
          return (
            <article key={key} class={`step ${step.status}`} data-step={key} data-step-status={step.status}>
              <header>
                <span class="mono">{key}</span>
                <span class="muted">{step.kind}</span>
                <Badge kind={statusKind(step.status)}>{step.status}</Badge>
                {(step.attempts ?? 0) > 1 && <span class="muted">attempt {step.attempts}</span>}
                {s !== undefined && (
                  <span class="muted">{duration((step.ended_at ? e : Date.now()) - s)}</span>
                )}
                {step.by && <span class="muted">answered by {step.by}</span>}
                {step.definition && (
                  <a
                    class="mono"
                    data-ran={`${step.definition.id}@${step.definition.version}`}
                    href={href({ view: 'breadcrumb', id: step.definition.id })}
                    title="the definition version this step ran"
                  >
                    {step.definition.id} v{step.definition.version}
                  </a>
                )}
              </header>
              <div class="track">
                {s !== undefined && (
                  <div
                    class={`bar ${step.status === 'failed' ? 'error' : 'ok'}`}
                    style={{ left: pct(s), width: `max(0.6%, calc(${pct(e)} - ${pct(s)}))` }}
                  />
                )}
              </div>
              {step.prompt && <p class="prompt">{step.prompt}</p>}
              {step.status === 'waiting' && step.waiting_for && (
                <div class="waiting-for" data-waiting-for={key}>
                  <p class="muted">
                    waiting for a write
                    {step.waiting_for.correlation && (
                      <>
                        {' '}
                        where <span class="mono">{step.waiting_for.correlation.field}</span> ={' '}
                        <span class="mono">{JSON.stringify(step.waiting_for.correlation.value)}</span>
                      </>
                    )}{' '}
                    until <span class="mono">{step.waiting_for.until}</span>
                  </p>
                  <Json value={step.waiting_for.selector} />
                </div>
              )}
              {step.status === 'waiting' && step.kind === 'human' && (
                <HumanDecision api={api} step={key} state={step} busy={busy} onDecide={act} />
              )}
              {step.kind === 'agent' && (step.status === 'running' || step.status === 'waiting') && (
                <RunApprovals api={api} runId={run.run_id ?? id} step={key} />
              )}
              <div class="io">
                {step.input !== undefined && (
                  <details>
                    <summary>input</summary>
                    <Json value={step.input} />
                  </details>
                )}
                {step.output !== undefined && (
                  <details open={step.status === 'succeeded'}>
                    <summary>output</summary>
                    <Json value={step.output} />
                  </details>
                )}
                {step.error && <p class="error">{step.error}</p>}
                {step.comment && <p class="muted">“{step.comment}”</p>}
              </div>
            </article>
          );
        })}
      </div>
    </section>
  );
}

function figure(unit: 'tokens' | 'usd' | 'calls', n: number): string {
  return unit === 'usd' ? `$${(n / 1e9).toFixed(6)}` : `${n.toLocaleString('en-US')} ${unit}`;
}

/** What the run used against its budget (`limits.max_llm_calls`, `max_tokens`, `max_cost_usd`). */
function BudgetLine({ run }: { run: RunState }) {
  const c = run.counters;
  if (c === undefined || (c.llm_calls === 0 && !run.stopped_by)) return null;
  return (
    <p class="muted" data-run-budget>
      used {c.llm_calls} model calls · {figure('tokens', c.tokens ?? 0)} · {figure('usd', c.cost_nusd ?? 0)}
      {run.raised_limits ? ` · limits raised by ${run.raised_limits.by}` : ''}
    </p>
  );
}

/** A run a budget stopped: which, the figures, and the limit to raise before resuming. */
function RaiseAndResume({
  stop,
  busy,
  onResume,
}: {
  stop: NonNullable<RunState['stopped_by']>;
  busy: boolean;
  onResume: (limits: Record<string, number>) => void;
}) {
  const field = stop.budget.replace(/^limits\./, '');
  const current = stop.unit === 'usd' ? stop.limit / 1e9 : stop.limit;
  const [value, setValue] = useState(String(current * 2));
  return (
    <form
      class="budget-stop"
      data-budget-stop={stop.budget}
      onSubmit={(e) => {
        e.preventDefault();
        const n = Number(value);
        if (Number.isFinite(n)) onResume({ [field]: n });
      }}
    >
      <p class="error">
        stopped by {stop.budget} ({figure(stop.unit, stop.limit)}): {figure(stop.unit, stop.used)} used
        {stop.step ? `, before step ${stop.step}` : ''}. Raise the limit to resume.
      </p>
      <label>
        {field}{' '}
        <input
          name={field}
          type="number"
          min="0"
          step="any"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
      </label>
      <button type="submit" disabled={busy}>
        Raise and resume
      </button>
    </form>
  );
}

function RetryControl({
  steps,
  busy,
  onRetry,
}: {
  steps: string[];
  busy: boolean;
  onRetry: (step: string) => void;
}) {
  const [step, setStep] = useState('');
  if (steps.length === 0) return null;
  return (
    <form
      class="retry"
      onSubmit={(e) => {
        e.preventDefault();
        if (step) onRetry(step);
      }}
    >
      <select name="from_step" value={step} onChange={(e) => setStep(e.currentTarget.value)}>
        <option value="">retry from step…</option>
        {steps.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      <button type="submit" disabled={busy || !step}>
        Retry
      </button>
    </form>
  );
}

/** Approve with input (a form from the step's input_schema) or reject, with an optional comment. */
function HumanDecision({
  api,
  step,
  state,
  busy,
  onDecide,
}: {
  api: Api;
  step: string;
  state: StepState;
  busy: boolean;
  onDecide: (action: string, body: Record<string, unknown>) => Promise<void>;
}) {
  // The step's request breadcrumb (its id is the attempt id) carries the prompt and the input schema.
  const request = useLoad(
    () => (state.attempt_id ? api.contextView(state.attempt_id) : Promise.resolve(undefined)),
    [api, state.attempt_id],
  );
  const schema = (request.value?.context as { input_schema?: unknown } | undefined)?.input_schema;
  const [input, setInput] = useState<unknown>(undefined);
  const [comment, setComment] = useState('');
  return (
    <div class="decision" data-decision={step}>
      {schema !== undefined && <SchemaForm schema={schema} onChange={setInput} />}
      <label>
        comment
        <input name="comment" value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
      </label>
      <div class="controls">
        <button
          type="button"
          disabled={busy}
          data-approve
          onClick={() =>
            onDecide('approve', {
              step,
              ...(input !== undefined ? { input } : {}),
              ...(comment ? { comment } : {}),
            })
          }
        >
          Approve
        </button>
        <button
          type="button"
          class="danger"
          disabled={busy}
          data-reject
          onClick={() => onDecide('reject', { step, ...(comment ? { comment } : {}) })}
        >
          Reject
        </button>
      </div>
    </div>
  );
}
