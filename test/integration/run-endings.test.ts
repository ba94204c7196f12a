/**
 * Runs always end, through the HTTP API on the shared local stack: the shapes that once left a run `running` or
 * `requested` for good each reach a waiting or ended state whose controls work, with the reason on the run and an
 * error breadcrumb answering its request.
 */
import { describe, expect, it } from 'vitest';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';

type Json = Record<string, unknown>;
type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Json }>;

function http(workspace: string): Call {
  const { api, token } = localStack();
  return async (method, path, body) => {
    const res = await fetch(`${api}/v1/workspaces/${workspace}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  };
}

/** A workspace with an `echo` tool and the given workflows, their rules active. */
async function workspaceWith(...workflows: Json[]): Promise<{ ws: string; call: Call }> {
  const ws = uniqueWorkspace('endings');
  const call = http(ws);
  const put = async (id: string, schema_name: string, context: Json) => {
    expect((await call('PUT', `/breadcrumbs/${id}`, { schema_name, context })).status).toBe(201);
  };
  await put('tool-echo', 'tool.def.v1', { name: 'echo', implementation: 'echo' });
  for (const w of workflows) await put(`wf-${String(w.workflow_id)}`, 'workflow.def.v1', w);
  await eventually(async () => {
    const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=50');
    const items = (res.body.items as { context: { state: string } }[]) ?? [];
    return items.length === workflows.length + 1 && items.every((i) => i.context.state === 'active')
      ? true
      : undefined;
  }, 30_000);
  return { ws, call };
}

async function runOf(call: Call, runId: string, until: (run: Json) => boolean): Promise<Json> {
  return eventually(async () => {
    const res = await call('GET', `/runs/${runId}`);
    return res.status === 200 && until(res.body) ? res.body : undefined;
  }, 45_000);
}

const settled = (status: string) => (run: Json) => run.status === status;

/** The breadcrumbs answering a run's request (its result or error). */
async function answersTo(call: Call, requestId: string): Promise<Json[]> {
  return eventually(async () => {
    const res = await call('GET', `/breadcrumbs?tag=request:${requestId}&limit=5`);
    const items = res.body.items as Json[] | undefined;
    return items?.length ? items : undefined;
  }, 20_000);
}

describe('runs always end', () => {
  it('a finished run retried from before its checkpoint waits for the person again, and approving it ends it', async () => {
    const { call } = await workspaceWith({
      workflow_id: 'gated',
      steps: [
        { id: 'prepare', tool: 'echo', input: { step: 'prepare' } },
        { id: 'ok', human: { prompt: 'ship?' } },
        { id: 'ship', tool: 'echo', input: { step: 'ship' } },
      ],
    });
    const started = await call('POST', '/runs', { workflow: 'gated', input: {} });
    const runId = String(started.body.run_id);
    await runOf(call, runId, settled('waiting'));
    expect((await call('POST', `/runs/${runId}/approve`, {})).status).toBe(202);
    await runOf(call, runId, settled('succeeded'));

    expect((await call('POST', `/runs/${runId}/retry`, { from_step: 'prepare' })).status).toBe(202);
    const waiting = await runOf(
      call,
      runId,
      (r) => r.status === 'waiting' && (r.steps as Record<string, Json>).ok?.attempts === 2,
    );
    expect((waiting.steps as Record<string, Json>).ship).toMatchObject({ status: 'pending' });
    expect((await call('POST', `/runs/${runId}/approve`, { comment: 'again' })).status).toBe(202);
    const done = await runOf(call, runId, (r) => r.status === 'succeeded' && r.completions === 2);
    expect((done.steps as Record<string, Json>).ship).toMatchObject({ status: 'succeeded', attempts: 2 });
  });

  it('a workflow step naming a workflow that does not exist fails its run, saying so', async () => {
    const { ws, call } = await workspaceWith({
      workflow_id: 'parent',
      steps: [
        { id: 'first', tool: 'echo' },
        { id: 'child', workflow: 'nowhere', input: { x: 1 } },
      ],
    });
    const started = await call('POST', '/runs', { workflow: 'parent', input: {} });
    const runId = String(started.body.run_id);
    const failed = await runOf(call, runId, settled('failed'));
    expect(failed.error).toBe(`step "child" failed: no workflow.def.v1 named "nowhere" in workspace ${ws}`);
    const answers = await answersTo(call, String(started.body.request_id));
    expect(answers).toEqual([
      expect.objectContaining({
        schema_name: 'workflow.error.v1',
        context: expect.objectContaining({ status: 'failed', step: 'child' }),
      }),
    ]);
    expect((await call('POST', `/runs/${runId}/retry`, { from_step: 'child' })).status).toBe(202);
  });

  it('a map over more than a run can hold fails the run with the reason; cancel is answered, not 404', async () => {
    const { call } = await workspaceWith({
      workflow_id: 'bulk',
      steps: [
        { id: 'each', map: { items: '=input.rows', step: { id: 'one', tool: 'echo', input: '=item' } } },
      ],
    });
    // The request fits in a breadcrumb; the run, which holds the input and the map's items, does not.
    const rows = Array.from({ length: 150 }, (_, i) => ({ i, pad: 'x'.repeat(1000) }));
    const started = await call('POST', '/runs', { workflow: 'bulk', input: { rows } });
    expect(started.status).toBe(201);
    const runId = String(started.body.run_id);
    const failed = await runOf(call, runId, settled('failed'));
    expect(failed.error).toMatch(/^the run would hold \d+ KB, over the 350 KB a run can hold/);
    const answers = await answersTo(call, String(started.body.request_id));
    expect(answers).toEqual([
      expect.objectContaining({
        schema_name: 'workflow.error.v1',
        context: expect.objectContaining({ status: 'failed' }),
      }),
    ]);
    const cancel = await call('POST', `/runs/${runId}/cancel`);
    expect(cancel.status).toBe(409);
  });
});
