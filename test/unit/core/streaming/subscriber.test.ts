import { afterEach, describe, expect, it, vi } from 'vitest';
import { channelFor } from '#shared/core/streaming/channel.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { type SseSource, sseFromChannel } from '#shared/core/streaming/sse.ts';
import {
  type DeltaSubscription,
  SeqOrder,
  subscribeToRequest,
  type WebSocketLike,
} from '#shared/core/streaming/subscriber.ts';

/** A socket that plays AppSync's side from a script: what it answers to each message the client sends. */
class ScriptedSocket implements WebSocketLike {
  static last: ScriptedSocket | undefined;
  onopen: WebSocketLike['onopen'] = null;
  onmessage: WebSocketLike['onmessage'] = null;
  onclose: WebSocketLike['onclose'] = null;
  onerror: WebSocketLike['onerror'] = null;
  sent: Record<string, unknown>[] = [];
  closed = false;
  static answerSubscribe: (message: Record<string, unknown>) => Record<string, unknown> = (m) => ({
    type: 'subscribe_success',
    id: m.id,
  });
  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {
    ScriptedSocket.last = this;
    queueMicrotask(() => this.onopen?.({}));
  }
  send(data: string): void {
    const message = JSON.parse(data) as Record<string, unknown>;
    this.sent.push(message);
    if (message.type === 'connection_init')
      this.receive({ type: 'connection_ack', connectionTimeoutMs: 300000 });
    if (message.type === 'subscribe') this.receive(ScriptedSocket.answerSubscribe(message));
  }
  close(code = 1000, reason = ''): void {
    if (this.closed) return;
    this.closed = true;
    queueMicrotask(() => this.onclose?.({ code, reason }));
  }
  receive(message: Record<string, unknown>): void {
    queueMicrotask(() => this.onmessage?.({ data: JSON.stringify(message) }));
  }
  data(event: DeltaEvent): void {
    const id = this.sent.find((m) => m.type === 'subscribe')?.id;
    this.receive({ type: 'data', id, event: JSON.stringify(event) });
  }
}

async function subscribed(events: DeltaEvent[], gapTimeoutMs?: number): Promise<DeltaSubscription> {
  return subscribeToRequest({
    realtimeUrl: 'wss://x.appsync-realtime-api.eu-west-1.amazonaws.com/event/realtime',
    httpHost: 'x.appsync-api.eu-west-1.amazonaws.com',
    token: 'jwt',
    workspace: 'team-a',
    requestId: 'req-1',
    webSocket: ScriptedSocket,
    onEvent: (e) => events.push(e),
    ...(gapTimeoutMs !== undefined ? { gapTimeoutMs } : {}),
  });
}

afterEach(() => {
  vi.useRealTimers();
  ScriptedSocket.answerSubscribe = (m) => ({ type: 'subscribe_success', id: m.id });
});

describe('subscribeToRequest', () => {
  it('speaks AppSync Events: subprotocols with the authorization header, connection_init, subscribe to the channel', async () => {
    const sub = await subscribed([]);
    const socket = ScriptedSocket.last as ScriptedSocket;
    expect(socket.protocols[0]).toBe('aws-appsync-event-ws');
    const header = JSON.parse(Buffer.from(socket.protocols[1]?.slice(7) ?? '', 'base64url').toString());
    expect(header).toEqual({ host: 'x.appsync-api.eu-west-1.amazonaws.com', Authorization: 'jwt' });
    expect(socket.sent[0]).toEqual({ type: 'connection_init' });
    expect(socket.sent[1]).toMatchObject({
      type: 'subscribe',
      channel: await channelFor('team-a', 'req-1'),
      authorization: header,
    });
    expect(sub.channel).toBe(await channelFor('team-a', 'req-1'));
    sub.close();
    expect(await sub.done).toBeUndefined();
  });

  it('delivers in seq order, drops duplicates, ends with the final', async () => {
    const events: DeltaEvent[] = [];
    const sub = await subscribed(events);
    const socket = ScriptedSocket.last as ScriptedSocket;
    socket.data({ type: 'delta', segment: 1, seq: 2, text: 'b' });
    socket.data({ type: 'delta', segment: 1, seq: 1, text: 'a' });
    socket.data({ type: 'delta', segment: 1, seq: 1, text: 'a' });
    socket.data({ type: 'final', segment: 1, seq: 4, status: 'completed', answer_id: 'x' });
    socket.data({ type: 'reset', segment: 1, seq: 3, reason: 'retry' });
    expect(await sub.done).toEqual({
      type: 'final',
      segment: 1,
      seq: 4,
      status: 'completed',
      answer_id: 'x',
    });
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(socket.closed).toBe(true);
  });

  it('skips a gap that stays open, so a lost event never stops the stream', async () => {
    const events: DeltaEvent[] = [];
    const sub = await subscribed(events, 20);
    const socket = ScriptedSocket.last as ScriptedSocket;
    socket.data({ type: 'delta', segment: 1, seq: 1, text: 'a' });
    socket.data({ type: 'reset', segment: 1, seq: 3, reason: 'resent' });
    socket.data({ type: 'final', segment: 1, seq: 4, status: 'completed' });
    expect((await sub.done)?.seq).toBe(4);
    expect(events.map((e) => e.seq)).toEqual([1, 3, 4]);
  });

  it('rejects with AppSync’s error types when the subscription is refused', async () => {
    ScriptedSocket.answerSubscribe = (m) => ({
      type: 'subscribe_error',
      id: m.id,
      errors: [{ errorType: 'UnauthorizedException', message: 'Unauthorized' }],
    });
    await expect(subscribed([])).rejects.toMatchObject({
      name: 'ChannelSubscribeError',
      errorTypes: ['UnauthorizedException'],
    });
  });
});

describe('SeqOrder', () => {
  it('holds early events until the missing one comes', () => {
    const out: number[] = [];
    const order = new SeqOrder((e) => out.push(e.seq));
    expect(order.push({ type: 'delta', segment: 1, seq: 3, text: '' })).toBe(true);
    expect(order.push({ type: 'delta', segment: 1, seq: 2, text: '' })).toBe(true);
    expect(order.push({ type: 'delta', segment: 1, seq: 1, text: '' })).toBe(false);
    expect(out).toEqual([1, 2, 3]);
  });
});

describe('sseFromChannel', () => {
  it('frames events with id, event and data, beats the heart, and ends after the final', async () => {
    let deliver: (e: DeltaEvent) => void = () => undefined;
    const result = await sseFromChannel(
      async (onEvent) => {
        deliver = onEvent;
        return { close: () => undefined, done: new Promise(() => undefined) };
      },
      { heartbeatMs: 5 },
    );
    const iterator = result.bodyStream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toBe(': keep-alive\n\n');
    deliver({ type: 'delta', segment: 1, seq: 1, text: 'Hi' });
    deliver({ type: 'final', segment: 1, seq: 2, status: 'completed', answer_id: 'a' });
    const rest: string[] = [];
    for (let n = await iterator.next(); !n.done; n = await iterator.next()) rest.push(n.value);
    expect(rest.filter((c) => !c.startsWith(':'))).toEqual([
      'id: 1-1\nevent: delta\ndata: {"type":"delta","segment":1,"seq":1,"text":"Hi"}\n\n',
      'id: 1-2\nevent: final\ndata: {"type":"final","segment":1,"seq":2,"status":"completed","answer_id":"a"}\n\n',
    ]);
  });

  it('closes the subscription at once when the client leaves while it waits', async () => {
    let closed = 0;
    const source: SseSource = { close: () => (closed += 1), done: new Promise(() => undefined) };
    const result = await sseFromChannel(async () => source, { heartbeatMs: 60_000 });
    const iterator = result.bodyStream[Symbol.asyncIterator]();
    const pending = iterator.next();
    await iterator.return?.();
    expect(closed).toBe(1);
    expect(await pending).toEqual({ value: undefined, done: true });
  });
});

describe('subscribeToRequest gaps', () => {
  it('skips a gap after gapTimeoutMs even while later events keep arriving', async () => {
    const events: DeltaEvent[] = [];
    const sub = await subscribed(events, 30);
    const socket = ScriptedSocket.last as ScriptedSocket;
    socket.data({ type: 'delta', segment: 1, seq: 1, text: 'a' });
    for (let seq = 3; seq <= 8; seq += 1) {
      socket.data({ type: 'delta', segment: 1, seq, text: String(seq) });
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(events.map((e) => e.seq)).toEqual([1, 3, 4, 5, 6, 7, 8].slice(0, events.length));
    expect(events.length).toBeGreaterThan(1);
    socket.data({ type: 'final', segment: 1, seq: 9, status: 'completed' });
    expect((await sub.done)?.seq).toBe(9);
  });
});

describe('SeqOrder across segments (one per invocation that streams a part of the answer)', () => {
  it('starts over at a newer segment with a reset, drops an older one, and orders within a segment', () => {
    const got: DeltaEvent[] = [];
    const order = new SeqOrder((e) => got.push(e));
    order.push({ type: 'delta', segment: 100, seq: 1, text: 'Let me check. ' });
    order.push({ type: 'reset', segment: 100, seq: 2, reason: 'calling calculator' });
    // The next invocation's part: its second event first, then its first.
    expect(order.push({ type: 'delta', segment: 200, seq: 2, text: ' = 391' })).toBe(true);
    order.push({ type: 'delta', segment: 200, seq: 1, text: '17*23' });
    // A late event of the part before changes nothing.
    order.push({ type: 'delta', segment: 100, seq: 3, text: 'stale' });
    order.push({ type: 'final', segment: 200, seq: 3, status: 'completed', answer_id: 'a' });
    expect(got.map((e) => [e.type, e.segment, e.type === 'delta' ? e.text : ''])).toEqual([
      ['delta', 100, 'Let me check. '],
      ['reset', 100, ''],
      ['reset', 200, ''],
      ['delta', 200, '17*23'],
      ['delta', 200, ' = 391'],
      ['final', 200, ''],
    ]);
  });
});
