/**
 * Request budgets of a context agent's turn, with a scripted model whose usage is known: a runaway agent (a model
 * that asks for another tool round on every call) is stopped before the call that would cross its budget, the
 * answer names the budget and the exact figures, each call's output is capped to what remains, and a run's share
 * carried by the request can lower the agent's budget but never raise it.
 */
import { describe, expect, it } from 'vitest';
import { type DailyBudget, dailyBudget } from '#shared/core/agents/context/daily-budget.ts';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import type { ExecutionInput } from '#shared/core/executor/contract.ts';
import { type Breadcrumb, checksumOf } from '#shared/domain/breadcrumb.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore, ListQuery } from '#shared/ports/breadcrumb-store.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import type { UsageRow, UsageTotals } from '#shared/ports/usage-totals.ts';
import { ENV } from '#shared/topology.ts';

const WS = 'ws';
const PRICES = { 'test/*': { input: 1, output: 10 } };

function record(
  partial: Partial<Breadcrumb> & Pick<Breadcrumb, 'id' | 'schema_name' | 'context'>,
): Breadcrumb {
  return {
    workspace: WS,
    title: '',
    tags: [],
    version: 1,
    checksum: checksumOf(partial.context),
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    created_by: 'user:t',
    updated_by: 'user:t',
    ...partial,
  };
}

function store(records: Breadcrumb[]): BreadcrumbStore {
  const get = async (_ws: string, id: string) => {
    const r = records.find((x) => x.id === id);
    if (!r) throw new NotFoundError(`no ${id}`);
    return r;
  };
  return {
    get,
    getContextView: get,
    list: async (q: ListQuery) => ({
      items: records.filter((r) => !q.schema_name || r.schema_name === q.schema_name),
      next_cursor: null,
    }),
    contextViews: async (_ws: string, rs: readonly Breadcrumb[]) => [...rs],
  } as Partial<BreadcrumbStore> as BreadcrumbStore;
}

function agentDef(extra: Record<string, unknown> = {}): AgentDefinition {
  const parsed = parseDefinition('agent.def.v1', {
    agent_id: 'runaway',
    system_prompt: 'Work.',
    model: 'test/loop',
    tools: ['calculator'],
    ...extra,
  });
  if (parsed.kind !== 'agent') throw new Error('not an agent');
  return parsed.definition;
}

function requestInput(
  def: AgentDefinition,
  budget?: Record<string, unknown>,
): ExecutionInput<AgentDefinition> {
  const trigger = record({
    id: 'req-1',
    schema_name: 'agent.request.v1',
    tags: ['run:run-1', 'step:s'],
    context: { agent: 'runaway', message: 'go', request_id: 'req-1', ...(budget ? { budget } : {}) },
  });
  return {
    definition: def,
    definitionRef: { id: 'agent-def', version: 1, workspace: WS, kind: 'agent', schema_name: 'agent.def.v1' },
    principal: 'agent:runaway',
    trigger: { ...trigger, workspace: WS },
    context: { trigger: trigger.context },
    causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
    signal: new AbortController().signal,
  };
}

/**
 * A runaway model: every call asks for a tool the agent was not given (refused in the same invocation, so the turn
 * goes straight back to the model) and reports 100 input tokens and 20 output tokens, or the output cap if lower.
 */
function runaway(): LlmClient & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    requests,
    async generate(request) {
      requests.push(request);
      return {
        text: 'again',
        toolCalls: [{ id: `c${requests.length}`, name: 'not-given', input: {} }],
        finishReason: 'tool-calls',
        usage: { inputTokens: 100, outputTokens: Math.min(20, request.maxOutputTokens ?? 20) },
        model: request.model,
      };
    },
  };
}

/** A tokenizer counting each text as 2 tokens: the prompt estimate is then the previous call's usage. */
const tinyTokenizers: Tokenizers = {
  forModel: async () => ({ encoding: 'test', exact: true, count: () => 2 }),
};

const tool = record({ id: 'tool-calc', schema_name: 'tool.def.v1', context: { name: 'calculator' } });

async function run(def: AgentDefinition, budget?: Record<string, unknown>, daily?: DailyBudget) {
  const llm = runaway();
  const kind = createContextAgentKind({
    store: store([tool]),
    llm,
    tokenizers: tinyTokenizers,
    prices: PRICES,
    ...(daily ? { daily } : {}),
  });
  const { outputs } = await kind.execute(requestInput(def, budget));
  return { llm, answer: outputs.find((o) => o.schema_name === 'agent.response.v1')?.context ?? {} };
}

describe('request budgets', () => {
  it('stops a runaway agent before the call that would cross max_tokens_per_request, with the exact figures', async () => {
    const { llm, answer } = await run(agentDef({ budget: { max_tokens_per_request: 500 } }));
    // Each call: 100 in + 20 out; the next call's input is estimated as at least the last call's in + out.
    expect(llm.requests.map((r) => r.maxOutputTokens)).toEqual([482, 260, 140, 20]);
    expect(answer).toMatchObject({
      status: 'error',
      error:
        'budget max_tokens_per_request (500 tokens) reached: 480 tokens used over 4 calls; the next call (at least 136 tokens) was not made',
      budget_stop: {
        budget: 'max_tokens_per_request',
        limit: 500,
        used: 480,
        calls: 4,
        unit: 'tokens',
        next: 136,
      },
      turn_usage: { tokens: 480, calls: 4 },
      tool_rounds: 4,
    });
  });

  it('stops before the call that would cross max_cost_usd_per_request, capping each call to what the money buys', async () => {
    // test/*: $1 per M input, $10 per M output: a call of 100 + 20 tokens costs $0.0003.
    const { llm, answer } = await run(agentDef({ budget: { max_cost_usd_per_request: 0.001 } }));
    expect(llm.requests.map((r) => r.maxOutputTokens)).toEqual([98, 57, 27]);
    expect(answer).toMatchObject({
      status: 'error',
      error:
        'budget max_cost_usd_per_request ($0.001000) reached: $0.000900 used over 3 calls; the next call (at least $0.000280) was not made',
      turn_usage: { cost_nusd: 900_000, calls: 3, tokens: 360 },
    });
  });

  it('applies the run’s share a request carries, which lowers the agent’s budget and never raises it', async () => {
    const lowered = await run(agentDef({ budget: { max_tokens_per_request: 10_000 } }), {
      max_llm_calls: 2,
      of: 'run run-1',
    });
    expect(lowered.llm.requests).toHaveLength(2);
    expect(lowered.answer).toMatchObject({
      error:
        'budget limits.max_llm_calls of run run-1 (2 calls) reached: 2 calls; the next call was not made',
      budget_stop: { budget: 'limits.max_llm_calls of run run-1', limit: 2, used: 2 },
    });

    // A request claiming a larger budget than the agent's own: the agent's holds.
    const claimed = await run(agentDef({ budget: { max_tokens_per_request: 260 } }), {
      max_tokens: 1_000_000,
    });
    expect(claimed.llm.requests).toHaveLength(2);
    expect(claimed.answer).toMatchObject({ budget_stop: { budget: 'max_tokens_per_request', used: 240 } });
  });

  it('without a budget the turn runs to max_tool_rounds and reads nothing more', async () => {
    const { llm, answer } = await run(agentDef({ max_tool_rounds: 3 }));
    expect(llm.requests).toHaveLength(4);
    expect(llm.requests.every((r) => r.maxOutputTokens === undefined)).toBe(true);
    expect(answer).toMatchObject({ status: 'success', turn_usage: { tokens: 480, calls: 4 } });
  });

  it('rejects bad budget fields naming the field', () => {
    expect(() =>
      parseDefinition('agent.def.v1', {
        agent_id: 'a',
        budget: { max_tokens_per_request: -5, max_cost_usd_per_request: 'lots' },
      }),
    ).toThrow(
      'budget.max_tokens_per_request: at least 1; budget.max_cost_usd_per_request: expected a number of US dollars',
    );
    expect(() => parseDefinition('agent.def.v1', { agent_id: 'a', budget: { max_tokens: 5 } })).toThrow(
      /budget/,
    );
    expect(() =>
      parseDefinition('workflow.def.v1', {
        workflow_id: 'w',
        steps: [{ id: 'a', agent: 'x' }],
        limits: { max_cost_usd: 0, max_tokens: 1.5 },
      }),
    ).toThrow(/limits\.max_tokens: expected a whole number of tokens.*|limits\.max_cost_usd: more than 0/);
  });
});

describe('the workspace daily budget', () => {
  /** Usage totals as the stream consumer leaves them: what a landed batch added, per workspace. */
  function totals(spent: Map<string, number>): UsageTotals & { reads: number } {
    const t = {
      reads: 0,
      add: async () => {},
      read: async (workspace: string) => {
        t.reads += 1;
        const cost = spent.get(workspace) ?? 0;
        const row: UsageRow = {
          dimension: 'day',
          key: '*',
          hour: '2026-01-01T10',
          calls: cost > 0 ? 1 : 0,
          input_tokens: 0,
          output_tokens: 0,
          cached_tokens: 0,
          cost_nusd: cost,
          unpriced_calls: 0,
        };
        return { rows: [row], truncated: false };
      },
    };
    return t;
  }

  it('refuses once a landed batch shows the limit reached; overshoot is at most one cache period of calls', async () => {
    const spent = new Map<string, number>();
    const usage = totals(spent);
    let now = new Date('2026-01-01T10:00:00Z');
    const daily = dailyBudget(
      { default: 0.001, workspaces: { rich: 1 } },
      usage,
      { now: () => now },
      10_000,
    ) as DailyBudget;

    // Spend under the limit: calls go through, and a turn's calls within the cache period read the totals once.
    spent.set(WS, 500_000);
    expect(await daily.refusal(WS)).toBeUndefined();
    // The batch carrying more calls lands ($0.0012 spent): within the cache period calls still pass — the bound.
    spent.set(WS, 1_200_000);
    now = new Date(now.getTime() + 9_999);
    expect(await daily.refusal(WS)).toBeUndefined();
    expect(usage.reads).toBe(1);
    // Past the cache period the landed total is read and the call refused, naming the budget and the figures.
    now = new Date(now.getTime() + 1);
    const stop = await daily.refusal(WS);
    expect(stop).toMatchObject({ limit: 1_000_000, used: 1_200_000, unit: 'usd' });
    // Another workspace's spend never counts against this one, and an override applies per workspace.
    spent.set('rich', 1_200_000);
    expect(await daily.refusal('rich')).toBeUndefined();
    expect(await daily.refusal('quiet')).toBeUndefined();
  });

  it('re-reads within a second once the spend it read is past 80 % of the limit', async () => {
    const spent = new Map([[WS, 850_000]]);
    const usage = totals(spent);
    let now = new Date('2026-01-01T10:00:00Z');
    const daily = dailyBudget({ default: 0.001 }, usage, { now: () => now }) as DailyBudget;
    expect(await daily.refusal(WS)).toBeUndefined();
    spent.set(WS, 1_050_000);
    now = new Date(now.getTime() + 999);
    expect(await daily.refusal(WS)).toBeUndefined();
    now = new Date(now.getTime() + 1);
    expect(await daily.refusal(WS)).toMatchObject({ used: 1_050_000 });
    expect(usage.reads).toBe(2);
    // A new UTC day starts from that day's totals.
    spent.set(WS, 0);
    now = new Date('2026-01-02T00:00:00Z');
    expect(await daily.refusal(WS)).toBeUndefined();
  });

  it('refuses a turn’s call with an answer naming the budget, the day’s spend and the limit', async () => {
    const daily = dailyBudget({ default: 0.001 }, totals(new Map([[WS, 1_500_000]])), {
      now: () => new Date('2026-01-01T10:00:00Z'),
    });
    const { llm, answer } = await run(agentDef(), undefined, daily);
    expect(llm.requests).toHaveLength(0);
    expect(String(answer.error)).toBe(
      `budget ${ENV.dailyBudgets} (workspace ws, today UTC) ($0.001000) reached: $0.001500 used over 1 call; the next call was not made`,
    );
  });

  it('is nothing at all without a configured limit (no reads on the plain path)', () => {
    expect(dailyBudget({}, totals(new Map()), { now: () => new Date() })).toBeUndefined();
  });
});
