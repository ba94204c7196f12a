/**
 * Versions in use, on the shared local stack through the API and the CLI: a workflow step pinned to `calc@1` runs
 * version 1 of the tool while an unpinned step runs the latest, and the run records which version each step ran;
 * a pin to a version the workspace does not have (or `calc@x`) makes the workflow `invalid` at the step's field;
 * a step whose pinned tool was deleted fails its run with the reason; a pin cannot reach another workspace's
 * tool; `crumbs rollback` writes an old version again (history intact, the rule recompiled) and refuses a missing
 * version, a missing definition, and an edit that lands while it runs (412, nothing lost).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { crumbs, eventually, localStack, uniqueWorkspace } from '../support/local.ts';

type Json = Record<string, unknown>;

function http(workspace: string) {
  const { api, token } = localStack();
  return async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Json }> => {
    const res = await fetch(`${api}/v1/workspaces/${workspace}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  };
}
type Call = ReturnType<typeof http>;

interface Summary {
  id: string;
  state: string;
  version: number;
  status_version: number | null;
  errors: { path: string; message: string }[];
}

/** The definition's status once the rule manager has judged its current version. */
async function judged(call: Call, id: string, version?: number): Promise<Summary> {
  return eventually(async () => {
    const res = await call('GET', '/definitions');
    const d = (res.body.items as Summary[] | undefined)?.find((i) => i.id === id);
    if (d === undefined || d.state === 'pending' || d.status_version !== d.version) return undefined;
    return version === undefined || d.version === version ? d : undefined;
  }, 30_000);
}

/** A workspace whose tool `calc` has two versions: v1 echoes its input, v2 is the calculator. */
async function twoVersionTool(): Promise<{ ws: string; call: Call }> {
  const ws = uniqueWorkspace('versions');
  const call = http(ws);
  expect(
    (
      await call('PUT', '/breadcrumbs/tool-calc', {
        schema_name: 'tool.def.v1',
        context: { name: 'calc', implementation: 'echo' },
      })
    ).status,
  ).toBe(201);
  const v2 = await call('PUT', '/breadcrumbs/tool-calc', {
    schema_name: 'tool.def.v1',
    context: { name: 'calc', implementation: 'calculator' },
  });
  expect(v2.body.version).toBe(2);
  expect((await judged(call, 'tool-calc', 2)).state).toBe('active');
  return { ws, call };
}

async function putWorkflow(call: Call, workflow: Json): Promise<Summary> {
  const id = `wf-${String(workflow.workflow_id)}`;
  const res = await call('PUT', `/breadcrumbs/${id}`, { schema_name: 'workflow.def.v1', context: workflow });
  expect(res.status).toBeLessThan(300);
  return judged(call, id, res.body.version as number);
}

async function runToEnd(call: Call, workflow: string): Promise<Json> {
  const started = await call('POST', '/runs', { workflow, input: {} });
  expect(started.status).toBe(201);
  return eventually(async () => {
    const res = await call('GET', `/runs/${String(started.body.run_id)}`);
    return res.status === 200 && ['succeeded', 'failed'].includes(String(res.body.status))
      ? res.body
      : undefined;
  }, 45_000);
}

const twoSteps = {
  workflow_id: 'sum',
  steps: [
    { id: 'pinned', tool: 'calc@1', input: { expression: '6*7' } },
    { id: 'latest', tool: 'calc', input: { expression: '6*7' } },
  ],
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('versions in use', () => {
  it('runs the pinned version of a tool and the latest for an unpinned step, and records both', async () => {
    const { ws, call } = await twoVersionTool();
    expect((await putWorkflow(call, twoSteps)).state).toBe('active');
    const run = await runToEnd(call, 'sum');
    expect(run.status).toBe('succeeded');
    const steps = run.steps as Record<string, Json>;
    // v1 (echo) answers with its input; v2 (calculator) computes.
    expect(steps.pinned).toMatchObject({
      output: { expression: '6*7' },
      definition: { id: 'tool-calc', version: 1 },
    });
    expect(steps.latest).toMatchObject({
      output: { result: 42 },
      definition: { id: 'tool-calc', version: 2 },
    });
    // The CLI shows the same, per step.
    const shown = await crumbs(ws, 'runs', 'get', String(run.run_id));
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(/pinned\s+succeeded\s+1\s+tool-calc@1\s/);
    expect(shown.out).toMatch(/latest\s+succeeded\s+1\s+tool-calc@2\s/);
  });

  it('runs the pinned version of an agent, and records it', async () => {
    const ws = uniqueWorkspace('versions-agent');
    const call = http(ws);
    const agent = (says: string) => ({
      agent_id: 'greeter',
      type: 'function',
      function_code: `async function handler() { return { says: ${JSON.stringify(says)} }; }`,
      transport: { kind: 'function', function: { timeout_ms: 2000, memory_mb: 16 } },
    });
    await call('PUT', '/breadcrumbs/agent-greeter', { schema_name: 'agent.def.v1', context: agent('one') });
    await call('PUT', '/breadcrumbs/agent-greeter', { schema_name: 'agent.def.v1', context: agent('two') });
    expect((await judged(call, 'agent-greeter', 2)).state).toBe('active');
    const workflow = await putWorkflow(call, {
      workflow_id: 'greet',
      steps: [
        { id: 'first', agent: 'greeter@1', input: {} },
        { id: 'now', agent: 'greeter', input: {} },
      ],
    });
    expect(workflow.errors).toEqual([]);
    const run = await runToEnd(call, 'greet');
    expect(run.status).toBe('succeeded');
    const steps = run.steps as Record<string, Json>;
    expect(steps.first).toMatchObject({
      output: { says: 'one' },
      definition: { id: 'agent-greeter', version: 1 },
    });
    expect(steps.now).toMatchObject({
      output: { says: 'two' },
      definition: { id: 'agent-greeter', version: 2 },
    });
  });

  it('makes a workflow invalid at the step whose pin names no version, or is malformed', async () => {
    const { call } = await twoVersionTool();
    const missing = await putWorkflow(call, {
      workflow_id: 'later',
      steps: [
        { id: 'a', tool: 'calc', input: {} },
        { id: 'b', parallel: [{ id: 'c', tool: 'calc@9', input: {} }] },
      ],
    });
    expect(missing.state).toBe('invalid');
    expect(missing.errors).toContainEqual({
      path: 'steps[1].parallel[0].tool',
      message: '"calc" has no version 9 (its latest is 2)',
    });
    const malformed = await putWorkflow(call, {
      workflow_id: 'typo',
      steps: [{ id: 'a', tool: 'calc@x', input: {} }],
    });
    expect(malformed.state).toBe('invalid');
    expect(malformed.errors).toEqual([
      expect.objectContaining({
        path: 'steps[0].tool',
        message: expect.stringContaining('whole number ≥ 1'),
      }),
    ]);
    // The run route refuses a workflow that is not active.
    expect((await call('POST', '/runs', { workflow: 'typo', input: {} })).status).toBeGreaterThanOrEqual(400);
  });

  it('fails the run with the reason when the pinned tool was deleted', async () => {
    const { call } = await twoVersionTool();
    expect((await putWorkflow(call, twoSteps)).state).toBe('active');
    expect((await call('DELETE', '/breadcrumbs/tool-calc')).status).toBe(204);
    const run = await runToEnd(call, 'sum');
    expect(run.status).toBe('failed');
    expect(run.failed_step).toBe('pinned');
    expect(String(run.error)).toContain('no tool.def.v1 named "calc"');
  });

  it("never reaches another workspace's definition", async () => {
    // Workspace A has calc v1 and v2; workspace B has a calc of one version.
    await twoVersionTool();
    const b = http(uniqueWorkspace('versions-b'));
    await b('PUT', '/breadcrumbs/tool-calc', {
      schema_name: 'tool.def.v1',
      context: { name: 'calc', implementation: 'echo' },
    });
    expect((await judged(b, 'tool-calc', 1)).state).toBe('active');
    const pinned = await putWorkflow(b, {
      workflow_id: 'reach',
      steps: [{ id: 'a', tool: 'calc@2', input: { expression: '1+1' } }],
    });
    expect(pinned.state).toBe('invalid');
    expect(pinned.errors).toContainEqual({
      path: 'steps[0].tool',
      message: '"calc" has no version 2 (its latest is 1)',
    });
    const other = await putWorkflow(b, {
      workflow_id: 'other',
      steps: [{ id: 'a', tool: 'nobody@1', input: {} }],
    });
    expect(other.errors[0]?.message).toMatch(/^workspace "versions-b-[0-9a-f]+" has no tool "nobody"$/);
  });

  it('rolls a definition back with crumbs rollback: history intact, the rule follows, errors are clear', async () => {
    const { ws, call } = await twoVersionTool();
    const rolled = await crumbs(ws, 'rollback', 'tool-calc', '--to', '1');
    expect(rolled.err).toBe('');
    expect(rolled.code).toBe(0);
    expect(rolled.out).toContain('rolled back tool-calc to the content of version 1: now version 3');
    const history = await call('GET', '/breadcrumbs/tool-calc/history?view=full');
    expect(
      (history.body.items as Json[]).map((v) => [v.version, (v.context as Json).implementation]),
    ).toEqual([
      [3, 'echo'],
      [2, 'calculator'],
      [1, 'echo'],
    ]);
    // An ordinary write: the rule manager judged version 3, and an unpinned step now runs it.
    expect((await judged(call, 'tool-calc', 3)).state).toBe('active');
    await putWorkflow(call, {
      workflow_id: 'now',
      steps: [{ id: 'a', tool: 'calc', input: { expression: '2+2' } }],
    });
    const run = await runToEnd(call, 'now');
    expect((run.steps as Record<string, Json>).a).toMatchObject({
      output: { expression: '2+2' },
      definition: { id: 'tool-calc', version: 3 },
    });

    const noVersion = await crumbs(ws, 'rollback', 'tool-calc', '--to', '7');
    expect(noVersion.code).toBe(1);
    expect(noVersion.err).toContain('"tool-calc" has no version 7 (its versions are 1 to 3)');
    const noDefinition = await crumbs(ws, 'rollback', 'tool-nothing', '--to', '1');
    expect(noDefinition.code).toBe(1);
    expect(noDefinition.err).toContain(`no breadcrumb "tool-nothing" in workspace ${ws}`);
    const noTo = await crumbs(ws, 'rollback', 'tool-calc');
    expect(noTo.code).toBe(2);
    expect(noTo.err).toContain('missing --to N');
  });

  it('refuses a rollback when the definition changes while it runs (412), and keeps the other edit', async () => {
    const { ws, call } = await twoVersionTool();
    // Someone else's edit lands between the rollback's read and its write.
    const realFetch = globalThis.fetch;
    let edited = false;
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      if (init?.method === 'PATCH' && !edited) {
        edited = true;
        const other = await call('PATCH', '/breadcrumbs/tool-calc', { title: 'edited meanwhile' });
        expect(other.status).toBe(200);
      }
      return realFetch(input, init);
    });
    const rolled = await crumbs(ws, 'rollback', 'tool-calc', '--to', '1');
    vi.restoreAllMocks();
    expect(rolled.code).toBe(1);
    expect(rolled.err).toContain(
      '"tool-calc" changed while rolling back (it was version 2): nothing was written',
    );
    const head = await call('GET', '/breadcrumbs/tool-calc/full');
    expect(head.body).toMatchObject({
      version: 3,
      title: 'edited meanwhile',
      context: { implementation: 'calculator' },
    });
  });
});
