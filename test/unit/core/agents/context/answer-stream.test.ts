/**
 * A context agent's turn for a request that streams (`stream_id`): the model call gets `onDelta`, the deltas reach
 * the request's sink in order, a tool round ends the round's text, the final event names the written answer once
 * the pipeline reports the write, and a cancel written while the model writes aborts the call and answers
 * `cancelled`. A request without `stream_id` opens no sink and reads nothing more.
 */
import { describe, expect, it } from 'vitest';
import type { StreamSink } from '#shared/core/agents/context/answer-stream.ts';
import { createContextAgentKind } from '#shared/core/agents/context/turn.ts';
import type { AfterWrite, ExecutionInput } from '#shared/core/executor/contract.ts';
import { type Breadcrumb, checksumOf } from '#shared/domain/breadcrumb.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { cancelIdOf } from '#shared/domain/streaming.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';

const WS = 'ws';

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

function store(records: Breadcrumb[], reads: string[]): BreadcrumbStore {
  const get = async (_ws: string, id: string) => {
    reads.push(id);
    const r = records.find((x) => x.id === id);
    if (!r) throw new NotFoundError(`no ${id}`);
    return r;
  };
  return {
    get,
    getContextView: get,
    list: async () => ({ items: [], next_cursor: null }),
    contextViews: async (_ws: string, rs: readonly Breadcrumb[]) => [...rs],
  } as Partial<BreadcrumbStore> as BreadcrumbStore;
}

function agentDef(): AgentDefinition {
  const parsed = parseDefinition('agent.def.v1', {
    agent_id: 'talker',
    system_prompt: 'Talk.',
    model: 'test/x',
  });
  if (parsed.kind !== 'agent') throw new Error('not an agent');
  return parsed.definition;
}

function requestInput(streamId?: string) {
  const trigger = record({
    id: 'req-1',
    schema_name: 'agent.request.v1',
    context: { agent: 'talker', message: 'hi', ...(streamId ? { stream_id: streamId } : {}) },
  });
  const afterWrites: AfterWrite[] = [];
  const input: ExecutionInput<AgentDefinition> = {
    definition: agentDef(),
    definitionRef: { id: 'agent-def', version: 1, workspace: WS, kind: 'agent', schema_name: 'agent.def.v1' },
    principal: 'agent:talker',
    trigger: { ...trigger, workspace: WS },
    context: { trigger: trigger.context },
    causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
    signal: new AbortController().signal,
    afterWrite: (callback) => afterWrites.push(callback),
  };
  return { input, afterWrites };
}

/** A model that streams its words, waiting `gapMs` between them, and honours the abort. */
function wordsModel(words: string[], gapMs = 0): LlmClient & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    requests,
    async generate(request) {
      requests.push(request);
      for (const word of words) {
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        request.signal?.throwIfAborted();
        request.onDelta?.({ type: 'text', text: word });
      }
      return {
        text: words.join(''),
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: 3, outputTokens: words.length },
        model: request.model,
      };
    },
  };
}

function recordingSink() {
  const events: unknown[][] = [];
  const opened: string[] = [];
  const open = async (workspace: string, streamId: string): Promise<StreamSink> => {
    opened.push(`${workspace}/${streamId}`);
    return {
      close: async () => {
        events.push(['close']);
      },
      write: (text) => events.push(['delta', text]),
      reset: (reason) => events.push(['reset', reason]),
      final: async (status, answerId) => {
        events.push(['final', status, answerId]);
      },
    };
  };
  return { events, opened, open };
}

describe('a streaming turn', () => {
  it('streams the words in order and names the written answer last', async () => {
    const reads: string[] = [];
    const sink = recordingSink();
    const llm = wordsModel(['Hello', ' there', '!']);
    const kind = createContextAgentKind({ store: store([], reads), llm, streams: sink.open });
    const { input, afterWrites } = requestInput('stream-abc-123');
    const { outputs } = await kind.execute(input);
    expect(outputs[0]?.context).toMatchObject({ message: 'Hello there!', status: 'success' });
    expect(sink.opened).toEqual(['ws/stream-abc-123']);
    expect(sink.events).toEqual([
      ['delta', 'Hello'],
      ['delta', ' there'],
      ['delta', '!'],
    ]);
    expect(afterWrites).toHaveLength(1);
    await afterWrites[0]?.({ outputIds: ['resp-1', 'agconv-1'] });
    expect(sink.events.at(-1)).toEqual(['final', 'completed', 'resp-1']);
    // The one cancel lookup, at the first delta; none again within the second.
    expect(reads).toEqual([cancelIdOf(WS, 'stream-abc-123')]);
  });

  it('a failed execution still ends the stream, naming the error answer', async () => {
    const sink = recordingSink();
    const kind = createContextAgentKind({ store: store([], []), llm: wordsModel(['x']), streams: sink.open });
    const { input, afterWrites } = requestInput('stream-abc-123');
    await kind.execute(input);
    await afterWrites[0]?.({ outputIds: ['err-1'], failure: 'boom' });
    expect(sink.events.at(-1)).toEqual(['final', 'failed', 'err-1']);
  });

  it('a cancel written while the model writes aborts the call and answers cancelled', async () => {
    const reads: string[] = [];
    const cancel = record({
      id: cancelIdOf(WS, 'stream-abc-123'),
      schema_name: 'request.cancel.v1',
      context: { request_id: 'req-1', reason: 'enough' },
      created_by: 'user:alice',
    });
    const sink = recordingSink();
    const words = Array.from({ length: 50 }, (_, i) => `w${i} `);
    const llm = wordsModel(words, 5);
    const kind = createContextAgentKind({ store: store([cancel], reads), llm, streams: sink.open });
    const { input, afterWrites } = requestInput('stream-abc-123');
    const { outputs } = await kind.execute(input);
    expect(outputs[0]?.context).toMatchObject({
      status: 'cancelled',
      cancelled_by: 'user:alice',
      cancel_reason: 'enough',
      message: 'cancelled by user:alice: enough',
    });
    const deltas = sink.events.filter((e) => e[0] === 'delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.length).toBeLessThan(words.length);
    await afterWrites[0]?.({ outputIds: ['resp-1'] });
    expect(sink.events.at(-1)).toEqual(['final', 'cancelled', 'resp-1']);
  });

  it('a cancel an agent or a plain put wrote under that id stops nothing: only a person cancels', async () => {
    for (const writer of ['agent:meddler', 'tool:echo', 'user:plain-put']) {
      const forged = record({
        id: cancelIdOf(WS, 'stream-abc-123'),
        schema_name: 'request.cancel.v1',
        context: { request_id: 'req-1' },
        created_by: writer,
      });
      const sink = recordingSink();
      const kind = createContextAgentKind({
        store: store([forged], []),
        llm: wordsModel(['a ', 'b ', 'c'], 2),
        streams: sink.open,
      });
      const { outputs } = await kind.execute(requestInput('stream-abc-123').input);
      expect(outputs[0]?.context).toMatchObject({ status: 'success', message: 'a b c' });
    }
  });

  it('a request without stream_id opens no sink, passes no onDelta and reads nothing for a cancel', async () => {
    const reads: string[] = [];
    const sink = recordingSink();
    const llm = wordsModel(['Hi']);
    const kind = createContextAgentKind({ store: store([], reads), llm, streams: sink.open });
    const { input, afterWrites } = requestInput();
    await kind.execute(input);
    expect(sink.opened).toEqual([]);
    expect(llm.requests[0]?.onDelta).toBeUndefined();
    expect(afterWrites).toEqual([]);
    expect(reads).toEqual([]);
  });

  it('a bad stream_id is refused naming the field', async () => {
    const kind = createContextAgentKind({
      store: store([], []),
      llm: wordsModel(['Hi']),
      streams: recordingSink().open,
    });
    const { input } = requestInput('no spaces!');
    await expect(kind.execute(input)).rejects.toThrow(/stream_id/);
  });
});
