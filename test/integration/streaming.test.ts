/**
 * Streamed answers end to end on the shared local stack, against the scripted OpenAI-compatible server streaming
 * slowly (`slow<ms>` model ids, test/support/fake-openai.ts) through the real adapter, the agent executor, the
 * delta channel (the local AppSync Events twin) and the clients a user touches: `crumbs ask --stream` and
 * `crumbs chat --stream` print the first words before the answer is stored (an order of events, looked up as they
 * arrive — never a duration), in order and complete, and what
 * they streamed is the stored answer; a stream broken mid-way starts over and the partial text never becomes the
 * answer; a cancel stops the call and the answer says `cancelled`; the API's SSE route carries the same events; an
 * A2A streaming client gets the text as artifact chunks before the task completes, and its CancelTask mid-stream
 * ends the stream `canceled` with the answer cut short; another workspace's token sees none of it.
 */
import { randomUUID } from 'node:crypto';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import type { WebSocketConstructor } from '#shared/core/streaming/subscriber.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { SCOPED_TOKEN, SCOPED_WORKSPACE } from '../support/shared-stack.ts';

const ANSWER = 'The quick brown fox jumps over the lazy dog, then naps under a tall oak tree until dusk.';

function client(workspace: string, token = localStack().token): CrumbsClient {
  return new CrumbsClient({ endpoint: localStack().api, token, workspace });
}

/** Defines an agent in `c`'s workspace and waits until its rule is active. */
async function defineAgent(c: CrumbsClient, agent: string, context: Record<string, unknown>) {
  const id = `agent-${agent}`;
  const written = await c.put(id, {
    schema_name: 'agent.def.v1',
    title: id,
    tags: [],
    context: { agent_id: agent, ...context },
  });
  await eventually(async () => {
    const d = (await c.definitions()).items.find((x) => x.id === id);
    return d && d.version === written.version && d.state === 'active' ? d : undefined;
  }, 30_000);
}

/** An agent whose (scripted) model answers `ANSWER`. */
function slowAgent(c: CrumbsClient, agent: string, model: string) {
  return defineAgent(c, agent, {
    system_prompt: `Answer. <answer>${ANSWER}</answer>`,
    model,
    max_tool_rounds: 0,
  });
}

/** A new stream in `c`'s workspace, subscribed before anything is written: its id, the events so far, the subscription. */
async function listen(c: CrumbsClient, onEvent: (event: DeltaEvent) => void = () => undefined) {
  const streamId = randomUUID();
  const info = await c.streamInfo(streamId);
  if (info === undefined) throw new Error('the local stack has no delta channel');
  const events: DeltaEvent[] = [];
  const sub = await c.subscribeToStream(info, {
    onEvent: (e) => {
      events.push(e);
      onEvent(e);
    },
    webSocket: WebSocket as unknown as WebSocketConstructor,
  });
  return { streamId, info, events, sub };
}

/** Runs the CLI in process, recording each stdout write (and telling `onWrite` of it as it comes). */
async function cli(args: string[], onWrite: (text: string) => void = () => undefined) {
  const { api, token } = localStack();
  const writes: { text: string }[] = [];
  let err = '';
  const code = await main([...args, '--endpoint', api, '--token', token], {
    stdout: (s) => {
      writes.push({ text: s });
      onWrite(s);
    },
    stderr: (s) => {
      err += s;
    },
    env: {},
  });
  return { code, writes, out: writes.map((w) => w.text).join(''), err };
}

/**
 * Whether the workspace holds an agent's answer yet, looked up the moment it is called: called when the first words
 * arrive, a "no" says they came before the answer was stored — an order of events, whatever the machine's speed.
 */
async function answerStored(c: CrumbsClient): Promise<boolean> {
  const page = await c.list({ schema_name: 'agent.response.v1', limit: 1 });
  return page.items.length > 0;
}

async function answerOf(c: CrumbsClient, requestId: string) {
  return eventually(
    async () =>
      (
        await c.list({
          schema_name: 'agent.response.v1',
          tag: `request:${requestId}`,
          limit: 1,
          view: 'full',
        })
      ).items[0],
    30_000,
  );
}

/** An A2A client of `agent` in `ws`, as a user's SDK makes one from the agent's card. */
async function a2aClient(ws: string, agent: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${localStack().token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(
    `${localStack().api}/a2a/workspaces/${ws}/agents/${agent}/.well-known/agent-card.json`,
    '',
  );
}

/** A2A's SendMessage parameters for one text message starting a new task. */
function a2aMessage(text: string) {
  return {
    message: {
      messageId: `m-${randomUUID()}`,
      contextId: '',
      taskId: '',
      role: 1,
      parts: [
        {
          content: { $case: 'text', value: text },
          metadata: undefined,
          filename: '',
          mediaType: 'text/plain',
        },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
    tenant: '',
  } as never;
}

type A2aPayload = { $case: string; value: Record<string, unknown> } | undefined;

describe('streamed answers', () => {
  it('crumbs ask --stream prints the words as they come; what it streamed is the stored answer', async () => {
    const ws = uniqueWorkspace('stream-ask');
    const c = client(ws);
    await slowAgent(c, 'slow', `openai-compatible/answer-from-prompt-slow120-${ws}`);
    let storedAtFirstWords: Promise<boolean> | undefined;
    const { code, writes, out, err } = await cli(
      ['ask', 'slow', 'tell me', '--stream', '--workspace', ws],
      (text) => {
        if (text.trim() !== '') storedAtFirstWords ??= answerStored(c);
      },
    );
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toBe(`${ANSWER}\n`);
    const request = (await c.list({ schema_name: 'agent.request.v1', limit: 1, view: 'full' })).items[0];
    const answer = await answerOf(c, String(request?.id));
    expect(answer.context.message).toBe(ANSWER);
    // The first words were printed before the answer was stored, and more came after them.
    expect(await storedAtFirstWords).toBe(false);
    expect(writes.filter((w) => w.text.trim() !== '').length).toBeGreaterThan(2);
  });

  it('crumbs chat --stream streams a chat answer that reaches its agent through a context builder', async () => {
    const { code, writes, out } = await cli(['chat', 'hello there', '--stream', '--workspace', 'demo']);
    expect(code).toBe(0);
    expect(out).toMatch(/^\(offline model\) You said: "hello there"/);
    expect(writes.length).toBeGreaterThan(2);
  });

  it('a stream broken mid-way starts over: the partial text never becomes the answer', async () => {
    const ws = uniqueWorkspace('stream-break');
    const c = client(ws);
    await slowAgent(c, 'flaky', `openai-compatible/answer-from-prompt-slow40-breaks-once-${ws}`);
    const { streamId, events, sub } = await listen(c);
    const request = await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'flaky', message: 'go', stream_id: streamId },
    });
    const final = await sub.done;
    expect(final).toMatchObject({ type: 'final', status: 'completed' });
    const resetAt = events.findIndex((e) => e.type === 'reset');
    expect(resetAt).toBeGreaterThan(0);
    const after = events.slice(resetAt + 1).flatMap((e) => (e.type === 'delta' ? [e.text] : []));
    expect(after.join('')).toBe(ANSWER);
    const answer = await answerOf(c, request.id);
    expect(answer.id).toBe(final?.answer_id);
    expect(answer.context.message).toBe(ANSWER);
  });

  it('a cancel stops the model call; the answer says who cancelled; a second cancel is refused', async () => {
    const ws = uniqueWorkspace('stream-cancel');
    const c = client(ws);
    await slowAgent(c, 'long', `openai-compatible/answer-from-prompt-slow400-${ws}`);
    let firstDelta: () => void = () => undefined;
    const started = new Promise<void>((resolve) => {
      firstDelta = resolve;
    });
    const { streamId, events, sub } = await listen(c, (e) => {
      if (e.type === 'delta') firstDelta();
    });
    const request = await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'long', message: 'go', stream_id: streamId },
    });
    await started;
    const cancel = await c.cancelRequest(request.id, 'enough');
    expect(cancel).toMatchObject({ request_id: request.id, replayed: false });
    const final = await sub.done;
    expect(final).toMatchObject({ status: 'cancelled' });
    const answer = await answerOf(c, request.id);
    expect(answer.context).toMatchObject({ status: 'cancelled', cancel_reason: 'enough' });
    const streamed = events.flatMap((e) => (e.type === 'delta' ? [e.text] : [])).join('');
    expect(streamed.length).toBeLessThan(ANSWER.length);
    await expect(c.cancelRequest(request.id)).rejects.toMatchObject({ status: 409 });
  });

  it('a plan streams no words but its final event names the stored plan answer at once', async () => {
    const ws = uniqueWorkspace('stream-plan');
    const c = client(ws);
    await defineAgent(c, 'planner', {
      system_prompt: 'Plan.',
      model: 'offline/crumbs',
      modes: ['converse', 'plan'],
    });
    const { streamId, events, sub } = await listen(c);
    const request = await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'planner', message: 'plan the launch', mode: 'plan', stream_id: streamId },
    });
    const final = await sub.done;
    const answer = await answerOf(c, request.id);
    expect(final).toMatchObject({ type: 'final', status: 'completed', answer_id: answer.id });
    expect(typeof answer.context.plan_id).toBe('string');
    expect(events.map((e) => e.type)).toEqual(['final']);
  });

  it('a request that does not stream cannot be cancelled (409), and a bad stream id is a 400', async () => {
    const ws = uniqueWorkspace('stream-refuse');
    const c = client(ws);
    const plain = await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'nobody', message: 'hi' },
    });
    await expect(c.cancelRequest(plain.id)).rejects.toMatchObject({ status: 409 });
    await expect(c.streamInfo('no!')).rejects.toMatchObject({ status: 400 });
  });

  it("the SSE route carries the same events, and another workspace's token gets a 403", async () => {
    const ws = uniqueWorkspace('stream-sse');
    const c = client(ws);
    await slowAgent(c, 'sse', `openai-compatible/answer-from-prompt-slow30-${ws}`);
    const streamId = randomUUID();
    const info = await c.streamInfo(streamId);
    expect(info?.events_url).toBe(`/v1/workspaces/${ws}/streams/${streamId}/events`);
    const headers = { authorization: `Bearer ${localStack().token}` };
    const scoped = await fetch(`${localStack().api}${info?.events_url}`, {
      headers: { authorization: `Bearer ${SCOPED_TOKEN}` },
    });
    expect(scoped.status).toBe(403);
    const response = await fetch(`${localStack().api}${info?.events_url}`, { headers });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const request = await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'sse', message: 'go', stream_id: streamId },
    });
    const body = await response.text();
    const events = body
      .split('\n\n')
      .flatMap((frame) => frame.split('\n').filter((l) => l.startsWith('data: ')))
      .map((l) => JSON.parse(l.slice(6)) as DeltaEvent);
    expect(events.flatMap((e) => (e.type === 'delta' ? [e.text] : [])).join('')).toBe(ANSWER);
    const final = events.at(-1);
    expect(final).toMatchObject({ type: 'final', status: 'completed' });
    expect((await answerOf(c, request.id)).id).toBe(final?.type === 'final' ? final.answer_id : '');
  });

  it('another workspace never sees the deltas: not its channel, not the same stream id in its own', async () => {
    const ws = uniqueWorkspace('stream-owner');
    const c = client(ws);
    await slowAgent(c, 'owner', `openai-compatible/answer-from-prompt-slow30-${ws}`);
    const { streamId, info, events: mine, sub } = await listen(c);
    // The scoped token may use only its own workspace: the owner's stream is refused at the API and the channel.
    const outsider = client(SCOPED_WORKSPACE, SCOPED_TOKEN);
    await expect(client(ws, SCOPED_TOKEN).streamInfo(streamId)).rejects.toMatchObject({ status: 403 });
    await expect(
      client(ws, SCOPED_TOKEN).subscribeToStream(info, {
        onEvent: () => undefined,
        webSocket: WebSocket as unknown as WebSocketConstructor,
      }),
    ).rejects.toThrow(/Unauthorized|refused|denied/i);
    // The same stream id in the outsider's own workspace is another channel: nothing arrives there.
    const ownInfo = await outsider.streamInfo(streamId);
    if (ownInfo === undefined) throw new Error('the local stack has no delta channel');
    expect(ownInfo.channel).not.toBe(info.channel);
    const seen: DeltaEvent[] = [];
    const spy = await outsider.subscribeToStream(ownInfo, {
      onEvent: (e) => seen.push(e),
      webSocket: WebSocket as unknown as WebSocketConstructor,
    });
    await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'owner', message: 'go', stream_id: streamId },
    });
    expect(await sub.done).toMatchObject({ status: 'completed' });
    spy.close();
    expect(mine.filter((e) => e.type === 'delta').length).toBeGreaterThan(0);
    expect(seen).toEqual([]);
  });

  it('an A2A streaming client gets the answer as artifact chunks before the task completes', async () => {
    const ws = uniqueWorkspace('stream-a2a');
    const c = client(ws);
    await slowAgent(c, 'teller', `openai-compatible/answer-from-prompt-slow100-${ws}`);
    const a2a = await a2aClient(ws, 'teller');
    const seen: string[] = [];
    const chunks: string[] = [];
    let storedAtFirstChunk: Promise<boolean> | undefined;
    for await (const event of a2a.sendMessageStream(a2aMessage('tell me'))) {
      const payload = (event as { payload?: { $case: string; value: Record<string, unknown> } }).payload;
      if (payload?.$case === 'artifactUpdate') {
        const artifact = payload.value.artifact as { name: string; parts: { content: { value: string } }[] };
        if (artifact.name === 'answer (streaming)') {
          storedAtFirstChunk ??= answerStored(c);
          chunks.push(artifact.parts.map((p) => p.content.value).join(''));
          seen.push('chunk');
        }
      }
      if (payload?.$case === 'statusUpdate') {
        seen.push(`status:${(payload.value.status as { state: number }).state}`);
      }
    }
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.join('')).toBe(ANSWER);
    // The chunks came before the task completed, the first of them before the answer was even stored.
    expect(seen.indexOf('chunk')).toBeLessThan(seen.indexOf('status:3'));
    expect(seen.lastIndexOf('chunk')).toBeLessThan(seen.indexOf('status:3'));
    expect(await storedAtFirstChunk).toBe(false);
  });
  it('A2A CancelTask stops a streaming task mid-answer: the stream ends canceled, the answer says cancelled', async () => {
    const ws = uniqueWorkspace('stream-a2a-cancel');
    const c = client(ws);
    await slowAgent(c, 'rambler', `openai-compatible/answer-from-prompt-slow400-${ws}`);
    const a2a = await a2aClient(ws, 'rambler');
    let taskId: string | undefined;
    let cancelled: Promise<{ status?: { state: number } }> | undefined;
    const chunks: string[] = [];
    const seen: string[] = [];
    for await (const event of a2a.sendMessageStream(a2aMessage('go on'))) {
      const payload = (event as { payload?: A2aPayload }).payload;
      if (payload?.$case === 'task') taskId ??= String(payload.value.id);
      if (payload?.$case === 'statusUpdate') {
        taskId ??= String(payload.value.taskId);
        seen.push(`status:${(payload.value.status as { state: number }).state}`);
      }
      if (payload?.$case === 'artifactUpdate') {
        taskId ??= String(payload.value.taskId);
        const artifact = payload.value.artifact as { name: string; parts: { content: { value: string } }[] };
        if (artifact.name !== 'answer (streaming)') continue;
        chunks.push(artifact.parts.map((p) => p.content.value).join(''));
        seen.push('chunk');
        // The first words are out: the client cancels the task while the model still writes.
        if (taskId !== undefined) {
          cancelled ??= a2a.cancelTask({ tenant: '', id: taskId, metadata: undefined } as never) as Promise<{
            status?: { state: number };
          }>;
        }
      }
    }
    expect(cancelled).toBeDefined();
    expect((await cancelled)?.status?.state).toBe(5);
    // The stream ended canceled, never completed, with only part of the answer sent.
    expect(seen.at(-1)).toBe('status:5');
    expect(seen).not.toContain('status:3');
    expect(chunks.join('').length).toBeLessThan(ANSWER.length);
    const answer = await answerOf(c, String(taskId));
    expect(answer.context).toMatchObject({ status: 'cancelled' });
    const task = (await a2a.getTask({ tenant: '', id: String(taskId), historyLength: 0 } as never)) as {
      status?: { state: number };
    };
    expect(task.status?.state).toBe(5);
    await expect(
      a2a.cancelTask({ tenant: '', id: String(taskId), metadata: undefined } as never),
    ).rejects.toThrow(/has ended \(canceled\)/);
  });
});
