/**
 * Streams: team-b opens 205 server-sent-event streams with three tokens of its workspace, and as many raw
 * connections to the events server as it can. Before the shares, the events server admitted 200 connections in
 * all: team-a's SSE route then answered 500 and its CLI, MCP and A2A streams stopped. Now each token holds at most
 * its share of streams (20), the workspace at most its share (40), the events server refuses a token's or a
 * workspace's connection over its share — every refusal a 429 with `Retry-After`, never a 500 — and while the
 * attack holds everything it was given, team-a's SSE route and its CLI's subscription carry its streamed answer to
 * the end, and its A2A client gets the answer as streamed chunks before the task completes. When team-b lets go, its streams open again (the leases were given back).
 */
import { randomUUID } from 'node:crypto';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CrumbsClient } from '#cli/api-client.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import type { WebSocketConstructor } from '#shared/core/streaming/subscriber.ts';
import { TEAM_B_MORE_TOKENS } from './global-setup.ts';
import { adversary, answerTo, defineActive, eventually, teamA } from './support.ts';

const ANSWER = 'Streams are shared: one workspace holds its share, and the neighbour still hears every word.';

/** An SSE stream of team-b's workspace opened with `token`: its status, Retry-After, problem, and its abort. */
async function openStream(token: string) {
  const { api, teamB } = adversary();
  const abort = new AbortController();
  const res = await fetch(`${api}/v1/workspaces/${teamB.workspace}/streams/${randomUUID()}/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  const opened = res.status === 200;
  const problem = opened ? undefined : ((await res.json()) as { detail?: string });
  // The response is kept: fetch cancels a body nobody holds once it is collected, which would end the stream.
  return { status: res.status, retryAfter: res.headers.get('retry-after'), problem, abort, response: res };
}

/** A raw connection to the events server as `token`: open, or refused with its status and Retry-After. */
function connect(
  token: string,
): Promise<{ ws: WebSocket } | { status: number; retryAfter: string | undefined }> {
  const header = Buffer.from(JSON.stringify({ host: 'x', Authorization: token })).toString('base64url');
  const ws = new WebSocket(adversary().eventsRealtime, ['aws-appsync-event-ws', `header-${header}`]);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
    });
    ws.once('error', reject);
  });
}

/** Sends a message to `agent` over A2A streaming as `token`: how many answer chunks came before the task completed. */
async function a2aStream(workspace: string, token: string, agent: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  const client = await factory.createFromUrl(
    `${adversary().api}/a2a/workspaces/${workspace}/agents/${agent}/.well-known/agent-card.json`,
    '',
  );
  let beforeCompleted = 0;
  let completed = false;
  for await (const event of client.sendMessageStream({
    message: {
      messageId: `m-${randomUUID()}`,
      contextId: '',
      taskId: '',
      role: 1,
      parts: [
        {
          content: { $case: 'text', value: 'go' },
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
  } as never)) {
    const payload = (event as { payload?: { $case: string; value: Record<string, unknown> } }).payload;
    if (payload?.$case === 'artifactUpdate' && !completed) {
      const artifact = payload.value.artifact as { name: string };
      if (artifact.name === 'answer (streaming)') beforeCompleted += 1;
    }
    if (payload?.$case === 'statusUpdate' && (payload.value.status as { state: number }).state === 3) {
      completed = true;
    }
  }
  return { beforeCompleted, completed };
}

/** The data events of an SSE body. */
function sseEvents(body: string): DeltaEvent[] {
  return body
    .split('\n\n')
    .flatMap((frame) => frame.split('\n').filter((l) => l.startsWith('data: ')))
    .map((l) => JSON.parse(l.slice(6)) as DeltaEvent);
}

const words = (events: readonly DeltaEvent[]) =>
  events.flatMap((e) => (e.type === 'delta' ? [e.text] : [])).join('');

describe('one workspace cannot take every stream', () => {
  it("refuses team-b's streams over its shares with 429 and Retry-After while team-a's SSE, CLI and A2A streams carry its answer", async () => {
    const { api, teamA: a, teamB } = adversary();
    const agent = `streamer-${randomUUID().slice(0, 6)}`;
    await defineActive(teamA(), `agent-${agent}`, 'agent.def.v1', {
      agent_id: agent,
      system_prompt: `Answer. <answer>${ANSWER}</answer>`,
      model: `openai-compatible/answer-from-prompt-slow30-${agent}`,
      max_tool_rounds: 0,
    });

    // The attack: 205 streams from three tokens of team-b's workspace, one after another so each answer is
    // the share's and not a race's.
    const attempts = [
      ...Array.from({ length: 100 }, () => teamB.token),
      ...Array.from({ length: 100 }, () => TEAM_B_MORE_TOKENS[0]),
      ...Array.from({ length: 5 }, () => TEAM_B_MORE_TOKENS[1]),
    ];
    const streams: Awaited<ReturnType<typeof openStream>>[] = [];
    const sockets: WebSocket[] = [];
    try {
      for (const token of attempts) streams.push(await openStream(token));
      const statuses = streams.map((s) => s.status);
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      // Each token's share (20), and the workspace's (40): the third token gets nothing.
      expect(statuses.slice(0, 100).filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.slice(100, 200).filter((s) => s === 200)).toHaveLength(20);
      expect(statuses.slice(200)).toEqual([429, 429, 429, 429, 429]);
      const refused = streams.filter((s) => s.status === 429);
      expect(refused.every((s) => s.retryAfter === '10')).toBe(true);
      expect(refused[0]?.problem?.detail).toMatch(/this token holds 20 streams open, its share/);
      expect(refused.at(-1)?.problem?.detail).toMatch(/workspace team-b holds 40 streams open, its share/);

      // And straight at the events server: team-b's token connects until its share there is spent.
      const raw = [];
      for (let i = 0; i < 60; i++) raw.push(await connect(teamB.token));
      for (const c of raw) if ('ws' in c) sockets.push(c.ws);
      const rawRefused = raw.filter((c) => !('ws' in c));
      expect(rawRefused.length).toBeGreaterThan(0);
      expect(rawRefused).toEqual(rawRefused.map(() => ({ status: 429, retryAfter: '10' })));

      // During all of it, team-a streams an answer: through the SSE route, and as its CLI does (the channel).
      const streamId = randomUUID();
      const cli = new CrumbsClient({ endpoint: api, token: a.token, workspace: a.workspace });
      const info = await cli.streamInfo(streamId);
      if (info === undefined) throw new Error('the stack has no delta channel');
      const sse = await fetch(`${api}${info.events_url}`, {
        headers: { authorization: `Bearer ${a.token}` },
      });
      expect(sse.status).toBe(200);
      expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const heard: DeltaEvent[] = [];
      const sub = await cli.subscribeToStream(info, {
        onEvent: (e) => heard.push(e),
        webSocket: WebSocket as unknown as WebSocketConstructor,
      });
      const requestId = `ask-${randomUUID().slice(0, 8)}`;
      const asked = await teamA().call('POST', '/breadcrumbs', {
        schema_name: 'agent.request.v1',
        title: 'ask',
        context: { agent, request_id: requestId, message: 'go', stream_id: streamId },
      });
      expect(asked.status).toBe(201);
      const events = sseEvents(await sse.text());
      expect(words(events)).toBe(ANSWER);
      expect(events.at(-1)).toMatchObject({ type: 'final', status: 'completed' });
      await eventually(
        async () => (heard.at(-1)?.type === 'final' ? true : undefined),
        'the CLI’s final event',
      );
      sub.close();
      expect(words(heard)).toBe(ANSWER);
      expect(await answerTo(teamA(), requestId)).toMatchObject({ status: 'success' });

      // And team-a's A2A client streams too: chunks of the answer before the task completes.
      const chunks = await a2aStream(a.workspace, a.token, agent);
      expect(chunks.beforeCompleted).toBeGreaterThan(0);
      expect(chunks.completed).toBe(true);
    } finally {
      for (const s of streams) s.abort.abort();
      for (const ws of sockets) ws.close();
    }

    // Let go, team-b's streams open again: every lease was given back.
    const again = await eventually(async () => {
      const s = await openStream(teamB.token);
      if (s.status !== 200) return undefined;
      return s;
    }, "team-b's stream after the attack");
    again.abort.abort();
  });
});
