/**
 * Request budgets of a context agent's turn, with a scripted model whose usage is known: a runaway agent (a model
 * that asks for another tool round on every call) is stopped before the call that would cross its budget, the
 * answer names the budget and the exact figures, each call's output is capped to what remains, and a run's share
 * carried by the request can lower the agent's budget but never raise it.
 */
import { describe, expect, it } from 'vitest';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import type { ExecutionInput } from '#shared/core/executor/contract.ts';
import { dailyBudget } from '#shared/core/model-calls/daily-budget.ts';
import { governedLlm, inInvocation } from '#shared/core/model-calls/governed-llm.ts';
import { type Breadcrumb, checksumOf } from '#shared/domain/breadcrumb.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore, ListQuery } from '#shared/ports/breadcrumb-store.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { ENV } from '#shared/topology.ts';
import { InMemorySpendCounters } from '../../../../support/memory/spend-counters.ts';

const WS = 'ws';
const NOW = { now: () => new Date('2026-01-01T10:00:00Z') };
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

async function run(def: AgentDefinition, budget?: Record<string, unknown>, spent?: InMemorySpendCounters) {
  const llm = runaway();
  // With spend counters: every call on the governed path, as in the agent function, under a $0.001 daily budget.
  const daily = dailyBudget(
    { default: 0.001 },
    { counters: spent ?? new InMemorySpendCounters(), clock: NOW },
  );
  const client = spent === undefined ? llm : governedLlm(llm, { prices: PRICES, daily });
  const kind = createContextAgentKind({
    store: store([tool]),
    llm: client,
    tokenizers: tinyTokenizers,
    prices: PRICES,
  });
  const { outputs } = await inInvocation(WS, {}, () => kind.execute(requestInput(def, budget)));
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
  it('refuses a turn’s call with an answer naming the budget, the day’s spend and the limit', async () => {
    const spent = new InMemorySpendCounters();
    spent.items.set(`${WS}/daily#2026-01-01`, { committed: 1_500_000, spent: 1_500_000, calls: 1 });
    const { llm, answer } = await run(agentDef(), undefined, spent);
    expect(llm.requests).toHaveLength(0);
    expect(String(answer.error)).toMatch(
      new RegExp(
        `^budget ${ENV.dailyBudgets} \\(workspace ws, today UTC\\) \\(\\$0\\.001000\\) reached: \\$0\\.001500 used over 1 call; the next call \\(at least \\$0\\.\\d{6}\\) was not made$`,
      ),
    );
    expect(answer.budget_stop).toMatchObject({ limit: 1_000_000, used: 1_500_000, unit: 'usd', calls: 1 });
  });
});
