/**
 * MCP's `notifications/cancelled` on the stateless server (`shared/core/mcp/cancel.ts`), with the SDK's client over
 * Streamable HTTP against two endpoint instances sharing the API (an in-memory store) and the call index: the call
 * goes to one, its cancel — sent by the SDK when the caller aborts — to the other. A scripted agent streams until it
 * finds the request's `request.cancel.v1`, then answers `cancelled`, as the agent executor does. Another caller's
 * cancel under the same JSON-RPC id stops nothing; a cancel that overtakes its call's entry still finds it; a call
 * nothing watches (no progress) is not indexed.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Caller, HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import { workspaceApi } from '#shared/core/api/in-process.ts';
import type { ChannelSubscribe } from '#shared/core/api/streaming-deps.ts';
import { cancelCall, LOOKS_MS } from '#shared/core/mcp/cancel.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { cancelIdOf } from '#shared/domain/streaming.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';
import { InMemoryCallIndex } from '../../../support/memory/call-index.ts';

const WS = 'ws';
const ann: Caller = { principal: 'user:ann', workspaces: [WS] };
const bob: Caller = { principal: 'user:bob', workspaces: [WS] };
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

async function setup(words = 200) {
  const { store, api } = inMemoryApi();
  const calls = new InMemoryCallIndex();
  const listeners = new Map<string, (event: DeltaEvent) => void>();
  const subscribe: ChannelSubscribe = async (_ws, streamId, _authorization, onEvent) => {
    listeners.set(streamId, onEvent);
    return { close: () => listeners.delete(streamId), done: new Promise(() => undefined) };
  };
  const answers: string[] = [];
  // The agent executor's part: words until the request's cancel appears, then the cancelled answer.
  const agent = async (request: { id: string; context: Record<string, unknown> }) => {
    const streamId = String(request.context.stream_id ?? '');
    let cancelled: string | undefined;
    for (let seq = 1; seq <= words && cancelled === undefined; seq++) {
      listeners.get(streamId)?.({ type: 'delta', segment: 1, seq, text: `word${seq} ` });
      await new Promise((r) => setTimeout(r, 10));
      cancelled = await store
        .get(WS, cancelIdOf(WS, streamId))
        .then((c) => c.created_by)
        .catch((error: unknown) => {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        });
    }
    const status = cancelled === undefined ? 'success' : 'cancelled';
    answers.push(`${request.id} ${status}${cancelled ? ` by ${cancelled}` : ''}`);
    await store.create(
      WS,
      {
        schema_name: 'agent.response.v1',
        title: 'answer',
        tags: [`request:${request.id}`],
        context: { status, message: status },
      },
      { principal: 'agent:teller' },
    );
  };
  const inProcessApi = async (request: HttpRequest): Promise<HttpResult> => {
    const answered = await api(request);
    const body = (typeof answered.body === 'string' ? JSON.parse(answered.body) : undefined) as
      | { schema_name?: string; id: string; context: Record<string, unknown> }
      | undefined;
    if (request.method === 'POST' && body?.schema_name === 'agent.request.v1') void agent(body);
    return answered;
  };
  // Two instances of the stateless endpoint: nothing shared but the table (the API's store, the call index).
  const instances = [0, 1].map(() =>
    createMcpHttp({
      api: inProcessApi,
      baseUrl: 'https://api.example.com/prod',
      subscribe,
      calls,
      pollMs: { first: 10, max: 20 },
    }),
  );
  await activeDefinition(store, WS, 'agent-teller', 'agent.def.v1', {
    agent_id: 'teller',
    system_prompt: 'Tell.',
    model: 'offline/echo',
  });
  /** An SDK client whose POSTs alternate between the instances (`route` says which takes which). */
  const connect = async (caller: Caller, route: (body: string) => number) => {
    const seen: { method: string; instance: number }[] = [];
    const client = new Client({ name: 'cancel', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`http://mcp.test/v1/workspaces/${WS}/mcp`), {
      fetch: async (input, init) => {
        const url = new URL(String(input));
        const headers: Record<string, string> = { host: url.host, authorization: 'Bearer token' };
        new Headers(init?.headers).forEach((v, k) => {
          headers[k] = v;
        });
        const body = typeof init?.body === 'string' ? init.body : undefined;
        const instance = route(body ?? '');
        seen.push({ method: String((JSON.parse(body ?? '{}') as { method?: string }).method), instance });
        const result = await (instances[instance] ?? instances[0])!({
          method: init?.method ?? 'GET',
          path: url.pathname,
          headers,
          query: {},
          body,
          caller,
        });
        return new Response(result.statusCode === 202 ? null : bodyOf(result), {
          status: result.statusCode,
          headers: result.headers,
        });
      },
    });
    await client.connect(transport);
    clients.push(client);
    return { client, seen };
  };
  return { store, calls, connect, answers, api };
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

const onCancel = (body: string) => (body.includes('notifications/cancelled') ? 1 : 0);

describe('MCP notifications/cancelled', () => {
  it('stops the streamed call it names, sent to another instance than the call', async () => {
    const { connect, answers, store } = await setup();
    const { client, seen } = await connect(ann, onCancel);
    const abort = new AbortController();
    const call = client.callTool({ name: 'ask_teller', arguments: { message: 'go on' } }, undefined, {
      signal: abort.signal,
      onprogress: () => abort.abort('enough'),
    });
    await expect(call).rejects.toThrow();
    // The SDK sends the cancel as a POST of its own, which the other instance takes and acts on before answering.
    await expect.poll(() => seen.at(-1)).toEqual({ method: 'notifications/cancelled', instance: 1 });
    const [request] = (await store.list({ workspace: WS, schema_name: 'agent.request.v1', limit: 5 })).items;
    const cancel = await expect
      .poll(() => store.get(WS, cancelIdOf(WS, String(request?.context.stream_id))).catch(() => undefined))
      .toBeDefined()
      .then(() => store.get(WS, cancelIdOf(WS, String(request?.context.stream_id))));
    expect(cancel).toMatchObject({
      schema_name: 'request.cancel.v1',
      created_by: 'user:ann',
      context: expect.objectContaining({
        request_id: request?.id,
        reason: 'MCP notifications/cancelled: enough',
      }),
    });
    await expect.poll(() => answers).toEqual([`${request?.id} cancelled by user:ann`]);
  });

  it('another caller’s cancel under the same JSON-RPC id stops nothing', async () => {
    const { connect, answers, store, calls, api } = await setup(20);
    const { client } = await connect(ann, () => 0);
    let progressed: () => void = () => undefined;
    const streaming = new Promise<void>((resolve) => {
      progressed = resolve;
    });
    const call = client.callTool({ name: 'ask_teller', arguments: { message: 'mine' } }, undefined, {
      onprogress: () => progressed(),
    });
    await streaming;
    const [callId] = [...calls.entries.keys()].map((k) => (JSON.parse(k) as [string, string, number])[2]);
    expect(callId).toBeDefined();
    const asBob = workspaceApi(api, { workspace: WS, caller: bob });
    expect(
      await cancelCall(asBob, calls, { workspace: WS, caller: bob }, callId!, 'mine now', async () => {}),
    ).toBe('not-found');
    await call;
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/ success$/);
    const cancels = await store.list({ workspace: WS, schema_name: 'request.cancel.v1', limit: 5 });
    expect(cancels.items).toEqual([]);
  });

  it('a cancel that overtakes its call’s entry looks again and stops it; a call without progress is not indexed', async () => {
    const { store, api, calls, connect } = await setup(3);
    const { breadcrumb: request } = await store.create(
      WS,
      {
        schema_name: 'agent.request.v1',
        title: 'ask',
        tags: [],
        context: { agent: 'teller', message: 'hi', stream_id: 'stream-overtaken-1' },
      },
      { principal: 'user:ann' },
    );
    const waits: number[] = [];
    const asAnn = workspaceApi(api, { workspace: WS, caller: ann });
    const outcome = await cancelCall(
      asAnn,
      calls,
      { workspace: WS, caller: ann },
      7,
      undefined,
      async (ms) => {
        waits.push(ms);
        // The call's entry lands while the cancel waits.
        if (waits.length === 2) await calls.put(WS, 'user:ann', 7, request.id);
      },
    );
    expect(outcome).toBe('stopped');
    expect(waits).toEqual([LOOKS_MS[1], (LOOKS_MS[2] ?? 0) - (LOOKS_MS[1] ?? 0)]);
    expect((await store.get(WS, cancelIdOf(WS, 'stream-overtaken-1'))).created_by).toBe('user:ann');

    calls.entries.clear();
    const { client } = await connect(ann, () => 0);
    await client.callTool({ name: 'ask_teller', arguments: { message: 'plain' } });
    expect(calls.entries.size).toBe(0);
  });
});
