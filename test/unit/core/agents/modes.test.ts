/**
 * Modes through the agent kind and the real LLM adapters with recorded responses: Bedrock Converse through
 * `aws-sdk-client-mock`, the OpenAI-compatible chat-completions API through a `fetch` that replays recorded
 * completions. A plan that fails its schema is sent back once with the problems (and what was sent is checked);
 * a deliverable is one breadcrumb per conversation and type, written again — not twice — on a duplicate delivery.
 */

import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { createContextAgent } from '#shared/core/agents/context/context-agent.ts';
import { metered } from '#shared/core/executor/usage-record.ts';
import { governedLlm } from '#shared/core/model-calls/governed-llm.ts';
import { priceTable } from '#shared/domain/llm-usage.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { Harness, implementationsFor } from '../../../support/executor-harness.ts';

const bedrock = mockClient(BedrockRuntimeClient);
beforeEach(() => bedrock.reset());

const PLAN = {
  format: 'json',
  schema: {
    type: 'object',
    required: ['steps'],
    properties: { steps: { type: 'array', minItems: 1, items: { type: 'string' } } },
  },
};

/** As the agent function wires it: every call on the governed path, each invocation metered. */
function setup(router: LlmRouter) {
  const h = new Harness();
  const llm = governedLlm(router, { prices: priceTable() });
  const deps = h.deps({
    implementations: {
      ...implementationsFor(h.store),
      agent: metered(
        createAgentKind({
          types: { context: createContextAgent({ store: h.store, llm }) },
          store: h.store,
          clock: h.clock,
          llm,
          parseYaml,
        }),
      ),
    },
  });
  return { h, deps };
}

const converse = (text: string) => ({
  output: { message: { role: 'assistant' as const, content: [{ text }] } },
  stopReason: 'end_turn' as const,
  usage: { inputTokens: 20, outputTokens: 8, totalTokens: 28 },
  metrics: { latencyMs: 90 },
});

describe('plan mode over Bedrock (recorded Converse responses)', () => {
  it('sends an invalid plan back once with the problems and keeps the corrected one', async () => {
    bedrock
      .on(ConverseCommand)
      .resolvesOnce(converse('{"steps": "all of it"}'))
      .resolvesOnce(converse('```json\n{"steps": ["gather", "write"]}\n```'));
    const llm = new LlmRouter({
      env: { AWS_REGION: 'eu-west-1' },
      bedrockClient: new BedrockRuntimeClient({}),
      maxRetries: 0,
    });
    const { h, deps } = setup(llm);
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: { agent_id: 'planner', model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0', plan: PLAN },
    });
    const trigger = await h.put({
      schema_name: 'agent.request.v1',
      context: { agent: 'planner', message: 'plan the launch', mode: 'plan', request_id: 'r-1' },
    });
    await h.process(def, trigger, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-1');
    expect(answer?.context).toMatchObject({
      status: 'success',
      attempts: 2,
      output: { steps: ['gather', 'write'] },
    });
    const [plan] = await h.list('agent.plan.v1', 'request:r-1');
    expect(plan?.context).toMatchObject({ format: 'json', plan: { steps: ['gather', 'write'] } });

    const calls = bedrock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(2);
    const retry = calls[1]?.args[0].input;
    const last = retry?.messages?.at(-1)?.content?.[0] as { text?: string };
    expect(last.text).toMatch(/^That plan is not valid: steps: .*array/);
    // The schema went into the system prompt (Converse has no schema parameter).
    expect(JSON.stringify(retry?.system ?? [])).toContain(String.raw`\"required\":[\"steps\"]`);
  });

  it('answers with an error after the second invalid plan', async () => {
    bedrock.on(ConverseCommand).resolves(converse('{"steps": []}'));
    const llm = new LlmRouter({
      env: { AWS_REGION: 'eu-west-1' },
      bedrockClient: new BedrockRuntimeClient({}),
      maxRetries: 0,
    });
    const { h, deps } = setup(llm);
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: { agent_id: 'planner', model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0', plan: PLAN },
    });
    const trigger = await h.put({
      schema_name: 'agent.request.v1',
      context: { agent: 'planner', message: 'plan', mode: 'plan', request_id: 'r-2' },
    });
    await h.process(def, trigger, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-2');
    expect(answer?.context).toMatchObject({
      status: 'error',
      error: expect.stringMatching(
        /^the model's plan is not valid after one retry: steps: must NOT have fewer than 1 items$/,
      ),
    });
    expect(await h.list('agent.plan.v1')).toEqual([]);
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(2);
  });

  it("does not make the retry a plan's request budget cannot pay for, and says why", async () => {
    // Each call reports 20 input and 8 output tokens. With no tokenizer the prompt is counted as its UTF-8 bytes
    // (over-counted, never under): 300 pays for the first call's worst case, not the retry's, which carries more.
    bedrock.on(ConverseCommand).resolves(converse('{"steps": []}'));
    const llm = new LlmRouter({
      env: { AWS_REGION: 'eu-west-1' },
      bedrockClient: new BedrockRuntimeClient({}),
      maxRetries: 0,
    });
    const { h, deps } = setup(llm);
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'planner',
        model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
        plan: PLAN,
        budget: { max_tokens_per_request: 300 },
      },
    });
    const trigger = await h.put({
      schema_name: 'agent.request.v1',
      context: { agent: 'planner', message: 'plan', mode: 'plan', request_id: 'r-3' },
    });
    await h.process(def, trigger, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-3');
    expect(answer?.context).toMatchObject({
      status: 'error',
      error: expect.stringMatching(
        /^budget max_tokens_per_request \(300 tokens\) reached: 28 tokens used over 1 call; the next call \(at least \d+ tokens\) was not made$/,
      ),
    });
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(1);
    // The one call was capped to what the budget had left.
    const sent = bedrock.commandCalls(ConverseCommand)[0]?.args[0].input;
    expect(sent?.inferenceConfig?.maxTokens).toBeLessThan(300);
  });
});

describe('build mode over an OpenAI-compatible server (recorded completions)', () => {
  function recordedFetch(answers: string[]) {
    const sent: Record<string, unknown>[] = [];
    const fetch: typeof globalThis.fetch = async (_url, init) => {
      sent.push(JSON.parse(String(init?.body)) as Record<string, unknown>);
      const content = answers[Math.min(sent.length - 1, answers.length - 1)];
      return new Response(
        JSON.stringify({
          id: `chatcmpl-${sent.length}`,
          object: 'chat.completion',
          created: 1_760_000_000,
          model: 'llama-3.1-8b',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
        }),
        { status: 200, headers: { 'content-type': 'application/json' } },
      );
    };
    return { sent, fetch };
  }

  it('checks the sections, retries once, and keeps one deliverable per conversation under duplicates', async () => {
    const recorded = recordedFetch([
      '# Summary\nAll good.',
      '# Summary\nAll good.\n\n# Risks\nNone known.',
      '# Summary\nBetter.\n\n# Risks\nStill none.',
    ]);
    const llm = new LlmRouter({
      env: { OPENAI_COMPATIBLE_BASE_URL: 'http://models.test/v1' },
      fetch: recorded.fetch,
      maxRetries: 0,
    });
    const { h, deps } = setup(llm);
    const def = await h.put({
      schema_name: 'agent.def.v1',
      context: {
        agent_id: 'writer',
        model: 'openai-compatible/llama-3.1-8b',
        deliverable: { format: 'markdown', type: 'memo', sections: ['Summary', 'Risks'] },
      },
    });
    const first = await h.put({
      schema_name: 'agent.request.v1',
      context: { agent: 'writer', message: 'memo', mode: 'build', request_id: 'r-1', conversation_id: 'c-1' },
    });
    await h.process(def, first, deps);
    await h.process(def, first, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-1');
    expect(answer?.context).toMatchObject({ status: 'success', attempts: 2, deliverable_type: 'memo' });
    expect(recorded.sent).toHaveLength(2);
    expect(JSON.stringify(recorded.sent[1]?.messages)).toContain(
      'sections missing (each a heading, in order): Risks',
    );

    const second = await h.put({
      schema_name: 'agent.request.v1',
      context: {
        agent: 'writer',
        message: 'memo again',
        mode: 'build',
        request_id: 'r-2',
        conversation_id: 'c-1',
      },
    });
    await h.process(def, second, deps);
    const deliverables = await h.list('agent.deliverable.v1');
    expect(deliverables).toHaveLength(1);
    expect(deliverables[0]).toMatchObject({
      version: 2,
      context: { content: '# Summary\nBetter.\n\n# Risks\nStill none.' },
    });
    expect(deliverables[0]?.tags).toContain('request:r-2');
  });
});

describe('a function without a model', () => {
  it('answers a plan request with an error that says so', async () => {
    const h = new Harness();
    const llm = new LlmRouter({ env: {}, defaultProvider: 'offline' });
    const deps = h.deps({
      implementations: {
        ...implementationsFor(h.store),
        // As executor-agent-remote and executor-agent-sandbox are wired: no `llm` for the kind.
        agent: createAgentKind({
          types: { context: createContextAgent({ store: h.store, llm }) },
          store: h.store,
          clock: h.clock,
          parseYaml,
        }),
      },
    });
    const def = await h.put({ schema_name: 'agent.def.v1', context: { agent_id: 'caller' } });
    const trigger = await h.put({
      schema_name: 'agent.request.v1',
      context: { agent: 'caller', message: 'plan', mode: 'plan', request_id: 'r-9' },
    });
    await h.process(def, trigger, deps);
    const [answer] = await h.list('agent.response.v1', 'request:r-9');
    expect(answer?.context).toMatchObject({
      status: 'error',
      error: 'plan mode needs a model, and the function running caller has none',
    });
  });
});
