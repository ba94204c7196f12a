/**
 * The run routes on the in-memory store, driving runs with the real workflow executor: every bad request is a 4xx
 * problem and writes nothing; good ones write the one breadcrumb the run's executor reads.
 */
import { describe, expect, it } from 'vitest';
import { createApi } from '#shared/core/api/api.ts';
import type { HttpRequest } from '#shared/core/api/http.ts';
import { createWorkflowKind } from '#shared/core/orchestration/workflow-kind.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { silentLog } from '#shared/ports/log.ts';
import { Harness } from '../../../support/executor-harness.ts';

const timers = { set: async () => undefined, cancel: async () => undefined };

class ApiHarness extends Harness {
  readonly api = createApi({ store: this.store });

  override deps(overrides: Parameters<Harness['deps']>[0] = {}) {
    const base = super.deps(overrides);
    return {
      ...base,
      implementations: {
        ...base.implementations,
        workflow: createWorkflowKind({ store: base.store, log: silentLog, clock: this.clock, timers }),
      },
    };
  }

  async call(method: string, path: string, body?: unknown) {
    const request: HttpRequest = {
      method,
      path: `/v1/workspaces/ws${path}`,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      query: {},
      body: body === undefined ? undefined : JSON.stringify(body),
      caller: { principal: 'user:ann', workspaces: '*' },
    };
    const [p, q] = request.path.split('?');
    request.path = p ?? '';
    if (q !== undefined) request.query = Object.fromEntries(new URLSearchParams(q));
    const result = await this.api(request);
    return { status: result.statusCode, body: result.body ? JSON.parse(result.body) : undefined };
  }

  /** What the run routes could write. */
  async count(): Promise<number> {
    let n = 0;
    for (const schema_name of ['workflow.request.v1', 'human.response.v1', 'workflow.control.v1']) {
      n += (await this.store.list({ workspace: 'ws', schema_name, limit: 100 })).items.length;
    }
    return n;
  }
}

const approval = {
  workflow_id: 'ship',
  input_schema: { type: 'object', required: ['order'], properties: { order: { type: 'string' } } },
  steps: [
    {
      id: 'approve',
      human: {
        prompt: '="Ship " & input.order & "?"',
        input_schema: { type: 'object', required: ['carrier'], properties: { carrier: { type: 'string' } } },
      },
    },
    { id: 'done', wait: { seconds: 0 } },
  ],
  output: '=steps.approve',
};

async function started(h: ApiHarness): Promise<{ def: Breadcrumb; runId: string }> {
  const def = await h.put({ schema_name: 'workflow.def.v1', context: approval });
  const created = await h.call('POST', '/runs', { workflow: 'ship', input: { order: 'A-1' } });
  expect(created.status).toBe(201);
  const request = await h.store.get('ws', created.body.request_id);
  await h.process(def, request);
  return { def, runId: created.body.run_id };
}

describe('run routes', () => {
  it('starts a run, shows it requested then waiting, approves it with input, and it ends succeeded', async () => {
    const h = new ApiHarness();
    const def = await h.put({ schema_name: 'workflow.def.v1', context: approval });
    const created = await h.call('POST', '/runs', { workflow: 'ship', input: { order: 'A-1' } });
    expect(created).toEqual({
      status: 201,
      body: {
        run_id: `run-${created.body.request_id}`,
        request_id: created.body.request_id,
        workflow: 'ship',
        status: 'requested',
      },
    });
    expect((await h.call('GET', `/runs/${created.body.run_id}`)).body).toMatchObject({ status: 'requested' });
    await h.process(def, await h.store.get('ws', created.body.request_id));
    expect((await h.call('GET', `/runs/${created.body.run_id}`)).body).toMatchObject({
      status: 'waiting',
      steps: { approve: { status: 'waiting', prompt: 'Ship A-1?' } },
    });

    const approved = await h.call('POST', `/runs/${created.body.run_id}/approve`, {
      input: { carrier: 'ups' },
      comment: 'ok',
    });
    expect(approved).toMatchObject({ status: 202, body: { step: 'approve', decision: 'approve' } });
    const response = await h.store.get('ws', approved.body.response_id);
    expect(response).toMatchObject({
      schema_name: 'human.response.v1',
      created_by: 'user:ann',
      tags: expect.arrayContaining([`run:${created.body.run_id}`, 'step:approve', 'reply-to:workflow:ship']),
    });
    await h.process(def, response);
    expect((await h.call('GET', `/runs/${created.body.run_id}`)).body).toMatchObject({
      status: 'succeeded',
      output: { carrier: 'ups' },
      steps: { approve: { by: 'user:ann', comment: 'ok' } },
    });
    const listed = await h.call('GET', '/runs?workflow=ship&status=succeeded');
    expect(listed.body.items.map((r: { run_id: string }) => r.run_id)).toEqual([created.body.run_id]);
    expect((await h.call('GET', '/runs?status=waiting')).body.items).toEqual([]);
  });

  it('lists the steps retry accepts: the top-level ones, not branches or map items', async () => {
    const h = new ApiHarness();
    const def = await h.put({
      schema_name: 'workflow.def.v1',
      context: {
        ...approval,
        steps: [
          ...approval.steps,
          {
            id: 'fan',
            parallel: [
              { id: 'left', wait: { seconds: 0 } },
              { id: 'right', wait: { seconds: 0 } },
            ],
          },
        ],
      },
    });
    const created = await h.call('POST', '/runs', { workflow: 'ship', input: { order: 'A-1' } });
    await h.process(def, await h.store.get('ws', created.body.request_id));
    const run = (await h.call('GET', `/runs/${created.body.run_id}`)).body;
    expect(run.retry_steps).toEqual(['approve', 'done', 'fan']);
    expect((await h.call('POST', `/runs/${created.body.run_id}/retry`, { from_step: 'left' })).status).toBe(
      422,
    );
  });

  it('refuses bad requests with a 4xx and writes nothing', async () => {
    const h = new ApiHarness();
    const { runId } = await started(h);
    const before = await h.count();
    const expectations: Array<[string, string, unknown, number, string?]> = [
      ['POST', '/runs', { workflow: 'nope', input: {} }, 404],
      ['POST', '/runs', { workflow: 'ship', input: { order: 7 } }, 422, 'input.order: must be string'],
      ['POST', '/runs', { workflow: 'ship', extra: 1 }, 422],
      ['GET', '/runs/run-nope', undefined, 404],
      ['GET', '/runs?status=sleeping', undefined, 400],
      ['POST', '/runs/run-nope/approve', {}, 404],
      ['POST', `/runs/${runId}/approve`, { input: { carrier: 3 } }, 422, 'input.carrier: must be string'],
      ['POST', `/runs/${runId}/approve`, { step: 'done', input: {} }, 422],
      ['POST', `/runs/${runId}/reject`, { input: {} }, 400],
      ['POST', `/runs/${runId}/resume`, undefined, 409],
      ['POST', `/runs/${runId}/retry`, { from_step: 'nope' }, 422],
      ['POST', `/runs/${runId}/retry`, {}, 422],
    ];
    for (const [method, path, body, status, detail] of expectations) {
      const result = await h.call(method, path, body);
      expect({ path, status: result.status }).toEqual({ path, status });
      if (detail !== undefined) expect(JSON.stringify(result.body)).toContain(detail);
    }
    expect(await h.count()).toBe(before);
  });

  it('approving a run that is not waiting is a conflict', async () => {
    const h = new ApiHarness();
    const { def, runId } = await started(h);
    const paused = await h.call('POST', `/runs/${runId}/pause`);
    expect(paused.status).toBe(202);
    await h.process(def, await h.store.get('ws', paused.body.control_id));
    expect((await h.call('POST', `/runs/${runId}/approve`, { input: { carrier: 'x' } })).status).toBe(409);
    expect((await h.call('POST', `/runs/${runId}/pause`)).status).toBe(409);
    const cancelled = await h.call('POST', `/runs/${runId}/cancel`);
    await h.process(def, await h.store.get('ws', cancelled.body.control_id));
    expect((await h.call('GET', `/runs/${runId}`)).body.status).toBe('cancelled');
    expect((await h.call('POST', `/runs/${runId}/cancel`)).status).toBe(409);
  });
});
