/**
 * Pricing and recording model calls: a call's cost from the price table (own entry, provider `*`, operator
 * override, none), the operator's table checked as the functions read it, the calls of a metered invocation put
 * on one of its outputs with what they served, and the stream's counters built only from crumbs' own writers.
 */
import { describe, expect, it } from 'vitest';
import { LlmEnvSchema, parseEnv } from '#shared/config.ts';
import { metered } from '#shared/core/executor/usage-record.ts';
import { governedLlm } from '#shared/core/model-calls/governed-llm.ts';
import { recordUsage, usageCounters } from '#shared/core/stream/usage-totals.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { callRecord, DEFAULT_PRICES, priceTable } from '#shared/domain/llm-usage.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import type { UsageTotals } from '#shared/ports/usage-totals.ts';
import { ENV } from '#shared/topology.ts';

describe('callRecord', () => {
  it('prices input, cached input and output per million tokens, in whole nano-dollars', () => {
    const table = priceTable();
    expect(
      callRecord(
        'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
        { inputTokens: 1000, outputTokens: 200, cachedInputTokens: 400 },
        table,
      ),
    ).toEqual({
      model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
      input_tokens: 1000,
      output_tokens: 200,
      cached_tokens: 400,
      // 600 × 0.8 + 400 × 0.08 + 200 × 4 = 1312 micro-dollars
      cost_nusd: 1_312_000,
    });
    expect(callRecord('offline/crumbs', { inputTokens: 50, outputTokens: 5 }, table).cost_nusd).toBe(0);
    // No price: tokens counted, cost absent (never a made-up 0).
    expect(callRecord('openai-compatible/x', { inputTokens: 3, outputTokens: undefined }, table)).toEqual({
      model: 'openai-compatible/x',
      input_tokens: 3,
      output_tokens: 0,
      cached_tokens: 0,
    });
  });

  it('names a source for every default price', () => {
    for (const [model, price] of Object.entries(DEFAULT_PRICES)) expect(price.source, model).toBeTruthy();
  });

  it("takes the operator's table over the defaults, and refuses a bad one naming the setting", () => {
    const env = (prices: string | undefined) =>
      parseEnv(LlmEnvSchema, {
        [ENV.defaultLlmProvider]: 'offline',
        ...(prices !== undefined ? { [ENV.llmPrices]: prices } : {}),
      })[ENV.llmPrices];
    expect(env(undefined)).toEqual(DEFAULT_PRICES);
    expect(env('')).toEqual(DEFAULT_PRICES);
    const table = env(
      JSON.stringify({
        'openai/gpt-4o-mini': { input: 1, output: 2 },
        'ollama/*': { input: 0.1, output: 0.1 },
      }),
    );
    expect(table['openai/gpt-4o-mini']).toEqual({ input: 1, output: 2 });
    expect(callRecord('ollama/llama3', { inputTokens: 10, outputTokens: 10 }, table).cost_nusd).toBe(2000);
    expect(table['bedrock/amazon.nova-lite-v1:0']).toEqual(DEFAULT_PRICES['bedrock/amazon.nova-lite-v1:0']);
    for (const bad of [
      '[]',
      '{"gpt-4": {"input": 1, "output": 1}}',
      '{"openai/x": {"input": -1, "output": 1}}',
      '{"openai/x": {"input": 1}}',
      'nope',
    ]) {
      expect(() => env(bad), bad).toThrow(/CRUMBS_LLM_PRICES|environment/);
    }
  });
});

const model: LlmClient = {
  generate: async () => ({
    text: 'ok',
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 100, outputTokens: 10, cachedInputTokens: 20 },
    model: 'openai/gpt-4o-mini',
  }),
};

const input = {
  definition: {},
  definitionRef: { id: 'agent-helper', version: 1 },
  principal: 'agent:helper',
  trigger: {
    id: 't1',
    version: 1,
    workspace: 'ws',
    schema_name: 'tool.response.v1',
    tags: ['run:r-from-trigger'],
    created_by: 'tool:echo',
  },
  context: {},
  causation: { caused_by: 't1@1', thread: 'th1', hop: 1 },
  signal: new AbortController().signal,
} as never;

describe('metered', () => {
  const llm = governedLlm(model, { prices: priceTable() });

  it("puts the invocation's calls on its answer, with the request and run the turn serves", async () => {
    const kind = metered({
      errorOutput: () => ({ schema_name: 'x', context: {} }),
      async execute() {
        await llm.generate({ model: 'm', system: '', messages: [] });
        await llm.generate({ model: 'm', system: '', messages: [] });
        return {
          outputs: [
            {
              schema_name: 'agent.conversation.v1',
              context: { request_id: 'req-1', answer_tags: ['run:r-1'] },
            },
            { schema_name: 'agent.response.v1', tags: ['agent:response'], context: { message: 'hi' } },
          ],
        };
      },
    });
    const { outputs } = await kind.execute(input);
    expect(outputs[0]!.context).not.toHaveProperty('llm_usage');
    const call = {
      model: 'openai/gpt-4o-mini',
      input_tokens: 100,
      output_tokens: 10,
      cached_tokens: 20,
      cost_nusd: 19_500,
    };
    expect(outputs[1]!.context.llm_usage).toEqual({
      agent_id: 'helper',
      thread: 'th1',
      request_id: 'req-1',
      run_id: 'r-1',
      calls: [call, call],
    });
  });

  it('drops a record copied from an earlier invocation, so a conversation written again is not counted again', async () => {
    const stale = {
      agent_id: 'helper',
      calls: [{ model: 'm', input_tokens: 22, output_tokens: 0, cached_tokens: 0 }],
    };
    // Without model calls: every output loses the stale record (a function agent cannot claim calls either).
    const none = metered({
      errorOutput: () => ({ schema_name: 'x', context: {} }),
      execute: async () => ({
        outputs: [
          { schema_name: 'agent.conversation.v1', context: { status: 'answered', llm_usage: stale } },
        ],
      }),
    });
    expect((await none.execute(input)).outputs[0]!.context).toEqual({ status: 'answered' });
    // With a call: only this invocation's record rides, on its carrier.
    const one = metered({
      errorOutput: () => ({ schema_name: 'x', context: {} }),
      async execute() {
        await llm.generate({ model: 'm', system: '', messages: [] });
        return {
          outputs: [
            { schema_name: 'agent.response.v1', context: { message: 'hi' } },
            { schema_name: 'agent.conversation.v1', context: { status: 'answered', llm_usage: stale } },
          ],
        };
      },
    });
    const { outputs } = await one.execute(input);
    expect((outputs[0]!.context.llm_usage as { calls: unknown[] }).calls).toHaveLength(1);
    expect(outputs[1]!.context).not.toHaveProperty('llm_usage');
  });

  it('leaves an invocation without model calls as it was, and refuses a call made outside one', async () => {
    const result = { outputs: [{ schema_name: 'tool.response.v1', context: { ok: true } }] };
    const kind = metered({ errorOutput: () => result.outputs[0]!, execute: async () => result });
    expect(await kind.execute(input)).toBe(result);
    // No invocation, no budget to answer to: the call is not made (a call site that skips metered() fails).
    await expect(llm.generate({ model: 'm', system: '', messages: [] })).rejects.toThrow(
      /outside an executor invocation was refused/,
    );
  });
});

describe('usageCounters', () => {
  const crumb = (updatedBy: string, usage: unknown): { record: Breadcrumb; sequence: string } => ({
    sequence: '1',
    record: {
      id: 'a',
      workspace: 'ws',
      schema_name: 'agent.response.v1',
      title: '',
      tags: [],
      context: { llm_usage: usage },
      version: 2,
      checksum: '',
      created_at: '2026-11-26T03:04:05.000Z',
      updated_at: '2026-11-26T04:05:06.000Z',
      created_by: updatedBy,
      updated_by: updatedBy,
    },
  });
  const usage = {
    agent_id: 'someone-else',
    thread: 'th',
    run_id: 'r',
    calls: [{ model: 'm', input_tokens: 5, output_tokens: 1, cached_tokens: 0, cost_nusd: 7 }],
  };

  it("counts a crumbs writer's record for its writer, per hour, and nothing a person or malformed record claims", () => {
    const counters = usageCounters([crumb('agent:helper', usage)]);
    expect(counters.map((c) => `${c.counter.dimension}:${c.counter.key}@${c.counter.hour}`)).toEqual([
      'day:*@2026-11-26T04',
      'agent:helper@2026-11-26T04',
      'run:r@2026-11-26T04',
      'thread:th@2026-11-26T04',
    ]);
    expect(counters[0]!.contributions).toEqual([
      {
        id: 'a@2',
        amounts: {
          calls: 1,
          input_tokens: 5,
          output_tokens: 1,
          cached_tokens: 0,
          cost_nusd: 7,
          unpriced_calls: 0,
        },
      },
    ]);
    expect(usageCounters([crumb('user:mallory', usage)])).toEqual([]);
    expect(
      usageCounters([crumb('agent:helper', { ...usage, calls: [{ model: 'm', input_tokens: -5 }] })]),
    ).toEqual([]);
    expect(usageCounters([crumb('agent:helper', 'lots')])).toEqual([]);
  });
});

describe('recordUsage', () => {
  const write = (id: string, sequence: string, thread: string) => ({
    sequence,
    record: {
      id,
      workspace: 'ws',
      schema_name: 'agent.response.v1',
      title: '',
      tags: [],
      context: {
        llm_usage: {
          agent_id: 'helper',
          thread,
          calls: [{ model: 'm', input_tokens: 1, output_tokens: 1, cached_tokens: 0 }],
        },
      },
      version: 1,
      checksum: '',
      created_at: '2026-11-26T04:00:00.000Z',
      updated_at: '2026-11-26T04:00:00.000Z',
      created_by: 'agent:helper',
      updated_by: 'agent:helper',
    } as Breadcrumb,
  });

  it('hands the batch over again from the first record of a counter it could not add to', async () => {
    const added: string[] = [];
    const totals: UsageTotals = {
      async add(_ws, counter) {
        if (counter.dimension === 'thread' && counter.key === 't2') throw new Error('throttled');
        added.push(`${counter.dimension}:${counter.key}`);
      },
      read: async () => ({ rows: [], truncated: false }),
    };
    const failed = await recordUsage(
      [write('a', '101', 't1'), write('b', '102', 't2'), write('c', '103', 't2')],
      totals,
    );
    expect(failed).toBe('102');
    expect(added.sort()).toEqual(['agent:helper', 'day:*', 'thread:t1']);
    expect(await recordUsage([write('a', '101', 't1')], totals)).toBeUndefined();
  });
});
