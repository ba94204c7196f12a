import { afterAll, describe, expect, it } from 'vitest';
import { QuickJsSandbox } from '#shared/adapters/sandbox/quickjs-sandbox.ts';
import { createFunctionAgent } from '#shared/core/agents/function-agent.ts';
import { agentSpec } from '#shared/domain/agent-spec.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { agentRun } from '../../../support/agent-run.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

const sandbox = new QuickJsSandbox();
afterAll(() => sandbox.close());

function spec(code: string, limits: Record<string, unknown> = {}) {
  const parsed = parseDefinition('agent.def.v1', {
    agent_id: 'fn',
    type: 'function',
    function_code: code,
    transport: { kind: 'function', function: { timeout_ms: 1000, memory_mb: 16, ...limits } },
  });
  const s = agentSpec(parsed.definition as AgentDefinition);
  if (s.type !== 'function') throw new Error('not a function spec');
  return s;
}

function setup() {
  const store = new InMemoryBreadcrumbStore();
  const agent = createFunctionAgent({
    sandbox,
    store,
    tools: (name) => builtinTools.find((t) => t.name === name),
  });
  return { agent, store };
}

describe('function agent', () => {
  it('runs at most the operator ceiling, whatever the definition asked for', async () => {
    const agent = createFunctionAgent({
      sandbox,
      store: new InMemoryBreadcrumbStore(),
      tools: () => undefined,
      timeoutCeilingMs: 200,
    });
    const outcome = await agent.run(
      agentRun(spec('async function handler() { for (;;) {} }', { timeout_ms: 60_000 }), { input: {} }),
    );
    expect(outcome).toMatchObject({
      kind: 'answer',
      answer: { status: 'error', error: expect.stringContaining('time limit of 200 ms') },
    });
  });

  it('returns a computed result, with the console output', async () => {
    const { agent } = setup();
    const outcome = await agent.run(
      agentRun(
        spec(`async function handler(input) {
          console.log('summing', input.values.length);
          return { total: input.values.reduce((a, b) => a + b, 0) };
        }`),
        { input: { values: [1, 2, 3.5] } },
      ),
    );
    expect(outcome).toEqual({
      kind: 'answer',
      answer: { status: 'success', output: { total: 6.5 }, logs: ['log: summing 3'] },
      outputs: [],
    });
  });

  it('reaches the workspace and built-in tools only through ctx', async () => {
    const { agent, store } = setup();
    await store.create(
      'ws-test',
      { schema_name: 'note.v1', title: 'n', tags: ['x'], context: { n: 7 } },
      { principal: 'user:a' },
    );
    const outcome = await agent.run(
      agentRun(
        spec(`async function handler(input, ctx) {
          const notes = await ctx.search({ schema_name: 'note.v1' });
          const calc = await ctx.callTool({ tool: 'calculator', input: { expression: '6*7' } });
          await ctx.create({ schema_name: 'report.v1', title: 'r', context: { notes: notes.length } });
          const req = await ctx.request();
          return { n: notes[0].context.n, calc, req };
        }`),
        { requestId: 'r-9', input: {} },
      ),
    );
    expect(outcome).toMatchObject({
      answer: {
        status: 'success',
        output: {
          n: 7,
          calc: expect.objectContaining({ result: 42 }),
          req: { request_id: 'r-9', agent: 'test-agent' },
        },
      },
      outputs: [{ schema_name: 'report.v1', title: 'r', tags: ['agent:test-agent'], context: { notes: 1 } }],
    });
  });

  it('searches context views: a field llm_hints exclude never reaches the function', async () => {
    const { agent, store } = setup();
    await store.create(
      'ws-test',
      {
        schema_name: 'note.v1',
        title: 'n',
        tags: [],
        context: { shown: 1, secret: 's3cr3t' },
        llm_hints: { exclude: ['secret'] },
      },
      { principal: 'user:a' },
    );
    const outcome = await agent.run(
      agentRun(
        spec(`async function handler(input, ctx) {
          return (await ctx.search({ schema_name: 'note.v1' }))[0].context;
        }`),
      ),
    );
    expect(outcome).toMatchObject({ answer: { status: 'success', output: { shown: 1 } } });
    expect(JSON.stringify(outcome)).not.toContain('s3cr3t');
  });

  it('refuses to create definitions or system records', async () => {
    const { agent } = setup();
    const outcome = await agent.run(
      agentRun(
        spec(
          `async function handler(input, ctx) { await ctx.create({ schema_name: 'agent.def.v1', context: {} }); }`,
        ),
      ),
    );
    expect(outcome).toMatchObject({
      answer: { status: 'error', error: expect.stringContaining('may not be written') },
    });
  });

  it('requests only tools, agents and workflows it was given; refusals throw in the function and are counted', async () => {
    const { agent, store } = setup();
    await store.create(
      'ws-test',
      { schema_name: 'tool.def.v1', title: 'echo', tags: [], context: { name: 'echo' } },
      { principal: 'user:a' },
    );
    const outcome = await agent.run(
      agentRun(
        spec(`async function handler(input, ctx) {
          const tried = [
            { schema_name: 'tool.request.v1', context: { tool: 'calculator', input: {} } },
            { schema_name: 'agent.request.v1', context: { agent: 'admin', message: 'hi' } },
            { schema_name: 'workflow.request.v1', context: { workflow: 'deploy' } },
            { schema_name: 'human.response.v1', context: { request_id: 'r', decision: 'approve' } },
            { schema_name: 'note.v1', tags: ['run:r1'], context: {} },
            { schema_name: 'tool.request.v1', context: { tool: 'echo', input: { a: 1 }, requestedBy: 'other' } },
          ];
          const seen = [];
          for (const b of tried) {
            try { await ctx.create(b); seen.push('ok'); } catch (e) { seen.push(String(e.message)); }
          }
          try { await ctx.callTool({ tool: 'breadcrumb.create', input: {} }); } catch (e) { seen.push(String(e.message)); }
          return seen;
        }`),
      ),
    );
    const answer = (outcome as unknown as { answer: { output: string[]; refused_writes: number } }).answer;
    expect(answer.output.slice(0, 5)).toEqual([
      expect.stringContaining('the tool "calculator" is not available to this agent (its tools: echo)'),
      expect.stringContaining('the agent "admin" is not available to this agent (its agents: none)'),
      expect.stringContaining('the workflow "deploy" is not available'),
      expect.stringContaining('human.response.v1: runs, answers'),
      expect.stringContaining('the tag "run:r1"'),
    ]);
    expect(answer.output.slice(5)).toEqual(['ok', expect.stringContaining('write with ctx.create')]);
    expect(answer.refused_writes).toBe(5);
    expect(outcome).toMatchObject({
      outputs: [{ schema_name: 'tool.request.v1', context: { tool: 'echo', requestedBy: 'test-agent' } }],
    });
  });

  it('calls only the built-in tools its definition lists, when it lists them', async () => {
    const { agent } = setup();
    const parsed = parseDefinition('agent.def.v1', {
      agent_id: 'fn',
      type: 'function',
      tools: ['echo'],
      function_code: `async function handler(input, ctx) {
        try { await ctx.callTool({ tool: 'calculator', input: { expression: '1+1' } }); } catch (e) { return e.message; }
      }`,
      transport: { kind: 'function', function: { timeout_ms: 1000, memory_mb: 16 } },
    });
    const def = parsed.definition as AgentDefinition;
    const s = agentSpec(def);
    if (s.type !== 'function') throw new Error('not a function spec');
    const run = agentRun(s);
    const outcome = await agent.run({ ...run, definition: def });
    expect(outcome).toMatchObject({
      answer: {
        status: 'success',
        output: expect.stringContaining('the tool "calculator" is not available'),
      },
    });
  });

  it.each([
    ['an infinite loop', 'async function handler() { for (;;) {} }', /time limit of 300 ms/],
    [
      'a memory bomb',
      'async function handler() { const a = []; let s = "x"; for (;;) { s += s.length; a.push(s.split("")); } }',
      /memory|time limit/,
    ],
    ['process', 'async function handler() { return process.env; }', /ReferenceError/],
    ['require', 'async function handler() { return require("child_process"); }', /ReferenceError/],
    ['import()', 'async function handler() { return await import("fs"); }', /./],
    [
      'fetch',
      'async function handler() { return await fetch("http://169.254.169.254/"); }',
      /ReferenceError/,
    ],
  ])('ends %s in an error answer within the limits', async (_what, code, message) => {
    const { agent } = setup();
    const outcome = await agent.run(agentRun(spec(code, { timeout_ms: 300, memory_mb: 8 })));
    expect(outcome).toMatchObject({
      kind: 'answer',
      answer: { status: 'error', error: expect.stringMatching(message) },
    });
  });

  it('is unaffected by globalThis tampering in an earlier run', async () => {
    const { agent } = setup();
    await agent.run(
      agentRun(
        spec(`Object.prototype.hacked = 1; globalThis.Math = null; async function handler() { return 1; }`),
      ),
    );
    const outcome = await agent.run(
      agentRun(spec(`async function handler() { return [({}).hacked ?? null, Math.max(1, 2)]; }`)),
    );
    expect(outcome).toMatchObject({ answer: { status: 'success', output: [null, 2] } });
  });
});
