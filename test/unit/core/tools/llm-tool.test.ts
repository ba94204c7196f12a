/**
 * The `llm` built-in tool as the tool function runs it (metered, on the governed model client): the definition's
 * model is the one called — a request's `input.model` only when it names it again or one of `config.allowed_models`
 * (refused naming the field otherwise) —, `config.budget` and a request's share are checked before the call, the
 * workspace's daily budget refuses it once spent, and bad config is refused when the definition is written.
 */
import { describe, expect, it } from 'vitest';
import { llmTool } from '#shared/core/context-builder/context-builder-kind.ts';
import type { ExecutionInput } from '#shared/core/executor/contract.ts';
import { metered } from '#shared/core/executor/usage-record.ts';
import { dailyBudget } from '#shared/core/model-calls/daily-budget.ts';
import { governedLlm } from '#shared/core/model-calls/governed-llm.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import { parseDefinition, type ToolDefinition } from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import { silentLog } from '#shared/ports/log.ts';
import { toolCatalog } from '#shared/tools/catalog.ts';
import { InMemorySpendCounters } from '../../../support/memory/spend-counters.ts';

const PRICES = { 'test/*': { input: 1, output: 5 } };

/** A model that answers every call with 100 input and 20 output tokens (or its cap, when lower). */
function model() {
  const requests: LlmRequest[] = [];
  const client: LlmClient = {
    async generate(request) {
      requests.push(request);
      return {
        text: `answered by ${request.model}`,
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: 100, outputTokens: Math.min(20, request.maxOutputTokens ?? 20) },
        model: request.model,
      };
    },
  };
  return { client, requests };
}

function kind(llm: LlmClient, spent?: InMemorySpendCounters) {
  const daily =
    spent === undefined
      ? undefined
      : dailyBudget(
          { default: 0.001 },
          { counters: spent, clock: { now: () => new Date('2026-03-01T00:00:00Z') } },
        );
  const governed = governedLlm(llm, { prices: PRICES, daily });
  return metered(
    createToolKind({
      store: {} as ExecutorStore,
      log: silentLog,
      clock: systemClock,
      tools: toolCatalog([llmTool(governed)]),
    }),
  );
}

function execution(
  config: Record<string, unknown>,
  input: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): ExecutionInput<ToolDefinition> {
  const parsed = parseDefinition('tool.def.v1', { name: 'ask', implementation: 'llm', config });
  if (parsed.kind !== 'tool') throw new Error('not a tool');
  return {
    definition: parsed.definition,
    definitionRef: { id: 'tool-ask', version: 1, workspace: 'ws', kind: 'tool', schema_name: 'tool.def.v1' },
    principal: 'tool:ask',
    trigger: {
      id: 'req-1',
      schema_name: 'tool.request.v1',
      title: '',
      tags: [],
      version: 1,
      updated_at: '2026-03-01T00:00:00.000Z',
      context: { tool: 'ask', input, requestId: 'r-1', requestedBy: 'agent:a', ...extra },
      workspace: 'ws',
      created_by: 'agent:a',
    },
    context: {},
    causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
    signal: new AbortController().signal,
  };
}

const answerOf = async (k: ReturnType<typeof kind>, e: ExecutionInput<ToolDefinition>) =>
  (await k.execute(e)).outputs[0]?.context as Record<string, unknown>;

describe('the llm tool', () => {
  it('runs the definition’s model and refuses a request’s other model, naming input.model', async () => {
    const m = model();
    const tool = kind(m.client);
    expect(await answerOf(tool, execution({ model: 'test/chosen' }, { prompt: 'hi' }))).toMatchObject({
      status: 'success',
      output: { text: 'answered by test/chosen' },
    });
    // Naming the configured model again is fine.
    await answerOf(tool, execution({ model: 'test/chosen' }, { prompt: 'hi', model: 'test/chosen' }));
    const refused = await answerOf(
      tool,
      execution({ model: 'test/chosen' }, { prompt: 'hi', model: 'test/pricey' }),
    );
    expect(refused).toMatchObject({ status: 'error' });
    expect(String(refused.error)).toBe(
      'input.model "test/pricey" is not allowed: this tool runs config.model "test/chosen"; the definition may list the models a request may choose in config.allowed_models',
    );
    // Without config.model the stack's default model is the definition's choice: still no override.
    const noModel = await answerOf(tool, execution({}, { prompt: 'hi', model: 'test/pricey' }));
    expect(String(noModel.error)).toMatch(
      /^input\.model "test\/pricey" is not allowed: this tool runs the stack's default model/,
    );
    expect(m.requests.map((r) => r.model)).toEqual(['test/chosen', 'test/chosen']);
  });

  it('lets a request choose one of config.allowed_models', async () => {
    const m = model();
    const tool = kind(m.client);
    const config = { model: 'test/small', allowed_models: ['test/large'] };
    expect(await answerOf(tool, execution(config, { prompt: 'hi', model: 'test/large' }))).toMatchObject({
      status: 'success',
      output: { text: 'answered by test/large' },
    });
    const other = await answerOf(tool, execution(config, { prompt: 'hi', model: 'test/huge' }));
    expect(String(other.error)).toContain('or one of config.allowed_models (test/large)');
  });

  it('checks config.budget, and a request’s share, before the call', async () => {
    const m = model();
    const tool = kind(m.client);
    const refused = await answerOf(
      tool,
      execution(
        { model: 'test/m', budget: { max_tokens_per_request: 10 } },
        { prompt: 'a prompt longer than ten bytes' },
      ),
    );
    expect(String(refused.error)).toMatch(
      /^budget max_tokens_per_request \(10 tokens\) reached: 0 tokens used over 0 calls; the next call \(at least \d+ tokens\) was not made$/,
    );
    // A share carried by the request only lowers the tool's own budget.
    const share = await answerOf(
      tool,
      execution({ model: 'test/m' }, { prompt: 'hi' }, { budget: { max_cost_nusd: 1000, of: 'run r-1' } }),
    );
    expect(String(share.error)).toMatch(/^budget limits\.max_cost_usd of run r-1 \(\$0\.000001\) reached/);
    expect(m.requests).toHaveLength(0);
    // Within budget, the call is capped to what remains.
    await answerOf(
      tool,
      execution({ model: 'test/m', budget: { max_tokens_per_request: 1000 } }, { prompt: 'hi' }),
    );
    expect(m.requests[0]?.maxOutputTokens).toBeLessThan(1000);
  });

  it('is refused once the workspace’s daily budget is spent', async () => {
    const m = model();
    const spent = new InMemorySpendCounters();
    spent.items.set('ws/daily#2026-03-01', { committed: 1_000_000, spent: 1_000_000, calls: 7 });
    const refused = await answerOf(kind(m.client, spent), execution({ model: 'test/m' }, { prompt: 'hi' }));
    expect(String(refused.error)).toMatch(
      /^budget CRUMBS_DAILY_BUDGETS \(workspace ws, today UTC\) \(\$0\.001000\) reached: \$0\.001000 used over 7 calls/,
    );
    expect(m.requests).toHaveLength(0);
  });

  it('refuses bad config when the definition is written, naming the field', () => {
    const parse = (config: unknown) => () =>
      parseDefinition('tool.def.v1', { name: 'ask', implementation: 'llm', config });
    expect(parse({ allowed_models: 'test/large' })).toThrow(ValidationError);
    expect(parse({ allowed_models: 'test/large' })).toThrow(/config\.allowed_models/);
    expect(parse({ allowed_models: [] })).toThrow(/config\.allowed_models: list at least one model/);
    expect(parse({ model: 7 })).toThrow(/config\.model/);
    expect(parse({ budget: { max_cost_usd_per_request: -1 } })).toThrow(
      /config\.budget\.max_cost_usd_per_request/,
    );
    expect(
      parse({ model: 'test/m', allowed_models: ['test/n'], budget: { max_tokens_per_request: 500 } }),
    ).not.toThrow();
    // Another tool's config is its own business.
    expect(() =>
      parseDefinition('tool.def.v1', { name: 'echo', config: { allowed_models: 3 } }),
    ).not.toThrow();
  });
});
