/**
 * An agent's answer as MCP progress, with the SDK's client over Streamable HTTP (its fetch handed straight to the
 * endpoint's handler, the SSE body read as it is produced), the API on an in-memory store and a scripted channel
 * standing in for the agent executor:
 * - the endpoint subscribes to the request's stream with the caller's token before it writes the request, which
 *   carries that stream's id; each delta is a progress notification whose message is the chunk, a reset one that
 *   says the answer starts over (`crumbs/reset`), `progress` grows; then the tool result;
 * - a channel that cannot be subscribed to changes nothing but the notifications: the call answers with JSON, unstreamed;
 * - without a progress token the call gets JSON and the request no stream id.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Caller, HttpResult } from '#shared/core/api/http.ts';
import type { ChannelSubscribe } from '#shared/core/api/streaming-deps.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';

const WS = 'ws';
const ann: Caller = { principal: 'user:ann', workspaces: [WS] };
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

type Script = (emit: (event: DeltaEvent) => void) => Promise<void>;

async function setup(options: { script?: Script; subscribeFails?: boolean } = {}) {
  const { store, api } = inMemoryApi();
  const log: string[] = [];
  const listeners = new Map<string, (event: DeltaEvent) => void>();
  const subscribe: ChannelSubscribe = async (workspace, streamId, authorization, onEvent) => {
    log.push(`subscribe ${workspace} ${authorization}`);
    if (options.subscribeFails) throw new Error('the channel is down');
    listeners.set(streamId, onEvent);
    return { close: () => listeners.delete(streamId), done: new Promise(() => undefined) };
  };
  // The agent executor's part: the request's stream gets the script's events, then the answer is stored.
  const executor = async (request: { id: string; context: Record<string, unknown> }) => {
    const streamId = request.context.stream_id;
    const emit = (event: DeltaEvent) => {
      if (typeof streamId === 'string') listeners.get(streamId)?.(event);
    };
    await options.script?.(emit);
    await store.create(
      WS,
      {
        schema_name: 'agent.response.v1',
        title: 'answer',
        tags: [`request:${request.id}`],
        context: { status: 'success', message: 'Hello world' },
      },
      { principal: 'agent:teller' },
    );
  };
  const mcp = createMcpHttp({
    baseUrl: 'http://mcp.test',
    api: async (request) => {
      const answered = await api(request);
      const body = (typeof answered.body === 'string' ? JSON.parse(answered.body) : undefined) as
        | { schema_name?: string; id: string; context: Record<string, unknown> }
        | undefined;
      if (request.method === 'POST' && body?.schema_name === 'agent.request.v1') {
        log.push(`request written, stream_id ${String(body.context.stream_id ?? 'none')}`);
        void executor(body);
      }
      return answered;
    },
    subscribe,
    pollMs: { first: 10, max: 20 },
  });
  await activeDefinition(store, WS, 'agent-teller', 'agent.def.v1', {
    agent_id: 'teller',
    system_prompt: 'Tell.',
    model: 'offline/echo',
  });
  const contentTypes: string[] = [];
  const client = new Client({ name: 'streaming', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`http://mcp.test/v1/workspaces/${WS}/mcp`), {
    fetch: async (input, init) => {
      const url = new URL(String(input));
      const headers: Record<string, string> = { host: url.host, authorization: 'Bearer ann-token' };
      new Headers(init?.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const result = await mcp({
        method: init?.method ?? 'GET',
        path: url.pathname,
        headers,
        query: {},
        body: typeof init?.body === 'string' ? init.body : undefined,
        caller: ann,
      });
      contentTypes.push(result.headers['content-type'] ?? '');
      return new Response(result.statusCode === 202 ? null : bodyOf(result), {
        status: result.statusCode,
        headers: result.headers,
      });
    },
  });
  await client.connect(transport);
  clients.push(client);
  return { client, log, contentTypes, store };
}

function bodyOf(result: HttpResult): string | ReadableStream<Uint8Array> {
  const stream = result.bodyStream;
  if (stream === undefined) return result.body as string;
  const encoder = new TextEncoder();
  const iterator = stream[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

type Notified = Progress & { _meta?: Record<string, unknown> };

describe('MCP streaming of an agent answer', () => {
  it('sends deltas and resets as progress notifications, then the result', async () => {
    const { client, log, contentTypes } = await setup({
      script: async (emit) => {
        emit({ type: 'delta', segment: 1, seq: 1, text: 'Hello ' });
        emit({ type: 'delta', segment: 1, seq: 2, text: 'wor' });
        emit({ type: 'reset', segment: 2, seq: 0, reason: 'the answer goes on' });
        emit({ type: 'delta', segment: 2, seq: 1, text: 'Hello world' });
        emit({ type: 'final', segment: 2, seq: 2, status: 'completed' });
      },
    });
    const progress: Notified[] = [];
    const result = await client.callTool({ name: 'ask_teller', arguments: { message: 'hi' } }, undefined, {
      onprogress: (p) => {
        progress.push(p);
      },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    expect(contentTypes.at(-1)).toBe('text/event-stream');
    expect(log[0]).toBe(`subscribe ${WS} Bearer ann-token`);
    expect(log[1]).toMatch(/^request written, stream_id [0-9a-f-]{36}$/);
    expect(progress).toEqual([
      { progress: 1, message: 'Hello ' },
      { progress: 2, message: 'wor' },
      { progress: 3, message: '(the answer starts over)', _meta: { 'crumbs/reset': true } },
      { progress: 4, message: 'Hello world' },
    ]);
  });

  it('answers with JSON, unstreamed, when the channel cannot be subscribed to', async () => {
    const { client, log } = await setup({ subscribeFails: true });
    const progress: Notified[] = [];
    const result = await client.callTool({ name: 'ask_teller', arguments: { message: 'hi' } }, undefined, {
      onprogress: (p) => {
        progress.push(p);
      },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    expect(log).toEqual([`subscribe ${WS} Bearer ann-token`, 'request written, stream_id none']);
    expect(progress).toEqual([]);
  });

  it('does not stream to a progress token long enough to bloat every notification', async () => {
    const { client, log, contentTypes } = await setup();
    const result = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'ask_teller',
          arguments: { message: 'hi' },
          _meta: { progressToken: 'x'.repeat(10_000) },
        },
      },
      CallToolResultSchema,
    );
    expect(result.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    expect(contentTypes.at(-1)).toBe('application/json');
    expect(log).toEqual(['request written, stream_id none']);
  });

  it('answers a call without a progress token with JSON and writes no stream id', async () => {
    const { client, log, contentTypes } = await setup();
    const result = await client.callTool({ name: 'ask_teller', arguments: { message: 'hi' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    expect(contentTypes.at(-1)).toBe('application/json');
    expect(log).toEqual(['request written, stream_id none']);
  });
});
