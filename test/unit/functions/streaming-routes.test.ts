/**
 * Every streaming route through the AWS response format: the functions' own Lambda wiring
 * (`streamingHttpHandler`, a middy response-streaming handler) run in the local Lambda runtime, its bytes read as
 * API Gateway reads a STREAM integration's (`test/support/lambda-fetch.ts`), the official SDK clients on top. In
 * each test the answer is written only after the client has received the first chunk, so a response held back
 * until its end could not pass: the first chunk must cross the metadata-and-delimiter format while the answer is
 * still incomplete.
 *
 * - MCP: `tools/call ask_<agent>` with a progress token — progress notifications, then the result;
 * - A2A: `SendStreamingMessage` (the task, the model's output as artifact chunks, the final state) and
 *   `SubscribeToTask` (the task, then its final state);
 * - the SSE route `GET …/streams/{id}/events`: each delta, then the final;
 * - a streamed ask over HTTP, as a client without a WebSocket makes it: where the stream is (`GET …/streams/{id}`),
 *   its `events_url` opened, then the `agent.request.v1` with that `stream_id` written — the model's first words
 *   arrive before the answer breadcrumb exists, and the final event names it.
 */
import { randomUUID } from 'node:crypto';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { streamingHttpHandler } from '#functions/wiring/http-handler.ts';
import { powertools } from '#functions/wiring/powertools.ts';
import { installAwsLambdaGlobal } from '#local/lambda-runtime.ts';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import { createApi } from '#shared/core/api/api.ts';
import type { HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import type { ChannelSubscribe } from '#shared/core/api/streaming-deps.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import { channelFor } from '#shared/core/streaming/channel.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { sseFromChannel } from '#shared/core/streaming/sse.ts';
import { lambdaFetch, type RawResponse, splitRaw } from '../../support/lambda-fetch.ts';
import { activeDefinition, inMemoryApi } from '../../support/memory/api.ts';

const WS = 'team-a';
const CLAIM = 'crumbs:workspaces';
const BASE = 'https://api.example.com/prod';
const AUTHORIZER = { sub: 'ann', workspaces: JSON.stringify([WS]) };

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_TRACE_ENABLED = 'false';
process.env.POWERTOOLS_LOG_LEVEL = 'CRITICAL';
let pt: ReturnType<typeof powertools>;
beforeAll(() => {
  installAwsLambdaGlobal();
  pt = powertools('crumbs-streaming-routes-test', []);
});

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close().catch(() => undefined)));
});

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * The stack around a protocol server: the API on an in-memory store, a scripted delta channel, and an agent
 * executor that streams two deltas for each request and writes its answer only when `release` is called.
 */
async function world(
  withApi?: (
    store: ReturnType<typeof inMemoryApi>['store'],
    subscribe: ChannelSubscribe,
  ) => (request: HttpRequest) => Promise<HttpResult>,
) {
  const memory = inMemoryApi();
  const { store } = memory;
  await activeDefinition(store, WS, 'agent-teller', 'agent.def.v1', {
    agent_id: 'teller',
    system_prompt: 'Tell.',
    model: 'offline/echo',
  });
  const listeners = new Map<string, (event: DeltaEvent) => void>();
  const subscribe: ChannelSubscribe = async (_workspace, streamId, _authorization, onEvent) => {
    listeners.set(streamId, onEvent);
    return { close: () => listeners.delete(streamId), done: new Promise(() => undefined) };
  };
  const api = withApi ? withApi(store, subscribe) : memory.api;
  const gate = deferred();
  const state = { answered: false };
  const executor = async (request: { id: string; context: Record<string, unknown> }) => {
    const streamId = typeof request.context.stream_id === 'string' ? request.context.stream_id : undefined;
    const emit = (event: DeltaEvent) => (streamId ? listeners.get(streamId)?.(event) : undefined);
    emit({ type: 'delta', segment: 1, seq: 1, text: 'Hello ' });
    emit({ type: 'delta', segment: 1, seq: 2, text: 'world' });
    await gate.promise;
    const answer = await store.create(
      WS,
      {
        schema_name: 'agent.response.v1',
        title: 'answer',
        tags: [`request:${request.id}`],
        context: { status: 'success', message: 'Hello world' },
      },
      { principal: 'agent:teller' },
    );
    state.answered = true;
    emit({ type: 'final', segment: 1, seq: 3, status: 'completed', answer_id: answer.breadcrumb.id });
  };
  const calling = async (request: HttpRequest): Promise<HttpResult> => {
    const answered = await api(request);
    const body = (typeof answered.body === 'string' ? JSON.parse(answered.body) : undefined) as
      | { schema_name?: string; id: string; context: Record<string, unknown> }
      | undefined;
    if (request.method === 'POST' && body?.schema_name === 'agent.request.v1') void executor(body);
    return answered;
  };
  return { store, subscribe, calling, release: gate.resolve, state };
}

function expectStreamingFormat(raw: RawResponse, contentType: RegExp): string {
  const { metadata, delimiter, body } = splitRaw(raw);
  expect(metadata).toMatchObject({
    statusCode: 200,
    headers: { 'content-type': expect.stringMatching(contentType) },
  });
  expect([...delimiter]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
  return body;
}

describe('MCP through the AWS response format', () => {
  it('sends the first progress notification before the answer exists, then the result', async () => {
    const w = await world();
    const handler = streamingHttpHandler(
      pt,
      CLAIM,
      createMcpHttp({
        api: w.calling,
        baseUrl: BASE,
        subscribe: w.subscribe,
        pollMs: { first: 10, max: 20 },
      }),
    );
    const raw: RawResponse[] = [];
    const client = new Client({ name: 'streaming-routes', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${BASE}/v1/workspaces/${WS}/mcp`), {
        fetch: lambdaFetch(handler, { stagePath: '/prod', authorizer: AUTHORIZER, raw }),
      }),
    );
    closers.push(() => client.close());
    const seen: { message: string | undefined; answered: boolean; bodySoFar: string }[] = [];
    const result = await client.callTool({ name: 'ask_teller', arguments: { message: 'hi' } }, undefined, {
      onprogress: (p) => {
        const call = raw.find((r) => splitRaw(r).body.includes('notifications/progress'));
        seen.push({
          message: p.message,
          answered: w.state.answered,
          bodySoFar: call ? splitRaw(call).body : '',
        });
        w.release();
      },
    });
    expect(seen[0]).toMatchObject({ message: 'Hello ', answered: false });
    // On the wire at that moment: the metadata, the delimiter, and the notification — not the result.
    // (An SSE comment opens every event stream: the status and headers go out with it, before the first event.)
    expect(seen[0]?.bodySoFar).toMatch(/^: keep-alive\n\nevent: message\ndata: .*notifications\/progress/);
    expect(seen[0]?.bodySoFar).not.toContain('"result"');
    expect(seen.map((s) => s.message).join('')).toBe('Hello world');
    expect(result.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    const call = raw.find((r) => splitRaw(r).body.includes('notifications/progress')) as RawResponse;
    const body = expectStreamingFormat(call, /^text\/event-stream/);
    expect(body.indexOf('notifications/progress')).toBeLessThan(body.indexOf('"result"'));
  });
});

/** An A2A client whose every request is answered by the handler through the AWS response format. */
async function a2aClient(handler: unknown, raw: RawResponse[]) {
  const fetchImpl = lambdaFetch(handler, { stagePath: '/prod', authorizer: AUTHORIZER, raw });
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(`${BASE}/a2a/workspaces/${WS}/agents/teller/.well-known/agent-card.json`, '');
}

function message(text: string) {
  return {
    messageId: `m-${randomUUID()}`,
    contextId: '',
    taskId: '',
    role: 1,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

type StreamEvent = { payload?: { $case: string; value: Record<string, unknown> } };

describe('A2A through the AWS response format', () => {
  async function setup() {
    const w = await world();
    const handler = streamingHttpHandler(
      pt,
      CLAIM,
      createA2aHttp({
        api: w.calling,
        baseUrl: BASE,
        subscribe: w.subscribe,
        streamPollMs: 20,
        pollMs: { first: 10, max: 20 },
      }),
    );
    const raw: RawResponse[] = [];
    return { w, raw, a2a: await a2aClient(handler, raw) };
  }

  it('SendStreamingMessage: the task and the first chunk arrive before the answer, then the completed state', async () => {
    const { w, raw, a2a } = await setup();
    const events: { kind: string; answered: boolean; text?: string; state?: number }[] = [];
    for await (const event of a2a.sendMessageStream({
      message: message('tell me'),
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    } as never)) {
      const payload = (event as StreamEvent).payload;
      const artifact = payload?.value.artifact as { parts: { content: { value: string } }[] } | undefined;
      events.push({
        kind: payload?.$case ?? '?',
        answered: w.state.answered,
        ...(artifact ? { text: artifact.parts.map((p) => p.content.value).join('') } : {}),
        ...(payload?.$case === 'statusUpdate'
          ? { state: (payload.value.status as { state: number }).state }
          : {}),
      });
      if (events.filter((e) => e.kind === 'artifactUpdate').length === 2) w.release();
    }
    expect(events[0]).toMatchObject({ kind: 'task', answered: false });
    const chunks = events.filter((e) => e.kind === 'artifactUpdate' && e.text !== undefined);
    expect(chunks[0]).toMatchObject({ answered: false, text: 'Hello ' });
    expect(events.at(-1)).toMatchObject({ kind: 'statusUpdate', state: 3, answered: true });
    const stream = raw.find((r) => splitRaw(r).body.includes('statusUpdate')) as RawResponse;
    expect(expectStreamingFormat(stream, /^text\/event-stream/)).toMatch(
      /^: keep-alive\n\ndata: \{"jsonrpc":"2.0"/,
    );
    // The card named the agent under the configured base URL, not the Host the client sent.
    const card = raw.find((r) => r.path.endsWith('agent-card.json')) as RawResponse;
    expect(splitRaw(card).body).toContain(`"url":"${BASE}/a2a/workspaces/${WS}/agents/teller"`);
  });

  it('SubscribeToTask: the task arrives before the answer, then its final state', async () => {
    const { w, raw, a2a } = await setup();
    const started = (await a2a.sendMessage({
      message: message('later'),
      configuration: { returnImmediately: true, acceptedOutputModes: [], historyLength: undefined },
      metadata: undefined,
      tenant: '',
    } as never)) as { payload?: { value: { id: string } } } & { id?: string };
    const taskId = started.payload?.value.id ?? started.id ?? '';
    expect(taskId).not.toBe('');
    const events: { kind: string; answered: boolean; state?: number }[] = [];
    for await (const event of a2a.resubscribeTask({ tenant: '', id: taskId } as never)) {
      const payload = (event as StreamEvent).payload;
      events.push({
        kind: payload?.$case ?? '?',
        answered: w.state.answered,
        ...(payload?.$case === 'statusUpdate'
          ? { state: (payload.value.status as { state: number }).state }
          : {}),
      });
      w.release();
    }
    expect(events[0]).toMatchObject({ kind: 'task', answered: false });
    expect(events.at(-1)).toMatchObject({ kind: 'statusUpdate', state: 3, answered: true });
    const stream = raw.at(-1) as RawResponse;
    expectStreamingFormat(stream, /^text\/event-stream/);
  });
});

describe('the SSE route through the AWS response format', () => {
  it('sends each delta as it is published, before the final event', async () => {
    const { store } = inMemoryApi();
    const listeners = new Map<string, (event: DeltaEvent) => void>();
    const subscribed = deferred();
    const subscribe: ChannelSubscribe = async (_ws, streamId, _authorization, onEvent) => {
      listeners.set(streamId, onEvent);
      subscribed.resolve();
      return { close: () => listeners.delete(streamId), done: new Promise(() => undefined) };
    };
    const api = createApi({
      store,
      streaming: {
        endpoints: {
          realtime_url: 'wss://events.example.com/event/realtime',
          http_host: 'events.example.com',
        },
        channelFor,
        events: (ws, streamId, authorization) =>
          sseFromChannel((onEvent) => subscribe(ws, streamId, authorization, onEvent), {
            maxDurationMs: 60_000,
          }),
      },
    });
    const raw: RawResponse[] = [];
    const fetchImpl = lambdaFetch(streamingHttpHandler(pt, CLAIM, api), {
      stagePath: '/prod',
      authorizer: AUTHORIZER,
      raw,
    });
    const streamId = randomUUID();
    const response = await fetchImpl(`${BASE}/v1/workspaces/${WS}/streams/${streamId}/events`);
    await subscribed.promise;
    const emit = (event: DeltaEvent) => listeners.get(streamId)?.(event);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    // The status and headers came with the opening comment, before any event.
    expect(decoder.decode((await reader.read()).value)).toBe(': keep-alive\n\n');
    emit({ type: 'delta', segment: 1, seq: 1, text: 'Hello ' });
    const first = decoder.decode((await reader.read()).value);
    expect(first).toContain('event: delta');
    expect(first).toContain('"text":"Hello "');
    // Still open: the final event is not published yet.
    expect(splitRaw(raw[0] as RawResponse).body).not.toContain('event: final');
    emit({ type: 'final', segment: 1, seq: 2, status: 'completed', answer_id: 'a1' });
    let rest = '';
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      rest += decoder.decode(next.value);
    }
    expect(rest).toContain('event: final');
    const body = expectStreamingFormat(raw[0] as RawResponse, /^text\/event-stream/);
    expect(body.indexOf('event: delta')).toBeLessThan(body.indexOf('event: final'));
  });
});

describe('a streamed ask over HTTP through the AWS response format', () => {
  it("reads the agent's first words from events_url before the answer exists, then the final naming it", async () => {
    const subscribed = deferred();
    const w = await world((store, subscribe) =>
      createApi({
        store,
        streaming: {
          endpoints: {
            realtime_url: 'wss://events.example.com/event/realtime',
            http_host: 'events.example.com',
          },
          channelFor,
          events: (ws, streamId, authorization) =>
            sseFromChannel(
              async (onEvent) => {
                const subscription = await subscribe(ws, streamId, authorization, onEvent);
                subscribed.resolve();
                return subscription;
              },
              { maxDurationMs: 60_000 },
            ),
        },
      }),
    );
    const raw: RawResponse[] = [];
    const fetchImpl = lambdaFetch(streamingHttpHandler(pt, CLAIM, w.calling), {
      stagePath: '/prod',
      authorizer: AUTHORIZER,
      raw,
    });
    const streamId = randomUUID();
    const info = (await (await fetchImpl(`${BASE}/v1/workspaces/${WS}/streams/${streamId}`)).json()) as {
      events_url: string;
    };
    expect(info.events_url).toBe(`/v1/workspaces/${WS}/streams/${streamId}/events`);
    const events = await fetchImpl(`${BASE}${info.events_url}`);
    await subscribed.promise;
    const written = await fetchImpl(`${BASE}/v1/workspaces/${WS}/breadcrumbs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        schema_name: 'agent.request.v1',
        title: 'ask teller',
        tags: [],
        context: { agent: 'teller', message: 'hi', stream_id: streamId },
      }),
    });
    expect(written.status).toBe(201);
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let sofar = '';
    while (!sofar.includes('"text":"Hello "')) {
      const next = await reader.read();
      if (next.done) throw new Error(`the stream ended early: ${sofar}`);
      sofar += decoder.decode(next.value);
    }
    // The first words are on the wire; the answer is not written yet, and the stream is still open.
    expect(w.state.answered).toBe(false);
    const stream = raw.find((r) => r.path.endsWith('/events')) as RawResponse;
    expect(splitRaw(stream).body).not.toContain('event: final');
    w.release();
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      sofar += decoder.decode(next.value);
    }
    expect(w.state.answered).toBe(true);
    const final = /event: final\ndata: (.*)\n/.exec(sofar)?.[1];
    const answerId = (JSON.parse(final ?? '{}') as { answer_id?: string }).answer_id;
    const answer = (await (
      await fetchImpl(`${BASE}/v1/workspaces/${WS}/breadcrumbs/${answerId}`)
    ).json()) as {
      context: { message: string };
    };
    expect(answer.context.message).toBe('Hello world');
    const body = expectStreamingFormat(stream, /^text\/event-stream/);
    expect(body.indexOf('"text":"Hello "')).toBeLessThan(body.indexOf('event: final'));
  });
});
