/**
 * Approvals: the tool calls agents wait to have approved (`GET …/approvals`), each with the agent's reason, the
 * arguments (editable: approve runs the tool with the edited ones, which the API checks against the tool's input
 * schema) and a reason to give. The same form shows in a run's agent step that waits on one (`RunApprovals`). The
 * navigation shows how many are pending (`usePendingApprovals`).
 */

import { useEffect, useState } from 'preact/hooks';
import type { ApprovalItem } from '#shared/client/api-types.ts';
import type { Api } from '../api.ts';
import { Badge, ErrorLine, Json, useLoad } from '../components.tsx';
import { href } from '../session.ts';

/** How often the navigation's count is read again (a person answers in seconds, agents ask at any time). */
const COUNT_REFRESH_MS = 5_000;

export function ApprovalsView({ api, onChange }: { api: Api; onChange?: () => void }) {
  const loaded = useLoad(() => api.approvals(), [api]);
  if (loaded.error) return <ErrorLine error={loaded.error} />;
  if (!loaded.value) return <p class="muted">Loading…</p>;
  const { items } = loaded.value;
  const done = () => {
    loaded.reload();
    onChange?.();
  };
  return (
    <section data-approvals-view>
      <div class="heading">
        <h2>Pending approvals</h2>
        <span class="muted">
          {items.length} waiting in {api.workspace}
        </span>
        <button type="button" class="link" onClick={loaded.reload}>
          refresh
        </button>
      </div>
      {items.length === 0 && <p class="muted">No tool call waits for approval.</p>}
      {items.map((a) => (
        <ApprovalCard key={a.approval_id} api={api} approval={a} onDone={done} />
      ))}
    </section>
  );
}

/** The pending approvals of one run's agent step, each with its form. */
export function RunApprovals({ api, runId, step }: { api: Api; runId: string; step: string }) {
  const loaded = useLoad(() => api.approvals({ run: runId }), [api, runId]);
  const items = (loaded.value?.items ?? []).filter((a) => a.step === undefined || a.step === step);
  if (items.length === 0) return null;
  return (
    <div class="run-approvals">
      {items.map((a) => (
        <ApprovalCard key={a.approval_id} api={api} approval={a} onDone={loaded.reload} />
      ))}
    </div>
  );
}

function ApprovalCard({ api, approval, onDone }: { api: Api; approval: ApprovalItem; onDone: () => void }) {
  const original = JSON.stringify(approval.arguments ?? {}, null, 2);
  const [args, setArgs] = useState(original);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  // The agent decides the answer a moment later: until the listing no longer shows it, say what was sent.
  const [answered, setAnswered] = useState<string>();
  if (answered !== undefined) {
    return (
      <p class="muted" data-approval-answered={approval.approval_id}>
        {answered}: {approval.agent_id}'s call of <span class="mono">{approval.tool}</span> —{' '}
        <a href={href({ view: 'thread', id: approval.thread })}>follow the thread</a>
      </p>
    );
  }
  const decide = async (decision: 'approve' | 'reject') => {
    setError(undefined);
    let edited: Record<string, unknown> | undefined;
    if (decision === 'approve' && args.trim() !== original.trim()) {
      try {
        const parsed: unknown = JSON.parse(args);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          setError('the arguments must be a JSON object');
          return;
        }
        edited = parsed as Record<string, unknown>;
      } catch (e) {
        setError(`the arguments are not valid JSON: ${(e as Error).message}`);
        return;
      }
    }
    if (decision === 'reject' && reason.trim() === '') {
      setError('say why you reject it: the agent reads the reason');
      return;
    }
    setBusy(true);
    try {
      await api.decideApproval(approval.approval_id, {
        decision,
        ...(edited !== undefined ? { arguments: edited } : {}),
        ...(reason.trim() !== '' ? { reason: reason.trim() } : {}),
      });
      setAnswered(
        decision === 'approve' ? (edited ? 'approved with edited arguments' : 'approved') : 'rejected',
      );
      onDone();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <article class="approval decision" data-approval={approval.approval_id}>
      <header>
        <strong class="mono">{approval.agent_id}</strong> wants to call{' '}
        <strong class="mono">{approval.tool}</strong> <Badge kind="warn">{approval.status}</Badge>
        {approval.expires_at && <span class="muted"> expires {approval.expires_at}</span>}
        {approval.run_id && <a href={href({ view: 'run', id: approval.run_id })}> run {approval.run_id}</a>}{' '}
        <a href={href({ view: 'thread', id: approval.thread })}>thread</a>
      </header>
      {approval.reason && (
        <p class="prompt" data-approval-reason>
          {approval.reason}
        </p>
      )}
      {approval.input_schema && (
        <details>
          <summary>input schema</summary>
          <Json value={approval.input_schema} />
        </details>
      )}
      <label>
        arguments
        <textarea
          name="arguments"
          rows={Math.min(12, original.split('\n').length + 1)}
          value={args}
          onInput={(e) => setArgs(e.currentTarget.value)}
        />
      </label>
      <label>
        reason
        <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <div class="controls">
        <button type="button" disabled={busy} data-approve onClick={() => decide('approve')}>
          Approve
        </button>
        <button type="button" class="danger" disabled={busy} data-reject onClick={() => decide('reject')}>
          Reject
        </button>
      </div>
      <ErrorLine error={error} />
    </article>
  );
}

/** What an approval's change is: its request (`human.request.v1`) or a person's answer (`human.response.v1`). */
const APPROVAL_SCHEMAS = 'human.request.v1,human.response.v1';

/**
 * The number of pending approvals: read once, again when `tick` changes, and whenever an approval is asked or
 * answered (pushed over the change channel; every few seconds where the stack pushes no changes) or the next one
 * expires.
 */
export function usePendingApprovals(api: Api | undefined, tick: unknown): number | undefined {
  const [count, setCount] = useState<number>();
  const [changed, setChanged] = useState(0);
  useEffect(() => {
    if (!api) return;
    let live = true;
    let timer: ReturnType<typeof setInterval> | undefined;
    const controller = new AbortController();
    const bump = () => live && setChanged((n) => n + 1);
    void api.changeFeed().then(
      (feed) => {
        if (!live) return;
        if (feed === undefined) timer = setInterval(bump, COUNT_REFRESH_MS);
        else void api.follow({ schema_name: APPROVAL_SCHEMAS }, bump, controller.signal);
      },
      () => {
        if (live) timer = setInterval(bump, COUNT_REFRESH_MS);
      },
    );
    return () => {
      live = false;
      controller.abort();
      clearInterval(timer);
    };
  }, [api]);
  useEffect(() => {
    if (!api) return;
    let live = true;
    let expiry: ReturnType<typeof setTimeout> | undefined;
    api.approvals().then(
      (list) => {
        if (!live) return;
        setCount(list.pending);
        // A pending approval stops counting when it expires, with no write to say so: read again then.
        const now = Date.now();
        const next = Math.min(
          ...list.items
            .filter((a) => a.status === 'pending' && a.expires_at !== undefined)
            .map((a) => Date.parse(a.expires_at as string))
            .filter((at) => at > now),
        );
        if (Number.isFinite(next))
          expiry = setTimeout(() => live && setChanged((n) => n + 1), next - now + 500);
      },
      () => live && setCount(undefined),
    );
    return () => {
      live = false;
      clearTimeout(expiry);
    };
  }, [api, tick, changed]);
  return count;
}
