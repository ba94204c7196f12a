/**
 * The delta channel against the local stack's events server over real WebSockets and signed HTTP publishes: what
 * the executors publish reaches a subscriber of the request's workspace in order, and nobody else — two workspaces
 * never see each other's deltas — while tokens can neither connect badly, subscribe elsewhere nor publish.
 */
import { beforeAll, describe, expect, inject, it, vi } from 'vitest';
import WebSocket from 'ws';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { startLocalEventsServer } from '#local/events/server.ts';
import { parseScopedTokens } from '#local/tokens.ts';
import { AppSyncEventsPublisher } from '#shared/adapters/events/appsync-publisher.ts';
import { channelSubscriber } from '#shared/core/api/streaming-deps.ts';
import { channelFor } from '#shared/core/streaming/channel.ts';
import { DeltaStream } from '#shared/core/streaming/delta-stream.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { sseFromChannel } from '#shared/core/streaming/sse.ts';
import { StreamLeases } from '#shared/core/streaming/stream-leases.ts';
import { type DeltaSubscription, subscribeToRequest } from '#shared/core/streaming/subscriber.ts';
import { TooManyRequestsError } from '#shared/domain/errors.ts';

const crumbs = inject('crumbs');
let httpUrl: string;
let realtimeUrl: string;
let httpHost: string;
const publisher = () =>
  new AppSyncEventsPublisher({ httpUrl, region: LOCAL_REGION, credentials: () => LOCAL_CREDENTIALS });

beforeAll(async () => {
  const health = (await (await fetch(`${crumbs.api}/health`)).json()) as {
    local: { events: string; eventsRealtime: string };
  };
  httpUrl = health.local.events;
  realtimeUrl = health.local.eventsRealtime;
  httpHost = new URL(httpUrl).host;
});

function subscribe(
  token: string,
  workspace: string,
  requestId: string,
  events: DeltaEvent[] = [],
): Promise<DeltaSubscription> {
  return subscribeToRequest({
    realtimeUrl,
    httpHost,
    token,
    workspace,
    requestId,
    webSocket: WebSocket,
    onEvent: (e) => events.push(e),
  });
}

/** A raw connection for protocol checks: the messages it receives, in order. */
async function rawSocket(
  token: string,
): Promise<{ ws: WebSocket; next: () => Promise<Record<string, unknown>> }> {
  const header = Buffer.from(JSON.stringify({ host: httpHost, Authorization: token })).toString('base64url');
  const ws = new WebSocket(realtimeUrl, ['aws-appsync-event-ws', `header-${header}`]);
  const inbox: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown>) => void)[] = [];
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as Record<string, unknown>;
    const waiter = waiters.shift();
    if (waiter) waiter(message);
    else inbox.push(message);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = () =>
    new Promise<Record<string, unknown>>((resolve) => {
      const queued = inbox.shift();
      if (queued) resolve(queued);
      else waiters.push(resolve);
    });
  return { ws, next };
}

describe('the delta channel on the local stack', () => {
  it('delivers what DeltaStream publishes to a subscriber of the own workspace, in order and complete', async () => {
    const events: DeltaEvent[] = [];
    const sub = await subscribe(crumbs.scopedToken, crumbs.scopedWorkspace, 'req-in-order', events);
    const stream = new DeltaStream({
      channel: await channelFor(crumbs.scopedWorkspace, 'req-in-order'),
      publisher: publisher(),
      limits: { firstIntervalMs: 5, maxIntervalMs: 10 },
    });
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `);
    for (const w of words) {
      stream.write(w);
      await new Promise((r) => setTimeout(r, 2));
    }
    const stats = await stream.final('completed', 'answer-1');
    expect(stats.failures).toBe(0);
    const final = await sub.done;
    expect(final).toMatchObject({ type: 'final', status: 'completed', answer_id: 'answer-1' });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(
      events
        .filter((e) => e.type === 'delta')
        .map((e) => (e.type === 'delta' ? e.text : ''))
        .join(''),
    ).toBe(words.join(''));
  });

  it('two workspaces never see each other’s deltas: another workspace’s channel is refused', async () => {
    // The scoped token may use only its own workspace: the same request id elsewhere is another channel, refused.
    await expect(subscribe(crumbs.scopedToken, 'someone-else', 'req-in-order')).rejects.toMatchObject({
      name: 'ChannelSubscribeError',
      errorTypes: ['UnauthorizedException'],
    });
    // A subscriber of workspace a sees nothing published to workspace b's request of the same id.
    const seenA: DeltaEvent[] = [];
    const subA = await subscribe(crumbs.token, 'iso-a', 'same-id', seenA);
    const seenB: DeltaEvent[] = [];
    const subB = await subscribe(crumbs.token, 'iso-b', 'same-id', seenB);
    await publisher().publish(await channelFor('iso-b', 'same-id'), [
      JSON.stringify({ type: 'delta', segment: 1, seq: 1, text: 'for b only' }),
      JSON.stringify({ type: 'final', segment: 1, seq: 2, status: 'completed', answer_id: 'b' }),
    ]);
    await subB.done;
    expect(seenB.map((e) => e.type)).toEqual(['delta', 'final']);
    await publisher().publish(await channelFor('iso-a', 'same-id'), [
      JSON.stringify({ type: 'final', segment: 1, seq: 1, status: 'cancelled' }),
    ]);
    await subA.done;
    expect(seenA).toEqual([{ type: 'final', segment: 1, seq: 1, status: 'cancelled' }]);
  });

  it('refuses a bad token at connect', async () => {
    await expect(subscribe('not-a-token', crumbs.scopedWorkspace, 'r')).rejects.toThrow(/401/);
  });

  it('refuses wildcard subscriptions and publishing with a token', async () => {
    const { ws, next } = await rawSocket(crumbs.token);
    ws.send(JSON.stringify({ type: 'connection_init' }));
    expect(await next()).toMatchObject({ type: 'connection_ack', connectionTimeoutMs: 300000 });
    const authorization = { host: httpHost, Authorization: crumbs.token };
    ws.send(JSON.stringify({ type: 'subscribe', id: 's1', channel: '/crumbs/*', authorization }));
    expect(await next()).toMatchObject({ type: 'subscribe_error', id: 's1' });
    const channel = await channelFor('pub-test', 'r1');
    ws.send(JSON.stringify({ type: 'subscribe', id: 's2', channel, authorization }));
    expect(await next()).toEqual({ type: 'subscribe_success', id: 's2' });
    ws.send(
      JSON.stringify({ type: 'publish', id: 'p1', channel, events: ['{"type":"delta"}'], authorization }),
    );
    expect(await next()).toMatchObject({
      type: 'publish_error',
      id: 'p1',
      errors: [{ errorType: 'UnauthorizedException' }],
    });
    ws.send(JSON.stringify({ type: 'unsubscribe', id: 's2' }));
    expect(await next()).toEqual({ type: 'unsubscribe_success', id: 's2' });
    ws.close();
  });

  it('takes the stack’s signed publish and refuses unsigned, token and wrongly signed ones', async () => {
    const channel = await channelFor('pub-test', 'r2');
    const body = JSON.stringify({ channel, events: ['{"type":"final","seq":1,"status":"completed"}'] });
    const post = (headers: Record<string, string>) =>
      fetch(`${httpUrl}/event`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: `Bearer ${crumbs.token}` })).status).toBe(401);
    const forged = new AppSyncEventsPublisher({
      httpUrl,
      region: LOCAL_REGION,
      credentials: () => ({ accessKeyId: LOCAL_CREDENTIALS.accessKeyId, secretAccessKey: 'guessed' }),
    });
    await expect(forged.publish(channel, ['{"type":"delta","seq":1,"text":"x"}'])).rejects.toMatchObject({
      status: 401,
    });
    await expect(
      publisher().publish(channel, ['{"type":"delta","seq":1,"text":"x"}']),
    ).resolves.toBeUndefined();
    await expect(publisher().publish(channel, ['not json'])).rejects.toMatchObject({ status: 400 });
  });

  it('serves a request as server-sent events that end after the final', async () => {
    const result = await sseFromChannel(async (onEvent) => {
      const sub = await subscribeToRequest({
        realtimeUrl,
        httpHost,
        token: crumbs.token,
        workspace: 'sse-ws',
        requestId: 'r1',
        webSocket: WebSocket,
        onEvent,
      });
      return sub;
    });
    await publisher().publish(await channelFor('sse-ws', 'r1'), [
      JSON.stringify({ type: 'delta', segment: 1, seq: 1, text: 'Hi' }),
      JSON.stringify({ type: 'final', segment: 1, seq: 2, status: 'completed', answer_id: 'a1' }),
    ]);
    let body = '';
    for await (const chunk of result.bodyStream) body += chunk;
    expect(result.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(body).toBe(
      'id: 1-1\nevent: delta\ndata: {"type":"delta","segment":1,"seq":1,"text":"Hi"}\n\n' +
        'id: 1-2\nevent: final\ndata: {"type":"final","segment":1,"seq":2,"status":"completed","answer_id":"a1"}\n\n',
    );
  });
});

describe('the local events server’s bounds', () => {
  it('caps subscriptions per connection and closes idle connections', async () => {
    const tokens = parseScopedTokens(JSON.stringify({ 'bounds-token-1': ['b1'] }));
    const server = await startLocalEventsServer({
      port: 0,
      host: '127.0.0.1',
      tokens,
      workspacesClaim: 'crumbs:workspaces',
      credentials: LOCAL_CREDENTIALS,
      limits: { maxSubscriptionsPerConnection: 1, idleMs: 200, maxConnections: 1 },
    });
    try {
      const header = Buffer.from(JSON.stringify({ host: 'x', Authorization: 'bounds-token-1' })).toString(
        'base64url',
      );
      const ws = new WebSocket(server.realtimeUrl, ['aws-appsync-event-ws', `header-${header}`]);
      const messages: Record<string, unknown>[] = [];
      ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
      await new Promise((r) => ws.once('open', r));
      // A second connection is over the cap.
      const second = new WebSocket(server.realtimeUrl, ['aws-appsync-event-ws', `header-${header}`]);
      await expect(new Promise((_, reject) => second.once('error', reject))).rejects.toThrow(/429/);
      const authorization = { Authorization: 'bounds-token-1' };
      ws.send(
        JSON.stringify({ type: 'subscribe', id: 'a', channel: await channelFor('b1', 'r1'), authorization }),
      );
      ws.send(
        JSON.stringify({ type: 'subscribe', id: 'b', channel: await channelFor('b1', 'r2'), authorization }),
      );
      await new Promise((r) => setTimeout(r, 100));
      expect(messages.map((m) => m.type)).toEqual(['subscribe_success', 'subscribe_error']);
      ws.send(JSON.stringify({ type: 'unsubscribe', id: 'a' }));
      const closed = await new Promise<number>((r) => ws.once('close', (code) => r(code)));
      expect(closed).toBe(4000);
    } finally {
      await server.stop();
    }
  });
});

describe('the local events server’s shares per workspace and per token', () => {
  /** Opens a connection as `token`; resolves with it, or with the refusal's status and Retry-After. */
  function connect(
    url: string,
    token: string,
  ): Promise<{ ws: WebSocket } | { status: number; retryAfter: string | undefined; body: string }> {
    const header = Buffer.from(JSON.stringify({ host: 'x', Authorization: token })).toString('base64url');
    const ws = new WebSocket(url, ['aws-appsync-event-ws', `header-${header}`]);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve({ ws }));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += String(c);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }),
        );
      });
      ws.once('error', reject);
    });
  }

  /** Subscribes on `ws` as `token`; resolves with the answer's type and error types. */
  async function subscribeOn(ws: WebSocket, token: string, id: string, channel: string) {
    const answer = new Promise<Record<string, unknown>>((resolve) => {
      const onMessage = (d: WebSocket.RawData) => {
        const m = JSON.parse(String(d)) as Record<string, unknown>;
        if (m.id !== id) return;
        ws.off('message', onMessage);
        resolve(m);
      };
      ws.on('message', onMessage);
    });
    ws.send(JSON.stringify({ type: 'subscribe', id, channel, authorization: { Authorization: token } }));
    const m = await answer;
    return {
      type: m.type,
      errors: ((m.errors ?? []) as { errorType: string; message: string }[]).map((e) => e.errorType),
      message: ((m.errors ?? []) as { message: string }[])[0]?.message ?? '',
    };
  }

  it('refuses a workspace’s or a token’s connection over its share with 429 and Retry-After, while another workspace still connects', async () => {
    const tokens = parseScopedTokens(
      JSON.stringify({ 'hog-token-1': ['h1'], 'hog-token-2': ['h1'], 'calm-token-1': ['c1'] }),
    );
    const server = await startLocalEventsServer({
      port: 0,
      host: '127.0.0.1',
      tokens,
      workspacesClaim: 'crumbs:workspaces',
      credentials: LOCAL_CREDENTIALS,
      limits: {
        maxConnections: 10,
        maxConnectionsPerWorkspace: 3,
        maxConnectionsPerToken: 2,
        retryAfterSeconds: 7,
      },
    });
    const open: WebSocket[] = [];
    const keep = (c: Awaited<ReturnType<typeof connect>>) => {
      if (!('ws' in c)) throw new Error(`refused: ${c.status} ${c.body}`);
      open.push(c.ws);
      return c.ws;
    };
    try {
      keep(await connect(server.realtimeUrl, 'hog-token-1'));
      keep(await connect(server.realtimeUrl, 'hog-token-1'));
      // The token's share (2) is spent.
      expect(await connect(server.realtimeUrl, 'hog-token-1')).toEqual({
        status: 429,
        retryAfter: '7',
        body: 'at most 2 connections per token',
      });
      // Another token of the same workspace gets the workspace's last connection, then the workspace's share is spent.
      keep(await connect(server.realtimeUrl, 'hog-token-2'));
      expect(await connect(server.realtimeUrl, 'hog-token-2')).toEqual({
        status: 429,
        retryAfter: '7',
        body: 'at most 3 connections per workspace (h1)',
      });
      // The neighbour is untouched by h1's spent share.
      keep(await connect(server.realtimeUrl, 'calm-token-1'));
      keep(await connect(server.realtimeUrl, 'calm-token-1'));
      // A connection that closes gives its place back.
      const first = open.shift() as WebSocket;
      await new Promise((resolve) => {
        first.once('close', resolve);
        first.close();
      });
      await vi.waitFor(async () => {
        const again = await connect(server.realtimeUrl, 'hog-token-1');
        expect('ws' in again).toBe(true);
        if ('ws' in again) open.push(again.ws);
      });
    } finally {
      for (const ws of open) ws.close();
      await server.stop();
    }
  });

  it('refuses a workspace’s or a token’s subscription over its share with LimitExceededException, while another workspace still subscribes', async () => {
    const tokens = parseScopedTokens(
      JSON.stringify({ 'hog-token-1': ['h1'], 'hog-token-2': ['h1'], 'calm-token-1': ['c1'] }),
    );
    const server = await startLocalEventsServer({
      port: 0,
      host: '127.0.0.1',
      tokens,
      workspacesClaim: 'crumbs:workspaces',
      credentials: LOCAL_CREDENTIALS,
      limits: { maxSubscriptionsPerWorkspace: 3, maxSubscriptionsPerToken: 2, retryAfterSeconds: 7 },
    });
    const sockets: WebSocket[] = [];
    const opened = async (token: string) => {
      const c = await connect(server.realtimeUrl, token);
      if (!('ws' in c)) throw new Error(`refused: ${c.status}`);
      sockets.push(c.ws);
      return c.ws;
    };
    try {
      const hog1 = await opened('hog-token-1');
      const hog1b = await opened('hog-token-1');
      const hog2 = await opened('hog-token-2');
      const calm = await opened('calm-token-1');
      const ok = { type: 'subscribe_success', errors: [], message: '' };
      expect(await subscribeOn(hog1, 'hog-token-1', 'a', await channelFor('h1', 'r1'))).toEqual(ok);
      // A token's share counts over all its connections.
      expect(await subscribeOn(hog1b, 'hog-token-1', 'b', await channelFor('h1', 'r2'))).toEqual(ok);
      expect(await subscribeOn(hog1b, 'hog-token-1', 'c', await channelFor('h1', 'r3'))).toEqual({
        type: 'subscribe_error',
        errors: ['LimitExceededException'],
        message: 'at most 2 subscriptions per token; try again in 7 s',
      });
      expect(await subscribeOn(hog2, 'hog-token-2', 'd', await channelFor('h1', 'r4'))).toEqual(ok);
      expect(await subscribeOn(hog2, 'hog-token-2', 'e', await channelFor('h1', 'r5'))).toEqual({
        type: 'subscribe_error',
        errors: ['LimitExceededException'],
        message: 'at most 3 subscriptions per workspace; try again in 7 s',
      });
      expect(await subscribeOn(calm, 'calm-token-1', 'f', await channelFor('c1', 'r1'))).toEqual(ok);
      // An unsubscribe gives the place back to the workspace.
      hog1.send(JSON.stringify({ type: 'unsubscribe', id: 'a' }));
      await vi.waitFor(async () =>
        expect(
          await subscribeOn(hog2, 'hog-token-2', `g${Math.random()}`, await channelFor('h1', 'r6')),
        ).toEqual(ok),
      );
      // And so does a connection that closes: its subscriptions are let go.
      await new Promise((resolve) => {
        hog1b.once('close', resolve);
        hog1b.close();
      });
      await vi.waitFor(async () =>
        expect(
          await subscribeOn(hog1, 'hog-token-1', `h${Math.random()}`, await channelFor('h1', 'r7')),
        ).toEqual(ok),
      );
    } finally {
      for (const ws of sockets) ws.close();
      await server.stop();
    }
  });
});

describe('a stream crumbs holds for a caller, refused by the events server', () => {
  /** Leases that never refuse (the events server's own shares are under test here). */
  const openLeases = new StreamLeases({ take: async () => true, give: async () => undefined });

  it('is the caller’s 429 with Retry-After over a share, 403 for a channel the token may not read, never a 500', async () => {
    const tokens = parseScopedTokens(JSON.stringify({ 'hog-token-1': ['h1'], 'calm-token-1': ['c1'] }));
    const server = await startLocalEventsServer({
      port: 0,
      host: '127.0.0.1',
      tokens,
      workspacesClaim: 'crumbs:workspaces',
      credentials: LOCAL_CREDENTIALS,
      limits: { maxConnectionsPerToken: 1, retryAfterSeconds: 7 },
    });
    const subscribe = channelSubscriber(
      { realtime_url: server.realtimeUrl, http_host: new URL(server.httpUrl).host },
      openLeases,
    );
    try {
      const held = await subscribe('h1', 'r1', 'Bearer hog-token-1', () => undefined);
      // The token's one connection is taken: the events server refuses the upgrade with 429.
      const refused = await subscribe('h1', 'r2', 'Bearer hog-token-1', () => undefined).catch(
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(TooManyRequestsError);
      expect(refused).toMatchObject({ status: 429, retryAfterSeconds: 10 });
      // Another workspace's channel with a token that does not grant it: 403.
      const forbidden = await subscribe('h1', 'r3', 'Bearer calm-token-1', () => undefined).catch(
        (e: unknown) => e,
      );
      expect(forbidden).toMatchObject({ status: 403 });
      // The neighbour still subscribes.
      const calm = await subscribe('c1', 'r1', 'Bearer calm-token-1', () => undefined);
      calm.close();
      held.close();
    } finally {
      await server.stop();
    }
  });
});
