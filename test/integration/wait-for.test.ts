/**
 * wait_for steps on the shared local stack, through the HTTP API and the `crumbs` CLI: a matching write resumes
 * the waiting run (a non-matching one and one in another workspace do not), correlation picks the right of two
 * runs, the timeout fails or gives `on_timeout`, two matching writes at once resume the step once, a write right
 * after the run shows the step waiting is matched, and deleting the workspace removes the wait index entries.
 */
import { describe, expect, it } from 'vitest';
import { crumbs, eventually, localStack, uniqueWorkspace, workspaceItems } from '../support/local.ts';

type Json = Record<string, unknown>;

function http(workspace: string) {
  const { api, token } = localStack();
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
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

const shipping = {
  workflow_id: 'shipping',
  steps: [
    {
      id: 'shipped',
      wait_for: {
        selector: { schema_name: 'order.shipped.v1' },
        correlate: { field: '$.order_id', equals: 'input.order_id' },
        timeout_seconds: 3600,
      },
    },
  ],
  output: '=steps.shipped.context.carrier',
};

const lenient = {
  workflow_id: 'lenient',
  steps: [
    {
      id: 'ack',
      wait_for: {
        selector: { schema_name: 'never.sent.v1' },
        timeout_seconds: 2,
        on_timeout: { output: 'no ack' },
      },
    },
  ],
};

const strict = {
  workflow_id: 'strict',
  steps: [{ id: 'ack', wait_for: { selector: { schema_name: 'never.sent.v1' }, timeout_seconds: 2 } }],
};

async function workspaceWith(...workflows: Json[]) {
  const ws = uniqueWorkspace('waitfor');
  const call = http(ws);
  for (const w of workflows) {
    const res = await call('PUT', `/breadcrumbs/wf-${String(w.workflow_id)}`, {
      schema_name: 'workflow.def.v1',
      context: w,
    });
    expect(res.status).toBe(201);
  }
  await eventually(async () => {
    const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=50');
    const items = (res.body.items as { context: { state: string } }[]) ?? [];
    return items.length === workflows.length && items.every((i) => i.context.state === 'active')
      ? true
      : undefined;
  }, 30_000);
  return { ws, call };
}

async function start(call: ReturnType<typeof http>, workflow: string, input: Json): Promise<string> {
  const res = await call('POST', '/runs', { workflow, input });
  expect(res.status).toBeLessThan(300);
  return String(res.body.run_id);
}

async function runOf(call: ReturnType<typeof http>, runId: string, until: (run: Json) => boolean) {
  return eventually(async () => {
    const res = await call('GET', `/runs/${runId}`);
    return res.status === 200 && until(res.body) ? res.body : undefined;
  }, 45_000);
}

const stepWaiting = (step: string) => (run: Json) =>
  (run.steps as Record<string, { status: string }> | undefined)?.[step]?.status === 'waiting';

async function ship(call: ReturnType<typeof http>, orderId: unknown, carrier: string) {
  const res = await call('POST', '/breadcrumbs', {
    schema_name: 'order.shipped.v1',
    context: { order_id: orderId, carrier },
  });
  expect(res.status).toBe(201);
  return String(res.body.id);
}

describe('wait_for step (local stack)', () => {
  it('is resumed by the matching write, not by another order, another workspace or an earlier write', async () => {
    const { ws, call } = await workspaceWith(shipping);
    const other = await workspaceWith(shipping);
    // Written before the wait began: it does not count.
    await ship(call, 'A-1', 'too-early');
    const runId = await start(call, 'shipping', { order_id: 'A-1' });
    const waiting = await runOf(call, runId, stepWaiting('shipped'));
    expect(waiting.status).toBe('running');
    expect((waiting.steps as Json).shipped).toMatchObject({
      waiting_for: {
        selector: { schema_name: 'order.shipped.v1' },
        correlation: { field: '$.order_id', value: 'A-1' },
      },
    });
    const shown = await crumbs(ws, 'runs', 'get', runId);
    expect(shown.out).toMatch(
      /waiting\s+shipped for \{"schema_name":"order.shipped.v1".*\} where \$\.order_id = "A-1" until /,
    );

    await ship(call, 'A-2', 'wrong-order');
    await ship(other.call, 'A-1', 'other-workspace');
    const match = await ship(call, 'A-1', 'ups');
    const done = await runOf(call, runId, (r) => r.status === 'succeeded');
    expect(done.output).toBe('ups');
    expect((done.steps as Json).shipped).toMatchObject({
      output: { id: match, context: { carrier: 'ups' } },
    });
    // The index entry went with the wait.
    expect((await workspaceItems(ws)).filter((i) => i.kind === 'wait-index')).toEqual([]);
  });

  it('picks the run whose correlation value the write carries, and resumes once under two writes at once', async () => {
    const { call } = await workspaceWith(shipping);
    const a = await start(call, 'shipping', { order_id: 'B-1' });
    const b = await start(call, 'shipping', { order_id: 'B-2' });
    await runOf(call, a, stepWaiting('shipped'));
    await runOf(call, b, stepWaiting('shipped'));
    await Promise.all([ship(call, 'B-2', 'first'), ship(call, 'B-2', 'second')]);
    const done = await runOf(call, b, (r) => r.status === 'succeeded');
    expect(['first', 'second']).toContain(done.output);
    expect((await call('GET', `/runs/${a}`)).body.status).toBe('running');
    // Resumed once: one result for the run, and its step answered by one write.
    const results = await eventually(async () => {
      const res = await call('GET', '/breadcrumbs?schema_name=workflow.result.v1&limit=50');
      const items = (res.body.items as { context: { run_id: string } }[]).filter(
        (i) => i.context.run_id === b,
      );
      return items.length > 0 ? items : undefined;
    });
    await new Promise((r) => setTimeout(r, 1500));
    const again = await call('GET', `/runs/${b}`);
    expect(again.body.output).toBe(done.output);
    expect(again.body.version).toBe(done.version);
    expect(results).toHaveLength(1);
  });

  it('matches a write made as soon as the run shows the step waiting', async () => {
    const { call } = await workspaceWith(shipping);
    for (let i = 0; i < 3; i++) {
      const runId = await start(call, 'shipping', { order_id: `R-${i}` });
      await runOf(call, runId, stepWaiting('shipped'));
      await ship(call, `R-${i}`, `race-${i}`);
      expect((await runOf(call, runId, (r) => r.status === 'succeeded')).output).toBe(`race-${i}`);
    }
  });

  it('times out: fails saying what it waited for, or succeeds with on_timeout', async () => {
    const { call } = await workspaceWith(strict, lenient);
    const failing = await start(call, 'strict', {});
    const passing = await start(call, 'lenient', {});
    const failed = await runOf(call, failing, (r) => r.status === 'failed');
    expect(String(failed.error)).toContain(
      'no breadcrumb matching the wait_for selector was written within 2 s',
    );
    const succeeded = await runOf(call, passing, (r) => r.status === 'succeeded');
    expect(succeeded.output).toBe('no ack');
  });

  it('bounds a wait_for selector like a subscription, and an index entry cannot be written as a breadcrumb', async () => {
    const ws = uniqueWorkspace('waitbad');
    const call = http(ws);
    const huge = {
      workflow_id: 'huge',
      steps: [
        {
          id: 'w',
          wait_for: {
            selector: {
              schema_name: 'x.y.v1',
              context_match: [
                { path: '$.k', op: 'in', value: Array.from({ length: 400 }, (_, i) => `value-${i}`) },
              ],
            },
            timeout_seconds: 60,
          },
        },
      ],
    };
    expect(
      (await call('PUT', '/breadcrumbs/wf-huge', { schema_name: 'workflow.def.v1', context: huge })).status,
    ).toBe(201);
    const status = await eventually(async () => {
      const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=5');
      return (res.body.items as { context: Json }[] | undefined)?.[0]?.context;
    }, 30_000);
    expect(status.state).toBe('invalid');
    expect(JSON.stringify(status.errors)).toContain('steps[0].wait_for.selector');
    const forged = await call('PUT', `/breadcrumbs/${encodeURIComponent('#wait#0000')}`, {
      schema_name: 'note.v1',
      context: { waiters: {} },
    });
    expect(forged.status).toBe(422);
  });

  it('resumes more runs than one invocation takes (50) through the continuation timer, none lost', async () => {
    const broadcast = {
      workflow_id: 'broadcast',
      steps: [{ id: 'go', wait_for: { selector: { schema_name: 'go.signal.v1' }, timeout_seconds: 3600 } }],
    };
    const { call } = await workspaceWith(broadcast);
    const runs = await Promise.all(Array.from({ length: 55 }, () => start(call, 'broadcast', {})));
    for (const runId of runs) await runOf(call, runId, stepWaiting('go'));
    expect(
      (await call('POST', '/breadcrumbs', { schema_name: 'go.signal.v1', context: { go: 1 } })).status,
    ).toBe(201);
    for (const runId of runs) await runOf(call, runId, (r) => r.status === 'succeeded');
  });

  it('deleting the workspace removes its wait index entries', async () => {
    const { ws, call } = await workspaceWith(shipping);
    const runId = await start(call, 'shipping', { order_id: 'D-1' });
    await runOf(call, runId, stepWaiting('shipped'));
    expect((await workspaceItems(ws)).filter((i) => i.kind === 'wait-index')).toHaveLength(1);
    const res = await crumbs(ws, 'workspace', 'delete', '--yes', '--force');
    expect(res.code).toBe(0);
    expect(await workspaceItems(ws)).toEqual([]);
  });
});
