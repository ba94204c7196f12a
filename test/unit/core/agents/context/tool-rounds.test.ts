/**
 * An agent's tool rounds through the real pipeline on the in-memory store: which calls become requests (only the
 * agent's own tools), and that a turn using every round it is allowed ends in an answer, not a loop stop.
 */
import { describe, expect, it } from 'vitest';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { LOOP_STOPPED_SCHEMA } from '#shared/domain/protocol.ts';
import type { LlmClient, LlmRequest, LlmResponse, LlmToolCall } from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import { Harness, tools } from '../../../../support/executor-harness.ts';

/** A model that asks for `calls(round)` until it has seen `rounds` tool results, then says what it saw. */
function model(
  rounds: number,
  calls: (round: number) => LlmToolCall[],
): LlmClient & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    requests,
    async generate(request): Promise<LlmResponse> {
      requests.push(request);
      const results = request.messages.flatMap((m) => (m.role === 'tool' ? m.results : []));
      const round = request.messages.filter((m) => m.role === 'tool').length;
      const base = { usage: { inputTokens: 1, outputTokens: 1 }, model: 'test/scripted' };
      if (round < rounds) {
        return { ...base, text: '', toolCalls: calls(round + 1), finishReason: 'tool-calls' };
      }
      const seen = results.map(
        (r) => `${r.toolName}${r.isError ? ' failed' : ''}: ${JSON.stringify(r.output)}`,
      );
      return {
        ...base,
        text: `done after ${round} rounds; ${seen.join(' | ')}`,
        toolCalls: [],
        finishReason: 'stop',
      };
    },
  };
}

const call = (name: string, round: number, n = 1): LlmToolCall => ({
  id: `c${round}-${n}`,
  name,
  input: { round },
});

async function setup(h: Harness, llm: LlmClient, log: Log = silentLog) {
  const agent = await h.put({
    schema_name: 'agent.def.v1',
    context: {
      agent_id: 'helper',
      model: 'test/scripted',
      tools: ['echo'],
      subscriptions: {
        selectors: [
          { schema_name: 'user.message.v1', role: 'trigger' },
          {
            schema_name: 'tool.response.v1',
            role: 'trigger',
            context_match: [{ path: '$.requestedBy', op: 'eq', value: 'helper' }],
          },
        ],
      },
    },
  });
  const echo = await h.toolDef('echo');
  const calculator = await h.toolDef('calculator');
  const deps = h.deps({
    implementations: {
      agent: createContextAgentKind({ store: h.store, llm, log }),
      tool: createToolKind({ store: h.store, log: silentLog, clock: h.clock, tools }),
    },
  });
  return { agent, echo, calculator, deps };
}

/** Plays the thread hop by hop, as routing would, until nothing new is written; returns every breadcrumb. */
async function play(
  h: Harness,
  start: Breadcrumb,
  routes: Record<string, Breadcrumb>,
  deps: ReturnType<Harness['deps']>,
) {
  const queue = [start];
  const seen = new Set<string>();
  for (let steps = 0; queue.length > 0 && steps < 100; steps++) {
    const trigger = queue.shift()!;
    const definitions =
      trigger.schema_name === 'tool.request.v1'
        ? [routes[String(trigger.context.tool)]].filter((d): d is Breadcrumb => d !== undefined)
        : [routes.agent!];
    for (const definition of definitions) {
      const outcome = await h.process(definition, trigger, deps);
      if (outcome.status !== 'responded' && outcome.status !== 'loop-stopped') continue;
      for (const id of outcome.outputIds) {
        const written = await h.store.get(h.workspace, id);
        const key = `${written.id}@${written.version}`;
        if (seen.has(key) || !['tool.request.v1', 'tool.response.v1'].includes(written.schema_name)) continue;
        seen.add(key);
        queue.push(written);
      }
    }
  }
}

describe('agent tool rounds through the pipeline', () => {
  it('uses all 8 rounds under the default hop limit and answers with agent.response.v1', async () => {
    const h = new Harness();
    const llm = model(8, (round) => [call('echo', round)]);
    const { agent, echo, deps } = await setup(h, llm);
    const message = await h.put({ schema_name: 'user.message.v1', context: { message: 'go' } });

    await play(h, message, { agent, echo }, deps);

    expect(await h.list(LOOP_STOPPED_SCHEMA)).toEqual([]);
    const [answer] = await h.list('agent.response.v1');
    expect(answer?.context).toMatchObject({ tool_rounds: 8, refused_tool_calls: 0 });
    expect(String(answer?.context.message)).toMatch(/^done after 8 rounds/);
    // Every round wrote at the hop of the turn's start + 1, however many rounds it took.
    const requests = await h.list('tool.request.v1');
    expect(requests).toHaveLength(8);
    expect(new Set(requests.map((r) => r.causation?.hop))).toEqual(new Set([1]));
    expect(answer?.causation?.hop).toBe(1);
  });

  it('never turns a call to a tool it was not given into a request, and tells the model', async () => {
    const h = new Harness();
    const llm = model(1, (round) => [call('calculator', round)]);
    const warnings: unknown[] = [];
    const log: Log = { ...silentLog, warn: (message, ...extra) => warnings.push({ message, ...extra[0] }) };
    const { agent, echo, calculator, deps } = await setup(h, llm, log);
    const message = await h.put({ schema_name: 'user.message.v1', context: { message: 'what is 2+2?' } });

    await play(h, message, { agent, echo, calculator }, deps);

    expect(await h.list('tool.request.v1')).toEqual([]);
    expect(await h.list('tool.response.v1')).toEqual([]);
    const [answer] = await h.list('agent.response.v1');
    expect(answer?.context).toMatchObject({ refused_tool_calls: 1, tool_rounds: 1 });
    expect(String(answer?.context.message)).toContain(
      'calculator failed: "the tool \\"calculator\\" is not available to this agent (its tools: echo)',
    );
    expect(llm.requests[1]?.messages.at(-1)).toMatchObject({
      role: 'tool',
      results: [{ toolCallId: 'c1-1', toolName: 'calculator', isError: true }],
    });
    expect(warnings).toEqual([
      expect.objectContaining({
        message: expect.stringContaining('refused a tool call'),
        tool: 'calculator',
      }),
    ]);
  });

  it('runs the allowed calls of a round and answers the refused ones with them, in call order', async () => {
    const h = new Harness();
    const llm = model(1, (round) => [call('calculator', round, 1), call('echo', round, 2)]);
    const { agent, echo, calculator, deps } = await setup(h, llm);
    const message = await h.put({ schema_name: 'user.message.v1', context: { message: 'both' } });

    await play(h, message, { agent, echo, calculator }, deps);

    expect((await h.list('tool.request.v1')).map((r) => r.context.tool)).toEqual(['echo']);
    expect(llm.requests[1]?.messages.at(-1)).toMatchObject({
      role: 'tool',
      results: [
        { toolCallId: 'c1-1', toolName: 'calculator', isError: true },
        { toolCallId: 'c1-2', toolName: 'echo', output: { round: 1 } },
      ],
    });
    const [answer] = await h.list('agent.response.v1');
    expect(answer?.context).toMatchObject({ refused_tool_calls: 1, tool_rounds: 1 });
  });
});
