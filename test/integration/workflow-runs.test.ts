/**
 * Workflow runs on the shared local stack, through the HTTP API and the `crumbs runs` CLI, every step a real hop:
 * requests routed by compiled rules to the tool executor, answers routed back by `reply-to:workflow:<id>`, timers
 * through the local EventBridge Scheduler and the timer function, schedules through the rule manager.
 */
import { describe, expect, it } from 'vitest';
import { main } from '#cli/main.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';

type Json = Record<string, unknown>;

async function crumbs(
  workspace: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const { api, token } = localStack();
  let out = '';
  let err = '';
  const code = await main([...args, '--endpoint', api, '--token', token, '--workspace', workspace], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    env: {},
  });
  return { code, out, err };
}

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

/** A workspace with an `echo` tool (and any `others`) and the given workflows, their rules active. */
async function workspaceWith(...workflows: Json[]): Promise<{ ws: string; call: ReturnType<typeof http> }> {
  return workspaceWithAlso([], ...workflows);
}

async function workspaceWithAlso(
  others: Array<[id: string, schema: string, context: Json]>,
  ...workflows: Json[]
): Promise<{ ws: string; call: ReturnType<typeof http> }> {
  const ws = uniqueWorkspace('runs');
  const call = http(ws);
  const put = async (id: string, schema_name: string, context: Json) => {
    const res = await call('PUT', `/breadcrumbs/${id}`, { schema_name, context });
    expect(res.status).toBe(201);
  };
  await put('tool-echo', 'tool.def.v1', { name: 'echo', implementation: 'echo' });
  for (const [id, schema, context] of others) await put(id, schema, context);
  for (const w of workflows) await put(`wf-${String(w.workflow_id)}`, 'workflow.def.v1', w);
  // Active once the rule manager has compiled every rule.
  await eventually(async () => {
    const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=50');
    const items = (res.body.items as { context: { state: string } }[]) ?? [];
    return items.length === workflows.length + others.length + 1 &&
      items.every((i) => i.context.state === 'active')
      ? true
      : undefined;
  }, 30_000);
  return { ws, call };
}

async function runOf(
  call: ReturnType<typeof http>,
  runId: string,
  until: (run: Json) => boolean,
): Promise<Json> {
  return eventually(async () => {
    const res = await call('GET', `/runs/${runId}`);
    return res.status === 200 && until(res.body) ? res.body : undefined;
  }, 45_000);
}

const settled = (status: string) => (run: Json) => run.status === status;

const order = {
  workflow_id: 'order',
  input_schema: { type: 'object', required: ['order'], properties: { order: { type: 'string' } } },
  steps: [
    { id: 'lookup', tool: 'echo', input: { order: '=input.order' } },
    {
      id: 'checks',
      parallel: [
        { id: 'stock', tool: 'echo', input: { check: 'stock', order: '=steps.lookup.order' } },
        { id: 'credit', tool: 'echo', input: { check: 'credit' } },
      ],
    },
    {
      id: 'lines',
      map: {
        items: '=[1..20]',
        max_concurrency: 10,
        step: { id: 'line', tool: 'echo', input: { n: '=item' } },
      },
    },
    {
      id: 'approve',
      human: {
        prompt: '="Ship " & input.order & "?"',
        input_schema: { type: 'object', required: ['carrier'], properties: { carrier: { type: 'string' } } },
      },
    },
    { id: 'ship', tool: 'echo', input: { carrier: '=steps.approve.carrier', lines: '=$count(steps.lines)' } },
  ],
  output: { shipped: '=steps.ship', stock: '=steps.checks.stock.check' },
};

describe('workflow runs on the local stack', () => {
  it('runs tool → parallel → map of 20 → human → final step to waiting; approved with input, it succeeds', async () => {
    const { ws, call } = await workspaceWith(order);
    const started = await crumbs(
      ws,
      'runs',
      'start',
      'order',
      '--input',
      '{"order":"A-1"}',
      '--wait',
      '--json',
    );
    expect(started.err).toBe('');
    const waiting = JSON.parse(started.out) as Json & { steps: Record<string, Json> };
    expect(waiting.status).toBe('waiting');
    expect(waiting.steps.approve).toMatchObject({ status: 'waiting', prompt: 'Ship A-1?' });
    expect(waiting.steps.checks).toMatchObject({
      status: 'succeeded',
      output: { stock: { check: 'stock', order: 'A-1' }, credit: { check: 'credit' } },
    });
    expect(waiting.steps.lines?.output).toEqual(Array.from({ length: 20 }, (_, i) => ({ n: i + 1 })));

    const bad = await crumbs(ws, 'runs', 'approve', String(waiting.run_id), '--input', '{"carrier":1}');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('input.carrier: must be string');

    const approved = await crumbs(
      ws,
      'runs',
      'approve',
      String(waiting.run_id),
      '--input',
      '{"carrier":"ups"}',
      '--comment',
      'go',
      '--wait',
      '--json',
    );
    const done = JSON.parse(approved.out) as Json & { steps: Record<string, Json> };
    expect(done.status).toBe('succeeded');
    expect(done.output).toEqual({ shipped: { carrier: 'ups', lines: 20 }, stock: 'stock' });
    for (const key of ['lookup', 'checks', 'stock', 'credit', 'lines', 'approve', 'ship']) {
      expect(done.steps[key]).toMatchObject({ status: 'succeeded', output: expect.anything() });
    }
    expect(done.steps.approve).toMatchObject({ by: 'user:local', comment: 'go', output: { carrier: 'ups' } });
    // The run is written first and its result right after (effects follow the run's write: orchestration/README.md),
    // so the result may land a moment after the run reads `succeeded`.
    const results = await eventually(async () => {
      const res = await call('GET', `/breadcrumbs?tag=request:${String(done.request_id)}&limit=5`);
      return (res.body.items as unknown[] | undefined)?.length ? res : undefined;
    }, 20_000);
    expect(results.body.items).toEqual([
      expect.objectContaining({
        schema_name: 'workflow.result.v1',
        context: expect.objectContaining({ status: 'succeeded', run_id: done.run_id }),
      }),
    ]);
  });

  it('ends failed when the human step is rejected', async () => {
    const { call } = await workspaceWith(order);
    const started = await call('POST', '/runs', { workflow: 'order', input: { order: 'B-2' } });
    const runId = String(started.body.run_id);
    await runOf(call, runId, settled('waiting'));
    expect((await call('POST', `/runs/${runId}/reject`, { comment: 'no stock' })).status).toBe(202);
    const run = await runOf(call, runId, settled('failed'));
    expect(run.error).toMatch(/^step "approve" failed: rejected by user:local: no stock$/);
  });

  it('a wait paused past its end stays paused, and finishes after resume', async () => {
    const { ws, call } = await workspaceWith({
      workflow_id: 'nap',
      steps: [
        { id: 'nap', wait: { seconds: 1 } },
        { id: 'after', tool: 'echo', input: { woke: true } },
      ],
      output: '=steps.after',
    });
    const started = await call('POST', '/runs', { workflow: 'nap', input: {} });
    const runId = String(started.body.run_id);
    await runOf(call, runId, (r) => r.status === 'running');
    const paused = await crumbs(ws, 'runs', 'pause', runId, '--wait', '--json');
    expect(JSON.parse(paused.out)).toMatchObject({ status: 'paused' });
    // The wait's timer fires (Scheduler → timers queue → timer function → the run) while it is paused.
    const napped = await runOf(
      call,
      runId,
      (r) => (r.steps as Record<string, Json> | undefined)?.nap?.status === 'succeeded',
    );
    expect(napped.status).toBe('paused');
    expect((napped.steps as Json).after).toBeUndefined();
    const resumed = await crumbs(ws, 'runs', 'resume', runId, '--wait', '--json');
    expect(JSON.parse(resumed.out)).toMatchObject({ status: 'succeeded', output: { woke: true } });
  });

  it('cancel ends a run, answered with workflow.error.v1', async () => {
    const { ws, call } = await workspaceWith(order);
    const started = await call('POST', '/runs', { workflow: 'order', input: { order: 'C-3' } });
    const runId = String(started.body.run_id);
    await runOf(call, runId, settled('waiting'));
    const cancelled = await crumbs(ws, 'runs', 'cancel', runId, '--wait', '--json');
    expect(JSON.parse(cancelled.out)).toMatchObject({
      status: 'cancelled',
      error: 'cancelled by user:local',
    });
    const errors = await eventually(async () => {
      const res = await call('GET', `/breadcrumbs?tag=request:${String(started.body.request_id)}&limit=5`);
      return (res.body.items as unknown[] | undefined)?.length ? res : undefined;
    }, 20_000);
    expect(errors.body.items).toEqual([
      expect.objectContaining({
        schema_name: 'workflow.error.v1',
        context: expect.objectContaining({ status: 'cancelled' }),
      }),
    ]);
  });

  it('retry from a step reruns exactly that step and the ones after it', async () => {
    const { ws, call } = await workspaceWith({
      workflow_id: 'abc',
      steps: [
        { id: 'a', tool: 'echo', input: { step: 'a' } },
        { id: 'b', tool: 'echo', input: { step: 'b' } },
        { id: 'c', tool: 'echo', input: { step: 'c' } },
      ],
    });
    const started = await call('POST', '/runs', { workflow: 'abc', input: {} });
    const runId = String(started.body.run_id);
    const first = await runOf(call, runId, settled('succeeded'));
    const retried = await crumbs(ws, 'runs', 'retry', runId, '--from', 'b', '--wait', '--json');
    const run = JSON.parse(retried.out) as { status: string; steps: Record<string, Json> };
    expect(run.status).toBe('succeeded');
    expect(run.steps.a).toEqual((first.steps as Record<string, Json>).a);
    expect(run.steps.b).toMatchObject({ attempts: 2, status: 'succeeded' });
    expect(run.steps.c).toMatchObject({ attempts: 2, status: 'succeeded' });
    const requests = await call('GET', `/breadcrumbs?schema_name=tool.request.v1&tag=run:${runId}&limit=20`);
    expect((requests.body.items as unknown[]).length).toBe(5);
  });

  it('a sub-workflow and an agent step answer into the parent run', async () => {
    const { call } = await workspaceWith(
      {
        workflow_id: 'child',
        steps: [{ id: 'echo', tool: 'echo', input: { from: 'child', n: '=input.n' } }],
      },
      {
        workflow_id: 'parent',
        steps: [
          { id: 'sub', workflow: 'child', input: { n: 7 } },
          {
            id: 'ask',
            agent: 'ghost-agent',
            message: '="sub said " & $string(steps.sub.n)',
            mode: 'converse',
          },
        ],
        output: { sub: '=steps.sub', agent: '=steps.ask' },
      },
    );
    const started = await call('POST', '/runs', { workflow: 'parent', input: {} });
    const runId = String(started.body.run_id);
    const asking = await runOf(
      call,
      runId,
      (r) => (r.steps as Record<string, Json> | undefined)?.ask?.status === 'running',
    );
    expect((asking.steps as Record<string, Json>).sub).toMatchObject({
      status: 'succeeded',
      output: { from: 'child', n: 7 },
    });
    // The agent's request, as an agent executor reads it; the answer is written as an agent answers
    // (agent.response.v1 tagged request:<id> plus the request's correlation tags).
    // The run records the step as running, then writes its request (effects follow the run's write).
    const request = await eventually(async () => {
      const res = await call('GET', `/breadcrumbs?schema_name=agent.request.v1&tag=run:${runId}&limit=5`);
      return (res.body.items as { id: string; tags: string[]; context: Json }[] | undefined)?.[0];
    });
    expect(request?.context).toMatchObject({
      agent: 'ghost-agent',
      message: 'sub said 7',
      mode: 'converse',
      depth: 1,
    });
    const correlation = (request?.tags ?? []).filter((t) => /^(run|step|reply-to):/.test(t));
    await call('POST', '/breadcrumbs', {
      schema_name: 'agent.response.v1',
      tags: [`request:${String(request?.context.request_id)}`, ...correlation],
      context: {
        agent_id: 'ghost-agent',
        request_id: request?.context.request_id,
        status: 'success',
        text: 'hello',
      },
    });
    const done = await runOf(call, runId, settled('succeeded'));
    expect(done.output).toEqual({ sub: { from: 'child', n: 7 }, agent: 'hello' });
  });

  it('an agent step is answered by a real agent (agent.request.v1 → agent.response.v1)', async () => {
    const { call } = await workspaceWithAlso(
      [
        [
          'agent-helper',
          'agent.def.v1',
          { agent_id: 'helper', model: 'offline/crumbs', system_prompt: 'Help.' },
        ],
      ],
      {
        workflow_id: 'ask',
        steps: [{ id: 'ask', agent: 'helper', message: '="Say hello to " & input.name' }],
        output: '=steps.ask',
      },
    );
    const started = await call('POST', '/runs', { workflow: 'ask', input: { name: 'Ann' } });
    const run = await runOf(call, String(started.body.run_id), settled('succeeded'));
    expect((run.steps as Record<string, Json>).ask).toMatchObject({
      status: 'succeeded',
      by: 'agent:helper',
    });
    expect(run.output).toBeTruthy();
  });

  it('fails a run that exceeds max_steps, naming the limit', async () => {
    const { call } = await workspaceWith({
      workflow_id: 'bounded',
      limits: { max_steps: 2 },
      steps: [
        { id: 'a', tool: 'echo' },
        { id: 'b', tool: 'echo' },
        { id: 'c', tool: 'echo' },
      ],
    });
    const started = await call('POST', '/runs', { workflow: 'bounded', input: {} });
    const run = await runOf(call, String(started.body.run_id), settled('failed'));
    expect(run.error).toMatch(/^limit max_steps \(2\) exceeded: step "c"/);
  });

  it('a schedule.def.v1 writes its breadcrumb when it fires, and can start runs', {
    timeout: 120_000,
  }, async () => {
    const { call } = await workspaceWith({
      workflow_id: 'tick',
      steps: [{ id: 'a', tool: 'echo', input: { tick: true } }],
    });
    const put = await call('PUT', '/breadcrumbs/every-minute', {
      schema_name: 'schedule.def.v1',
      context: {
        schedule_id: 'every-minute',
        cron: '* * * * ? *',
        breadcrumb: {
          schema_name: 'workflow.request.v1',
          tags: ['scheduled'],
          context: { workflow: 'tick', input: {} },
        },
      },
    });
    expect(put.status).toBe(201);
    const fired = await eventually(async () => {
      const res = await call(
        'GET',
        '/breadcrumbs?schema_name=workflow.request.v1&tag=schedule:every-minute&limit=5',
      );
      const [first] = (res.body.items as { id: string; created_by: string }[]) ?? [];
      return first;
    }, 75_000);
    expect(fired.id).toMatch(/^every-minute\.\d{8}T\d{6}Z$/);
    const run = await runOf(call, `run-${fired.id}`, settled('succeeded'));
    expect(run.output).toEqual({ tick: true });
    await call('DELETE', '/breadcrumbs/every-minute');
  });
});
