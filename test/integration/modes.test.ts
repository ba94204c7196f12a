/**
 * Issue 12 on the shared local stack, through the HTTP API (and `crumbs ask`): modes (converse, plan, build),
 * deliverables (one per conversation and type, its versions the history), and orchestration as a capability of
 * every agent — seed 004's flows 1–6 — plus the refusals (an unsupported mode, a plan that fails its schema twice,
 * depth across nested orchestrations). Partners are real servers on loopback (MCP, A2A, plain HTTP); models are the
 * offline model and the scripted OpenAI-compatible server (global-setup.ts).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { DEMO_ORCHESTRATOR_ID, seedDemo } from '#local/demo.ts';
import { startA2aServer, type TestA2aServer } from '../support/a2a-server.ts';
import { fakeOpenAiCounts } from '../support/fake-openai.ts';
import { startHttpServer, type TestHttpServer } from '../support/http-server.ts';
import { eventually, localStack, localStore, uniqueWorkspace } from '../support/local.ts';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.ts';

function client(workspace: string): CrumbsClient {
  const { api, token } = localStack();
  return new CrumbsClient({ endpoint: api, token, workspace });
}

async function apply(c: CrumbsClient, agentId: string, context: Record<string, unknown>) {
  const id = `agent-${agentId}`;
  const written = await c.put(id, {
    schema_name: 'agent.def.v1',
    title: agentId,
    tags: [],
    context: { agent_id: agentId, ...context },
  });
  const status = await eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= written.version ? s : undefined;
  }, 20_000);
  expect(status, JSON.stringify(status)).toMatchObject({ state: 'active' });
  return status;
}

/** Writes an agent.request.v1 and waits for its answer (agent.response.v1 tagged request:<id>). */
async function ask(c: CrumbsClient, agent: string, request: Record<string, unknown>, timeout = 40_000) {
  const requestId = `r-${Math.random().toString(36).slice(2, 10)}`;
  const written = await c.create({
    schema_name: 'agent.request.v1',
    title: `ask ${agent}`,
    tags: [],
    context: { agent, request_id: requestId, ...request },
  });
  const answer = await eventually(
    async () =>
      (
        await c.list({
          schema_name: 'agent.response.v1',
          tag: `request:${requestId}`,
          limit: 5,
          view: 'full',
        })
      ).items[0],
    timeout,
  );
  return {
    requestId,
    requestBreadcrumb: written.id,
    answer,
    context: answer.context as Record<string, unknown>,
  };
}

async function runSettled(c: CrumbsClient, runId: string, statuses: string[], afterVersion = 0) {
  return eventually(async () => {
    try {
      const run = await c.getRun(runId);
      return statuses.includes(run.status) && Number(run.version ?? 0) > afterVersion ? run : undefined;
    } catch {
      return undefined;
    }
  }, 40_000);
}

async function cli(args: string[], ws: string): Promise<{ code: number; out: string; err: string }> {
  const { api, token } = localStack();
  let out = '';
  let err = '';
  const code = await main([...args, '--endpoint', api, '--token', token, '--workspace', ws], {
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

const REPORT = {
  type: 'context',
  context: '# Report writer\nYou write short reports.',
  yaml: [
    'agent_card:',
    '  modes: [converse, plan, build]',
    'plan:',
    '  format: json',
    '  schema:',
    '    type: object',
    '    required: [steps]',
    '    properties:',
    '      steps:',
    '        type: array',
    '        minItems: 2',
    '        items: { type: object, required: [title, owner], properties: { title: { type: string, minLength: 3 }, owner: { enum: [me, you] } } }',
    'deliverable:',
    '  format: markdown',
    '  type: report',
    '  sections: [Summary, Findings]',
  ].join('\n'),
};

describe('flow 1: a context agent in each mode', () => {
  it('builds a deliverable, one per conversation and type, that later builds update', async () => {
    const c = client(uniqueWorkspace('modes-build'));
    await apply(c, 'reporter', REPORT);
    const first = await ask(c, 'reporter', {
      message: 'report on Q3',
      mode: 'build',
      conversation_id: 'conv-1',
    });
    expect(first.context).toMatchObject({ status: 'success', mode: 'build', deliverable_type: 'report' });
    const id = String(first.context.deliverable_id);
    const deliverable = await c.getFull(id);
    expect(deliverable.schema_name).toBe('agent.deliverable.v1');
    expect(deliverable.version).toBe(1);
    expect(deliverable.tags).toEqual(
      expect.arrayContaining([`request:${first.requestId}`, 'deliverable:report']),
    );
    const content = String((deliverable.context as { content: string }).content);
    expect(content).toMatch(/^## Summary$/m);
    expect(content.indexOf('## Summary')).toBeLessThan(content.indexOf('## Findings'));
    expect(deliverable.context).toMatchObject({
      type: 'report',
      format: 'markdown',
      conversation_id: 'conv-1',
    });

    const second = await ask(c, 'reporter', {
      message: 'now with Q4',
      mode: 'build',
      conversation_id: 'conv-1',
    });
    expect(second.context.deliverable_id).toBe(id);
    const updated = await c.getFull(id);
    expect(updated.version).toBe(2);
    expect(String((updated.context as { content: string }).content)).toContain('now with Q4');
    const history = await c.history(id);
    expect(history.items.map((v) => v.version)).toEqual([2, 1]);
    // Another conversation has its own deliverable of the type.
    const other = await ask(c, 'reporter', { message: 'other', mode: 'build', conversation_id: 'conv-2' });
    expect(other.context.deliverable_id).not.toBe(id);
  });

  it('a later plan or build in a conversation reads what the conversation built, planned and said before', async () => {
    const c = client(uniqueWorkspace('modes-history'));
    await apply(c, 'reporter', REPORT);
    // The offline model names the context sections it received.
    const first = await ask(c, 'reporter', {
      message: 'report on Q3',
      mode: 'build',
      conversation_id: 'conv-h',
    });
    expect(String(first.context.text)).not.toContain('conversation_history');
    const plan = await ask(c, 'reporter', { message: 'plan Q4', mode: 'plan', conversation_id: 'conv-h' });
    expect(String(plan.context.text)).toContain('conversation_history');
    const second = await ask(c, 'reporter', {
      message: 'now with Q4',
      mode: 'build',
      conversation_id: 'conv-h',
    });
    expect(String(second.context.text)).toContain('conversation_history');
    // Another conversation starts with nothing.
    const other = await ask(c, 'reporter', { message: 'fresh', mode: 'build', conversation_id: 'conv-new' });
    expect(String(other.context.text)).not.toContain('conversation_history');
  });

  it('plans in its plan format: a JSON plan that matches the schema, written as agent.plan.v1', async () => {
    const c = client(uniqueWorkspace('modes-plan'));
    await apply(c, 'reporter', REPORT);
    const { context, requestId } = await ask(c, 'reporter', { message: 'plan the Q3 report', mode: 'plan' });
    expect(context).toMatchObject({ status: 'success', format: 'json', attempts: 1 });
    const plan = await c.getFull(String(context.plan_id));
    expect(plan.schema_name).toBe('agent.plan.v1');
    expect(plan.tags).toContain(`request:${requestId}`);
    const steps = (plan.context as { plan: { steps: { title: string; owner: string }[] } }).plan.steps;
    expect(steps.length).toBeGreaterThanOrEqual(2);
    expect(steps.every((s) => s.title.length >= 3 && ['me', 'you'].includes(s.owner))).toBe(true);
  });

  it('refuses a mode the agent does not support, naming the modes it does', async () => {
    const c = client(uniqueWorkspace('modes-refuse'));
    await apply(c, 'builder', { modes: ['build'] });
    const { context } = await ask(c, 'builder', { message: 'chat?', mode: 'converse' });
    expect(context).toMatchObject({
      status: 'error',
      error: 'agent builder does not support mode "converse"; supported modes: build',
    });
  });

  it('sends an invalid plan back once with the problems, then answers with an error', async () => {
    const c = client(uniqueWorkspace('modes-badplan'));
    const key = Math.random().toString(36).slice(2, 8);
    const plan = {
      format: 'json',
      schema: { type: 'object', required: ['steps'], properties: { steps: { type: 'array' } } },
    };
    await apply(c, 'stubborn', { model: `openai-compatible/badplan-always-${key}`, plan });
    await apply(c, 'learner', { model: `openai-compatible/badplan-once-${key}`, plan });
    const failed = await ask(c, 'stubborn', { message: 'plan it', mode: 'plan' });
    expect(failed.context).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/^the model's plan is not valid after one retry: steps: .*array/),
    });
    const fixed = await ask(c, 'learner', { message: 'plan it', mode: 'plan' });
    expect(fixed.context).toMatchObject({
      status: 'success',
      attempts: 2,
      output: { steps: [{ title: 'fixed after feedback' }] },
    });
    const counts = await fakeOpenAiCounts(inject('fakeOpenAi'));
    expect(counts[`badplan-always-${key}`]).toBe(2);
    expect(counts[`badplan-once-${key}`]).toBe(2);
  });
});

describe('flow 2: a tool agent called as a sub-agent', () => {
  let mcp: TestMcpServer;
  beforeAll(async () => {
    mcp = await startMcpServer('streamable');
  });
  afterAll(() => mcp.close());

  it('answers the orchestrating agent with its build, which feeds the final deliverable', async () => {
    const c = client(uniqueWorkspace('modes-tool'));
    await apply(c, 'math', {
      type: 'tool',
      transport: { kind: 'mcp', mcp: { url: mcp.url } },
      yaml: 'tools: [add]\nagent_card:\n  modes: [build]\ndeliverable:\n  format: json\n  type: sum',
    });
    await apply(c, 'accountant', {
      orchestration: {
        steps: [{ id: 'sum', agent: 'math', input: { tool: 'add', arguments: { a: 40, b: 2 } } }],
      },
      deliverable: { format: 'json', type: 'ledger' },
    });
    const { context } = await ask(c, 'accountant', {
      message: 'add it up',
      mode: 'build',
      orchestrate: true,
    });
    expect(context).toMatchObject({ status: 'success', mode: 'build', run_status: 'succeeded' });
    const run = await c.getRun(String(context.run_id));
    expect(run.steps?.sum).toMatchObject({ status: 'succeeded', output: { sum: 42 } });
    // The tool agent built its own deliverable in its own conversation (its request's id).
    const sums = await c.list({ schema_name: 'agent.deliverable.v1', tag: 'deliverable:sum', view: 'full' });
    expect(sums.items[0]?.context).toMatchObject({ agent_id: 'math', content: { sum: 42 }, format: 'json' });
    const ledger = await c.getFull(String(context.deliverable_id));
    expect(ledger.context).toMatchObject({ agent_id: 'accountant', type: 'ledger', run_id: context.run_id });
  });
});

describe('flow 3: a context agent orchestrating two sub-agents', () => {
  it('plans a call of every available agent (offline model), runs them in parallel and builds from their results', async () => {
    const c = client(uniqueWorkspace('modes-orch'));
    await apply(c, 'product', { system_prompt: 'You know the product.' });
    await apply(c, 'data', { system_prompt: 'You know the numbers.' });
    await apply(c, 'lead', {
      orchestration: { availableAgents: ['product', 'data'], defaultMode: 'parallel' },
      deliverable: { format: 'html', type: 'brief', sections: ['Product', 'Numbers'] },
    });
    const { context, requestBreadcrumb } = await ask(c, 'lead', {
      message: 'brief me on the launch',
      mode: 'build',
      orchestrate: true,
    });
    expect(context).toMatchObject({
      status: 'success',
      run_id: `run-${requestBreadcrumb}`,
      run_status: 'succeeded',
    });
    const run = await c.getRun(String(context.run_id));
    expect(run.workflow).toBe('agent:lead');
    expect(Object.keys(run.steps ?? {}).sort()).toEqual(['agents', 'data', 'final', 'product']);
    expect(run.steps?.agents?.status).toBe('succeeded');
    const brief = await c.getFull(String(context.deliverable_id));
    const html = String((brief.context as { content: string }).content);
    expect(html).toMatch(/<h2>Product<\/h2>[\s\S]*<h2>Numbers<\/h2>/);
    // The sub-agents' results were the final step's context (the offline model names the sections it got).
    expect(html).toContain('sub_agent_results');
    // The sub-agents were asked in build mode, one deeper, and each built its own deliverable.
    const requests = await c.list({
      schema_name: 'agent.request.v1',
      tag: `run:${context.run_id}`,
      view: 'full',
    });
    expect(
      requests.items.map((r) => r.context).sort((a, b) => String(a.agent).localeCompare(String(b.agent))),
    ).toEqual([
      expect.objectContaining({ agent: 'data', mode: 'build', depth: 1, message: 'brief me on the launch' }),
      expect.objectContaining({
        agent: 'product',
        mode: 'build',
        depth: 1,
        message: 'brief me on the launch',
      }),
    ]);
  });

  it('stops at max depth across nested orchestrations, naming the limit', async () => {
    const c = client(uniqueWorkspace('modes-depth'));
    await apply(c, 'leaf', {});
    await apply(c, 'middle', { orchestration: { availableAgents: ['leaf'], maxDepth: 5 } });
    await apply(c, 'top', {
      orchestration: { steps: [{ id: 'ask_middle', agent: 'middle', orchestrate: true }], maxDepth: 1 },
    });
    const { context } = await ask(c, 'top', { message: 'go deep', orchestrate: true });
    expect(context).toMatchObject({ status: 'error', run_status: 'failed', failed_step: 'ask_middle' });
    // middle's own run started at depth 1 and could not call leaf at depth 2: top's max_depth (1) bounds it.
    expect(String(context.error)).toMatch(/limit max_depth \(1\) exceeded: step "leaf" would run at depth 2/);
    const leafRequests = await c.list({ schema_name: 'agent.request.v1', view: 'full' });
    expect(leafRequests.items.filter((r) => r.context.agent === 'leaf')).toEqual([]);
  });
});

describe('flow 4: an api agent BUILD', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startHttpServer((req, res) => {
      const body = JSON.parse(req.body || '{}') as { city?: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { name: body.city, temp_c: 21.5 } }));
    });
  });
  afterAll(() => server.close());

  it('transforms, calls and answers with a JSON deliverable checked against its schema', async () => {
    const c = client(uniqueWorkspace('modes-api'));
    await apply(c, 'weather', {
      type: 'api',
      transport: { kind: 'api', api: { endpoint: `${server.url}/v1/weather`, method: 'POST' } },
      yaml: [
        'request_transform: \'{ "city": input.city }\'',
        'response_transform:',
        '  city: data.name',
        '  celsius: data.temp_c',
        'deliverable:',
        '  format: json',
        '  type: forecast',
        '  schema: { type: object, required: [city, celsius], properties: { celsius: { type: number } } }',
      ].join('\n'),
    });
    const { context } = await ask(c, 'weather', { input: { city: 'Bergen' }, mode: 'build' });
    expect(context).toMatchObject({ status: 'success', output: { city: 'Bergen', celsius: 21.5 } });
    const forecast = await c.getFull(String(context.deliverable_id));
    expect(forecast.context).toMatchObject({
      type: 'forecast',
      format: 'json',
      content: { city: 'Bergen', celsius: 21.5 },
    });
  });
});

describe('flow 5: an external (A2A) agent BUILD', () => {
  let partner: TestA2aServer;
  beforeAll(async () => {
    partner = await startA2aServer();
  });
  afterAll(() => partner.close());

  it('asks the partner over A2A and keeps its answer as a markdown deliverable', async () => {
    const c = client(uniqueWorkspace('modes-a2a'));
    await apply(c, 'adder', {
      type: 'external',
      transport: { kind: 'external', external: { endpoint: partner.baseUrl, protocol: 'a2a' } },
      deliverable: { format: 'markdown', type: 'sum' },
    });
    const { context } = await ask(c, 'adder', {
      message: 'please add',
      input: { a: 2, b: 3 },
      mode: 'build',
    });
    expect(context).toMatchObject({ status: 'success', mode: 'build', deliverable_type: 'sum' });
    const sum = await c.getFull(String(context.deliverable_id));
    expect(sum.context).toMatchObject({ format: 'markdown', content: expect.stringContaining('"sum": 5') });
  });
});

describe('flow 6: an orchestration with a human checkpoint', () => {
  const checkpointed = {
    orchestration: {
      availableAgents: ['research', 'numbers'],
      defaultMode: 'parallel',
      checkpoints: [{ id: 'approve', prompt: 'Publish the brief?' }],
    },
    deliverable: { format: 'markdown', type: 'brief' },
  };

  it('waits for an approval, then produces the deliverable', async () => {
    const c = client(uniqueWorkspace('modes-approve'));
    await apply(c, 'research', {});
    await apply(c, 'numbers', {});
    await apply(c, 'lead', checkpointed);
    const started = await c.create({
      schema_name: 'agent.request.v1',
      title: 'ask lead',
      tags: [],
      context: { agent: 'lead', message: 'the brief', mode: 'build', orchestrate: true },
    });
    const runId = `run-${started.id}`;
    const waiting = await runSettled(c, runId, ['waiting']);
    expect(waiting.steps?.approve?.status).toBe('waiting');
    expect(waiting.steps?.final).toBeUndefined();
    await c.runAction(runId, 'approve', { comment: 'ship it' });
    const done = await runSettled(c, runId, ['succeeded']);
    expect(done.steps?.approve).toMatchObject({ status: 'succeeded', decision: 'approve' });
    const answer = await eventually(
      async () =>
        (await c.list({ schema_name: 'agent.response.v1', tag: `request:${started.id}`, view: 'full' }))
          .items[0],
      20_000,
    );
    expect(answer.context).toMatchObject({ status: 'success', run_id: runId, deliverable_type: 'brief' });
    const brief = await c.getFull(String(answer.context.deliverable_id));
    // The checkpoint's decision reached the final step with the sub-agents' results.
    expect(String((brief.context as { content: string }).content)).toContain('sub_agent_results');
  });

  it('rolls back to a step (orchestrationAction rollback → retry from it) and runs it and what follows again', async () => {
    const c = client(uniqueWorkspace('modes-rollback'));
    await apply(c, 'research', {});
    await apply(c, 'numbers', {});
    await apply(c, 'lead', checkpointed);
    const started = await c.create({
      schema_name: 'agent.request.v1',
      title: 'ask lead',
      tags: [],
      context: { agent: 'lead', message: 'the brief', mode: 'build', orchestrate: true },
    });
    const runId = `run-${started.id}`;
    const waiting = await runSettled(c, runId, ['waiting']);
    const rollback = await ask(c, 'lead', {
      orchestrationAction: 'rollback',
      run_id: runId,
      from_step: 'agents',
    });
    expect(rollback.context).toMatchObject({ status: 'success', action: 'rollback', run_id: runId });
    const again = await runSettled(c, runId, ['waiting'], Number(waiting.version));
    expect(again.steps?.agents).toMatchObject({ status: 'succeeded', attempts: 2 });
    // Both sub-agents were asked again (new attempt ids), the earlier answers staying in the run's history.
    const asked = await c.list({ schema_name: 'agent.request.v1', tag: `run:${runId}`, view: 'full' });
    expect(asked.items.map((r) => r.context.agent).sort()).toEqual([
      'numbers',
      'numbers',
      'research',
      'research',
    ]);
    expect(again.steps?.research?.attempt_id).not.toBe(waiting.steps?.research?.attempt_id);
    // The control is on record, written by the agent as the API would.
    const controls = await c.list({ schema_name: 'workflow.control.v1', tag: `run:${runId}`, view: 'full' });
    expect(controls.items[0]?.context).toMatchObject({ action: 'retry', from_step: 'agents' });
    // human-response through the agent, too.
    const approved = await ask(c, 'lead', {
      orchestrationAction: 'human-response',
      run_id: runId,
      decision: 'approve',
      comment: 'fine',
    });
    expect(approved.context).toMatchObject({ status: 'success', run_status: 'succeeded' });
    const answer = await eventually(
      async () =>
        (await c.list({ schema_name: 'agent.response.v1', tag: `request:${started.id}`, view: 'full' }))
          .items[0],
      20_000,
    );
    expect(answer.context).toMatchObject({ status: 'success', run_id: runId });
  });
});

describe('crumbs ask', () => {
  it('answers in each mode, and orchestrates with --wait until the checkpoint', async () => {
    const ws = uniqueWorkspace('modes-cli');
    const c = client(ws);
    await apply(c, 'reporter', REPORT);
    await apply(c, 'research', {});
    await apply(c, 'numbers', {});
    await apply(c, 'lead', {
      orchestration: {
        availableAgents: ['research', 'numbers'],
        defaultMode: 'parallel',
        checkpoints: [{ prompt: 'Publish?' }],
      },
    });

    const converse = await cli(['ask', 'reporter', 'hello there'], ws);
    expect(converse).toMatchObject({ code: 0 });
    expect(converse.out).toContain('You said: "hello there"');

    const plan = await cli(['ask', 'reporter', 'plan Q3', '--mode', 'plan'], ws);
    expect(plan.code).toBe(0);
    expect(plan.out).toMatch(/"steps": \[/);
    expect(plan.out).toMatch(/^plan plan-[0-9a-f]{32} \(json\)$/m);

    const build = await cli(
      ['ask', 'reporter', 'write Q3', '--mode', 'build', '--conversation', 'cli-1'],
      ws,
    );
    expect(build.code).toBe(0);
    expect(build.out).toMatch(/^## Summary$/m);
    expect(build.out).toMatch(
      /^deliverable deliverable-[0-9a-f]{32} v1 \(report, markdown; conversation cli-1\)$/m,
    );

    const refused = await cli(['ask', 'reporter', 'x', '--mode', 'paint'], ws);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('--mode: expected one of converse, plan, build');

    const orchestrated = await cli(
      ['ask', 'lead', 'the brief', '--mode', 'build', '--orchestrate', '--wait'],
      ws,
    );
    expect(orchestrated.code).toBe(0);
    expect(orchestrated.out).toMatch(/^status {4}waiting$/m);
    const runId = /crumbs runs approve (run-\S+)/.exec(orchestrated.out)?.[1] ?? '';
    expect(runId).toMatch(/^run-/);
    const approved = await cli(['runs', 'approve', runId, '--wait'], ws);
    expect(approved.code).toBe(0);
    expect(approved.out).toMatch(/^status {4}succeeded$/m);
  });
});

describe('the demo orchestration (npm start seeds it in workspace demo)', () => {
  it('runs as the README shows: ask to build, approve at the checkpoint, get the launch brief', async () => {
    const ws = uniqueWorkspace('modes-demo');
    await seedDemo(localStore(), ws, {});
    const c = client(ws);
    for (const id of [
      'demo-agent-market-research',
      'demo-agent-competitor-data',
      `demo-agent-${DEMO_ORCHESTRATOR_ID}`,
    ]) {
      await eventually(async () => {
        const s = (
          await c.list({
            schema_name: 'definition.status.v1',
            tag: `definition:${id}`,
            limit: 1,
            view: 'full',
          })
        ).items[0]?.context;
        return s?.state === 'active' ? s : undefined;
      }, 20_000);
    }
    const asked = await cli(
      ['ask', DEMO_ORCHESTRATOR_ID, 'brief for the Q3 launch', '--mode', 'build', '--orchestrate', '--wait'],
      ws,
    );
    expect(asked.code, asked.err).toBe(0);
    expect(asked.out).toMatch(/^status {4}waiting$/m);
    for (const step of ['agents', 'market-research', 'competitor-data']) {
      expect(asked.out).toContain(`${step}:succeeded`);
    }
    expect(asked.out).toContain('approve:waiting');
    const runId = /crumbs runs approve (run-\S+)/.exec(asked.out)?.[1] ?? '';
    const approved = await cli(['runs', 'approve', runId, '--wait'], ws);
    expect(approved.code, approved.err).toBe(0);
    expect(approved.out).toMatch(/^status {4}succeeded$/m);
    const answer = await eventually(
      async () =>
        (await c.list({ schema_name: 'agent.response.v1', tag: `request:${runId.slice(4)}`, view: 'full' }))
          .items[0],
      20_000,
    );
    const brief = await c.getFull(String(answer.context.deliverable_id));
    expect(brief.context).toMatchObject({
      agent_id: DEMO_ORCHESTRATOR_ID,
      type: 'launch-brief',
      run_id: runId,
    });
    const content = String((brief.context as { content: string }).content);
    expect(content).toMatch(/## Market[\s\S]*## Competition[\s\S]*## Recommendation/);
    // The competitor-data sub-agent's JSON deliverable matched its schema (the offline model fills any schema).
    const competitors = await c.list({
      schema_name: 'agent.deliverable.v1',
      tag: 'deliverable:competitors',
      view: 'full',
    });
    expect(competitors.items[0]?.context).toMatchObject({
      content: { competitors: [{ name: expect.any(String), price: 0 }] },
    });
  });
});
