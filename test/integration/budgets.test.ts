/**
 * Budgets end to end on the shared local stack, with the scripted model server (every call reports 10 input and 5
 * output tokens, 41 micro-dollars at test prices; test/support/fake-openai.ts):
 * - a runaway agent (a model that asks for another tool round on every call) stopped by its request budget, the
 *   answer naming the budget and figures that agree exactly with the calls recorded;
 * - a run stopped by `limits.max_llm_calls` in a resumable state, an agent unable to resume it, a bad resume a 400
 *   naming the field, then resumed through `crumbs runs resume --max-llm-calls` and finishing;
 * - the workspace's daily budget (a model billing each call's whole output cap) refusing once the day is spent,
 *   the billed spend within the budget, and not another workspace's calls; a tool agent's argument extraction
 *   refused the same way.
 */
import { describe, expect, inject, it } from 'vitest';
import { FAKE_USAGE, fakeOpenAiUsage } from '../support/fake-openai.ts';
import { crumbs, eventually, localStack, localStore, uniqueWorkspace } from '../support/local.ts';
import { startMcpServer } from '../support/mcp-server.ts';
import { DAILY_BUDGET_WORKSPACES, TEST_LLM_PRICES } from '../support/shared-stack.ts';

type Json = Record<string, unknown>;
const TOKENS_PER_CALL = FAKE_USAGE.input + FAKE_USAGE.output;
const COST_PER_CALL_NUSD = 41_000;

function http(workspace: string, token = localStack().token) {
  const { api } = localStack();
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

type Call = ReturnType<typeof http>;

/** Writes the definitions and waits until each is active (or in the given state). */
async function define(call: Call, defs: [id: string, schema: string, context: Json][]): Promise<Json[]> {
  for (const [id, schema_name, context] of defs) {
    const res = await call('PUT', `/breadcrumbs/${id}`, { schema_name, context });
    expect(res.status).toBe(201);
  }
  return eventually(async () => {
    const res = await call('GET', '/breadcrumbs?schema_name=definition.status.v1&limit=50&view=full');
    const items = ((res.body.items as { context: Json }[]) ?? []).map((i) => i.context);
    return items.length >= defs.length && items.every((i) => i.state !== 'pending') ? items : undefined;
  }, 30_000);
}

async function latest(call: Call, schema: string, tag: string): Promise<Json | undefined> {
  const res = await call(
    'GET',
    `/breadcrumbs?schema_name=${schema}&tag=${encodeURIComponent(tag)}&limit=1&view=full`,
  );
  return (res.body.items as { context: Json }[] | undefined)?.[0]?.context;
}

/** Every `llm_usage` call the workspace's breadcrumbs record. */
async function recordedCalls(call: Call): Promise<{ input_tokens: number; output_tokens: number }[]> {
  const calls: { input_tokens: number; output_tokens: number }[] = [];
  for (const schema of ['agent.response.v1', 'tool.request.v1', 'agent.conversation.v1']) {
    const res = await call('GET', `/breadcrumbs?schema_name=${schema}&limit=100&view=full`);
    for (const item of (res.body.items as { context: Json }[]) ?? []) {
      const usage = item.context.llm_usage as
        | { calls: { input_tokens: number; output_tokens: number }[] }
        | undefined;
      if (usage) calls.push(...usage.calls);
    }
  }
  return calls;
}

const echoTool: [string, string, Json] = [
  'tool-echo',
  'tool.def.v1',
  { name: 'echo', implementation: 'echo' },
];

describe('budgets', () => {
  it('stops a runaway agent with its request budget, naming the budget and the exact figures', async () => {
    const ws = uniqueWorkspace('budget-runaway');
    const call = http(ws);
    await define(call, [
      echoTool,
      [
        'agent-runaway',
        'agent.def.v1',
        {
          agent_id: 'runaway',
          system_prompt: 'Keep working.',
          // Asks for another echo round on every call, up to 50 rounds.
          model: 'openai-compatible/rounds-50-echo',
          tools: ['echo'],
          max_tool_rounds: 50,
          budget: { max_tokens_per_request: 1200 },
          subscriptions: {
            selectors: [
              { schema_name: 'user.message.v1', role: 'trigger', all_tags: ['to:runaway'] },
              {
                schema_name: 'tool.response.v1',
                role: 'trigger',
                context_match: [{ path: '$.requestedBy', op: 'eq', value: 'runaway' }],
              },
            ],
          },
        },
      ],
    ]);
    const asked = await call('POST', '/breadcrumbs', {
      schema_name: 'user.message.v1',
      tags: ['to:runaway'],
      context: { message: 'never stop' },
    });
    const thread = String(asked.body.id);
    const answer = await eventually(() => latest(call, 'agent.response.v1', `thread:${thread}`), 90_000, 250);
    expect(answer.status).toBe('error');
    const match =
      /^budget max_tokens_per_request \(1,200 tokens\) reached: ([\d,]+) tokens used over (\d+) calls; the next call \(at least [\d,]+ tokens\) was not made$/.exec(
        String(answer.error),
      );
    expect(match, String(answer.error)).not.toBeNull();
    const used = Number(match?.[1]?.replaceAll(',', ''));
    const calls = Number(match?.[2]);
    // The figures are the scripted model's usage, call for call, and never past the budget.
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(calls).toBeLessThan(50);
    expect(used).toBe(calls * TOKENS_PER_CALL);
    expect(used).toBeLessThanOrEqual(1200);
    expect(answer.turn_usage).toMatchObject({ tokens: used, calls });
    expect(answer.budget_stop).toMatchObject({ budget: 'max_tokens_per_request', limit: 1200, used, calls });
    // Each call is still recorded once in llm_usage, and the records agree with the answer.
    const recorded = await eventually(async () => {
      const r = await recordedCalls(call);
      return r.length === calls ? r : undefined;
    });
    expect(recorded.reduce((n, c) => n + c.input_tokens + c.output_tokens, 0)).toBe(used);
  });

  it('refuses bad budget fields, naming the field', async () => {
    const ws = uniqueWorkspace('budget-bad');
    const call = http(ws);
    const [status] = await define(call, [
      ['agent-bad', 'agent.def.v1', { agent_id: 'bad', budget: { max_tokens_per_request: -1 } }],
    ]);
    expect(status?.state).toBe('invalid');
    expect(JSON.stringify(status)).toContain('budget.max_tokens_per_request');
  });

  it('pauses a run at limits.max_llm_calls; only a person resumes it, after raising the limit, and it finishes', async () => {
    const ws = uniqueWorkspace('budget-run');
    const call = http(ws);
    const agent = (id: string): [string, string, Json] => [
      `agent-${id}`,
      'agent.def.v1',
      {
        agent_id: id,
        system_prompt: 'Work.',
        // Two echo rounds, then the answer: three model calls per turn.
        model: 'openai-compatible/rounds-2-echo',
        tools: ['echo'],
        subscriptions: {
          selectors: [
            {
              schema_name: 'tool.response.v1',
              role: 'trigger',
              context_match: [{ path: '$.requestedBy', op: 'eq', value: id }],
            },
          ],
        },
      },
    ];
    await define(call, [
      echoTool,
      agent('first'),
      agent('second'),
      [
        'wf-two',
        'workflow.def.v1',
        {
          workflow_id: 'two',
          limits: { max_llm_calls: 4 },
          steps: [
            { id: 'a', agent: 'first', message: 'go' },
            { id: 'b', agent: 'second', message: 'go on' },
          ],
        },
      ],
    ]);
    const started = await call('POST', '/runs', { workflow: 'two', input: {} });
    expect(started.status).toBe(201);
    const runId = String(started.body.run_id);
    const runOf = (until: (r: Json) => boolean) =>
      eventually(
        async () => {
          const res = await call('GET', `/runs/${runId}`);
          return until(res.body) ? res.body : undefined;
        },
        90_000,
        250,
      );

    // a uses 3 calls; b has 1 left: it makes it and stops before its second, so the run pauses at 4 of 4.
    const paused = await runOf((r) => r.status === 'paused');
    expect(paused.stopped_by).toMatchObject({
      budget: 'limits.max_llm_calls',
      limit: 4,
      used: 4,
      unit: 'calls',
      step: 'b',
    });
    expect(paused.counters).toMatchObject({
      llm_calls: 4,
      tokens: 4 * TOKENS_PER_CALL,
      cost_nusd: 4 * COST_PER_CALL_NUSD,
    });
    const shown = await crumbs(ws, 'runs', 'get', runId);
    expect(shown.out).toContain(`budget    4 model calls, ${4 * TOKENS_PER_CALL} tokens, $0.000164`);
    expect(shown.out).toContain(
      'stopped   by limits.max_llm_calls (4 calls): 4 calls used, before step b; resume with --max-llm-calls above it',
    );

    // Bad limits: 400 naming the field; not raising the budget that stopped it: 409 saying so. Nothing written.
    const bad = await call('POST', `/runs/${runId}/resume`, { limits: { max_llm_calls: 'lots' } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('limits.max_llm_calls');
    const unknown = await call('POST', `/runs/${runId}/resume`, { limits: { max_steps: 10 } });
    expect(unknown.status).toBe(400);
    const notRaised = await call('POST', `/runs/${runId}/resume`, { limits: { max_tokens: 100_000 } });
    expect(notRaised.status).toBe(409);
    expect(JSON.stringify(notRaised.body)).toContain('limits.max_llm_calls');

    // An agent writing the control itself cannot raise the budget or resume the run: refused, recorded on the run.
    await localStore().create(
      ws,
      {
        schema_name: 'workflow.control.v1',
        title: 'sneaky resume',
        tags: [`run:${runId}`, 'reply-to:workflow:two'],
        context: { run_id: runId, action: 'resume', limits: { max_llm_calls: 1000 } },
      },
      { principal: 'agent:second' },
    );
    const refused = await runOf((r) => Array.isArray(r.refused) && r.refused.length > 0);
    expect(refused.status).toBe('paused');
    expect(refused.raised_limits).toBeUndefined();

    // A person raises it through the CLI: the run goes on, b runs again (3 calls), and the run ends at 7 calls.
    const resumed = await crumbs(ws, 'runs', 'resume', runId, '--max-llm-calls', '10');
    expect(resumed.code, resumed.err).toBe(0);
    const done = await runOf((r) => r.status === 'succeeded' || r.status === 'failed');
    expect(done.status).toBe('succeeded');
    expect(done.counters).toMatchObject({ llm_calls: 7, tokens: 7 * TOKENS_PER_CALL });
    expect(done.raised_limits).toMatchObject({ max_llm_calls: 10 });
    expect(String((done.raised_limits as Json).by)).toMatch(/^user:/);
  });

  it('refuses a workspace’s calls once its day is spent, the spend within the budget, and no other’s', async () => {
    const [ws, other] = DAILY_BUDGET_WORKSPACES;
    // A model billing every call's whole output cap: the reservation is what each call costs.
    const model = 'openai-compatible/answer-from-prompt-daily~bills';
    const agent: [string, string, Json] = [
      'agent-daily',
      'agent.def.v1',
      {
        agent_id: 'daily',
        system_prompt: 'Answer. <answer>ok</answer>',
        model,
        subscriptions: {
          selectors: [{ schema_name: 'user.message.v1', role: 'trigger', all_tags: ['to:daily'] }],
        },
      },
    ];
    const ask = async (c: Call): Promise<Json> => {
      const asked = await c('POST', '/breadcrumbs', {
        schema_name: 'user.message.v1',
        tags: ['to:daily'],
        context: { message: 'one more' },
      });
      return eventually(() => latest(c, 'agent.response.v1', `thread:${String(asked.body.id)}`), 30_000, 100);
    };
    const call = http(ws);
    await define(call, [agent]);
    // $0.05 a day: the first call reserves and bills about $0.025, the second what is left; the third is refused
    // before it is made, naming the budget, the day's spend and the least the next call would cost.
    let refusal: Json | undefined;
    let made = 0;
    for (let i = 0; i < 10 && refusal === undefined; i++) {
      const answer = await ask(call);
      if (answer.status === 'error') refusal = answer;
      else made++;
    }
    expect(refusal, `still answering after ${made} calls`).toBeDefined();
    expect(made).toBeGreaterThanOrEqual(2);
    expect(String(refusal?.error)).toMatch(
      /^budget CRUMBS_DAILY_BUDGETS \(workspace daily-budget-a, today UTC\) \(\$0\.050000\) reached: \$0\.\d{6} used over \d+ calls; the next call \(at least \$0\.\d{6}\) was not made$/,
    );
    const figures = refusal?.budget_stop as { used: number; limit: number; calls: number };
    expect(figures.limit).toBe(50_000_000);
    expect(figures.calls).toBe(made);
    // What the model billed is what the budget counted, and within it.
    const billed = await billedNusd(model);
    expect(figures.used).toBe(billed);
    expect(billed).toBeLessThanOrEqual(50_000_000);
    // The usage API agrees (the stream's batched totals of the calls recorded on the answers).
    const usage = await eventually(async () => {
      const res = await call('GET', '/usage?by=day');
      return (res.body.totals as Json).cost_nusd === billed ? res : undefined;
    });
    expect((usage.body.totals as Json).calls).toBe(made);
    // Another workspace's spend is its own: its first call goes through.
    const otherCall = http(other);
    await define(otherCall, [agent]);
    expect((await ask(otherCall)).status).toBe('success');
  });

  it('refuses a tool agent’s argument extraction once its workspace’s day is spent', async () => {
    const mcp = await startMcpServer('streamable');
    try {
      const ws = DAILY_BUDGET_WORKSPACES[2];
      const call = http(ws);
      // The model picks whoami (a tool call), billing its whole output cap.
      const model = 'openai-compatible/calls-whoami~bills';
      await define(call, [
        [
          'agent-picker',
          'agent.def.v1',
          {
            agent_id: 'picker',
            type: 'tool',
            model,
            transport: { kind: 'mcp', mcp: { url: mcp.url } },
            yaml: 'tools:\n  - whoami\nextract_arguments: true\n',
          },
        ],
      ]);
      const ask = async (): Promise<Json> => {
        const requestId = `pick-${Math.random().toString(36).slice(2, 8)}`;
        await call('POST', '/breadcrumbs', {
          schema_name: 'agent.request.v1',
          context: { agent: 'picker', message: 'who am I?', request_id: requestId },
        });
        return eventually(() => latest(call, 'agent.response.v1', `request:${requestId}`), 30_000, 100);
      };
      const answers: Json[] = [];
      for (let i = 0; i < 8 && answers.at(-1)?.status !== 'error'; i++) answers.push(await ask());
      expect(answers.filter((a) => a.status === 'success').length).toBeGreaterThanOrEqual(2);
      expect(String(answers.at(-1)?.error)).toMatch(
        /^budget CRUMBS_DAILY_BUDGETS \(workspace daily-budget-tools, today UTC\) \(\$0\.050000\) reached/,
      );
      const billed = await billedNusd(model);
      expect(billed).toBeLessThanOrEqual(50_000_000);
      // Over the budget nothing more reaches the model.
      expect(String((await ask()).error)).toMatch(/^budget CRUMBS_DAILY_BUDGETS/);
      expect(await billedNusd(model)).toBe(billed);
    } finally {
      await mcp.close();
    }
  });
});

/** What the scripted model billed `model` at the test prices (`TEST_LLM_PRICES`), in nano-dollars. */
async function billedNusd(model: string): Promise<number> {
  const usage = (await fakeOpenAiUsage(inject('fakeOpenAi')))[model.replace(/^openai-compatible\//, '')];
  const price = TEST_LLM_PRICES['openai-compatible/*'];
  return usage === undefined
    ? 0
    : usage.prompt_tokens * price.input * 1000 + usage.completion_tokens * price.output * 1000;
}
