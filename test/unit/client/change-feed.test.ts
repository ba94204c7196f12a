import { afterEach, describe, expect, it, vi } from 'vitest';
import { ChangeFeed, type ChangesAnswer, type FeedStatus, MAX_SEEN } from '#shared/client/change-feed.ts';
import { encodeCursor } from '#shared/core/stream/changes.ts';
import { changeMatches, type FeedChange, feedEvents } from '#shared/core/stream/feed-events.ts';
import type { WebSocketLike } from '#shared/core/streaming/channel-socket.ts';

/** A socket that plays AppSync's side: acknowledges, answers subscribes from a script, and pushes on demand. */
class ScriptedSocket implements WebSocketLike {
  static all: ScriptedSocket[] = [];
  static answerSubscribe: (message: Record<string, unknown>) => Record<string, unknown> = (m) => ({
    type: 'subscribe_success',
    id: m.id,
  });
  onopen: WebSocketLike['onopen'] = null;
  onmessage: WebSocketLike['onmessage'] = null;
  onclose: WebSocketLike['onclose'] = null;
  onerror: WebSocketLike['onerror'] = null;
  sent: Record<string, unknown>[] = [];
  closed = false;
  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {
    ScriptedSocket.all.push(this);
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
  /** The server drops the connection. */
  drop(): void {
    this.close(1006, 'gone');
  }
  receive(message: Record<string, unknown>): void {
    queueMicrotask(() => this.onmessage?.({ data: JSON.stringify(message) }));
  }
  push(changes: FeedChange[]): void {
    const id = this.sent.find((m) => m.type === 'subscribe')?.id;
    for (const e of feedEvents(changes)) this.receive({ type: 'data', id, event: e.text });
  }
  static latest(): ScriptedSocket {
    return ScriptedSocket.all[ScriptedSocket.all.length - 1] as ScriptedSocket;
  }
}

const BASE = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(BASE + ms).toISOString();

/** A change written at `ms` (its position sorts by time, as the change log's do). */
function change(ms: number, id: string, extra: Partial<FeedChange['event']> = {}): FeedChange {
  return {
    cursor: encodeCursor(`${iso(ms)}#${id}#0000000001`),
    event: {
      type: 'created',
      id,
      version: 1,
      schema_name: 'note.text.v1',
      title: id,
      tags: [],
      created_by: 'user:x',
      updated_by: 'user:x',
      updated_at: iso(ms),
      causation: null,
      status: null,
      outcome: 'ok',
      ...extra,
    },
  };
}

/** `/changes?wait=0` over a list of changes: what is older than `now - settle`, from `after` or a backlog. */
function changeLog(settleMs = 1000) {
  const entries: FeedChange[] = [];
  const reads: { after?: string; backlog?: number }[] = [];
  let now = 0;
  const decode = (c: string) => Buffer.from(c, 'base64url').toString();
  const read = async (q: {
    after?: string;
    backlog?: number;
    filters?: Parameters<typeof changeMatches>[0];
  }): Promise<ChangesAnswer> => {
    reads.push({ ...(q.after ? { after: q.after } : {}), ...(q.backlog ? { backlog: q.backlog } : {}) });
    const until = `${iso(now - settleMs)}~`;
    const settled = entries
      .filter((e) => decode(e.cursor) <= until)
      .sort((a, b) => (decode(a.cursor) < decode(b.cursor) ? -1 : 1));
    if (q.backlog) {
      return {
        changes: settled.filter((e) => changeMatches(q.filters ?? {}, e.event)).slice(-q.backlog),
        cursor: encodeCursor(until),
      };
    }
    const after = q.after ? decode(q.after) : until;
    const page = settled.filter((e) => decode(e.cursor) > after).slice(0, 200);
    return {
      changes: page,
      cursor: page.length === 200 ? (page[199] as FeedChange).cursor : encodeCursor(until),
    };
  };
  return {
    entries,
    reads,
    read,
    at: (ms: number) => {
      now = ms;
    },
  };
}

const CHANNEL = { channel: '/changes/wteam-da', realtime_url: 'wss://r/event/realtime', http_host: 'h' };

function feedOf(log: ReturnType<typeof changeLog>, reconcileMs?: number): ChangeFeed {
  return new ChangeFeed({
    channel: CHANNEL,
    token: 'jwt',
    read: log.read,
    webSocket: ScriptedSocket,
    ...(reconcileMs !== undefined ? { reconcileMs } : {}),
  });
}

const ids = (batches: FeedChange[][]) => batches.flat().map((c) => c.event.id);

afterEach(() => {
  vi.useRealTimers();
  ScriptedSocket.all = [];
  ScriptedSocket.answerSubscribe = (m) => ({ type: 'subscribe_success', id: m.id });
});

describe('ChangeFeed', () => {
  it('subscribes to the channel with the token, reads /changes once from now, then delivers each push once', async () => {
    const log = changeLog();
    log.at(10_000);
    log.entries.push(change(1000, 'before'));
    const feed = feedOf(log);
    const seen: FeedChange[][] = [];
    const states: FeedStatus['state'][] = [];
    const stop = feed.listen({}, (c) => seen.push(c), { onStatus: (s) => states.push(s.state) });
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    const socket = ScriptedSocket.latest();
    expect(socket.sent[1]).toMatchObject({ type: 'subscribe', channel: '/changes/wteam-da' });
    expect(log.reads).toEqual([{}]);
    const pushed = [change(10_100, 'a'), change(10_200, 'b')];
    socket.push(pushed);
    socket.push([pushed[1] as FeedChange]); // a publisher's retry
    // A change at or before what the chain has read was delivered already (or will not be).
    socket.push([change(100, 'old')]);
    await vi.waitFor(() => expect(ids(seen)).toEqual(['a', 'b']));
    await new Promise((r) => setTimeout(r, 10));
    expect(ids(seen)).toEqual(['a', 'b']);
    expect(states).toEqual(['connecting', 'live']);
    stop();
    feed.close();
    expect(socket.closed).toBe(true);
  });

  it('keeps the connection for the next listener a moment after the last one left, then closes it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const feed = feedOf(changeLog());
    const stop = feed.listen({}, () => undefined);
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    stop();
    await vi.advanceTimersByTimeAsync(1000);
    const again = feed.listen({ tag: 'x' }, () => undefined);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(ScriptedSocket.all).toHaveLength(1);
    expect(ScriptedSocket.latest().closed).toBe(false);
    again();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(ScriptedSocket.latest().closed).toBe(true);
  });

  it('filters as /changes does, per listener, over one connection', async () => {
    const log = changeLog();
    const feed = feedOf(log);
    const all: FeedChange[][] = [];
    const runs: FeedChange[][] = [];
    feed.listen({}, (c) => all.push(c));
    feed.listen({ schema_name: ['workflow.run.v1'] }, (c) => runs.push(c));
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    ScriptedSocket.latest().push([change(1, 'n'), change(2, 'r', { schema_name: 'workflow.run.v1' })]);
    await vi.waitFor(() => expect(ids(all)).toEqual(['n', 'r']));
    expect(ids(runs)).toEqual(['r']);
    expect(ScriptedSocket.all).toHaveLength(1);
    feed.close();
  });

  it('gives a listener with a backlog the older changes first and the newest pushes, each once', async () => {
    const log = changeLog(1000);
    log.at(5000);
    log.entries.push(change(1000, 'old-1'), change(2000, 'old-2'));
    const feed = feedOf(log);
    feed.listen({}, () => undefined);
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    // Pushed just now: too new for a read's settle lag, so only a replay brings it to a later listener.
    const fresh = change(4800, 'fresh');
    log.entries.push(fresh);
    ScriptedSocket.latest().push([fresh]);
    await new Promise((r) => setTimeout(r, 10));
    const seen: FeedChange[][] = [];
    feed.listen({}, (c) => seen.push(c), { backlog: 50 });
    await vi.waitFor(() => expect(ids(seen)).toEqual(['old-1', 'old-2', 'fresh']));
    ScriptedSocket.latest().push([fresh, change(4900, 'next')]);
    await vi.waitFor(() => expect(ids(seen)).toEqual(['old-1', 'old-2', 'fresh', 'next']));
    feed.close();
  });

  it('opens the connection again after it drops and reads on from its position: what was written meanwhile comes once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const log = changeLog(1000);
    log.at(10_000);
    const feed = feedOf(log);
    const seen: FeedChange[][] = [];
    feed.listen({}, (c) => seen.push(c));
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    const first = ScriptedSocket.latest();
    const pushed = change(9500, 'pushed');
    log.entries.push(pushed);
    first.push([pushed]);
    await vi.waitFor(() => expect(ids(seen)).toEqual(['pushed']));
    first.drop();
    await vi.waitFor(() => expect(feed.state).toMatchObject({ state: 'retrying', inMs: 1000 }));
    // Written while the connection was down: never pushed to this client.
    log.entries.push(change(9700, 'missed-1'), change(9800, 'missed-2'));
    log.at(20_000);
    await vi.advanceTimersByTimeAsync(1000);
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    expect(ScriptedSocket.all).toHaveLength(2);
    expect(ids(seen)).toEqual(['pushed', 'missed-1', 'missed-2']);
    expect(log.reads.at(-1)).toHaveProperty('after');
    feed.close();
  });

  it('stops, and says why, when the token may not subscribe', async () => {
    ScriptedSocket.answerSubscribe = (m) => ({
      type: 'subscribe_error',
      id: m.id,
      errors: [{ errorType: 'UnauthorizedException', message: 'Unauthorized' }],
    });
    const feed = feedOf(changeLog());
    const states: FeedStatus[] = [];
    feed.listen({}, () => undefined, { onStatus: (s) => states.push(s) });
    await vi.waitFor(() => expect(feed.state.state).toBe('stopped'));
    expect(states.at(-1)).toMatchObject({
      state: 'stopped',
      error: { errorTypes: ['UnauthorizedException'] },
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(ScriptedSocket.all).toHaveLength(1);
  });

  it('waits at least 10 s before trying again when refused for capacity', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let refuse = true;
    ScriptedSocket.answerSubscribe = (m) =>
      refuse
        ? {
            type: 'subscribe_error',
            id: m.id,
            errors: [{ errorType: 'LimitExceededException', message: 'full' }],
          }
        : { type: 'subscribe_success', id: m.id };
    const feed = feedOf(changeLog());
    feed.listen({}, () => undefined);
    await vi.waitFor(() => expect(feed.state).toMatchObject({ state: 'retrying', inMs: 10_000 }));
    refuse = false;
    // (vi.waitFor moves fake time on by its interval too: a margin below 10 s.)
    await vi.advanceTimersByTimeAsync(9_000);
    expect(ScriptedSocket.all).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    feed.close();
  });

  it('finds a push that never came on its next reconcile while a listener asks for exactness', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const log = changeLog(1000);
    log.at(10_000);
    const feed = feedOf(log, 5000);
    const seen: FeedChange[][] = [];
    feed.listen({}, (c) => seen.push(c), { exact: true });
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    log.entries.push(change(10_500, 'lost'));
    log.at(12_000);
    await vi.advanceTimersByTimeAsync(5000);
    await vi.waitFor(() => expect(ids(seen)).toEqual(['lost']));
    // Pushed late after all: already read, so not again.
    ScriptedSocket.latest().push([change(10_500, 'lost')]);
    await vi.advanceTimersByTimeAsync(10);
    expect(ids(seen)).toEqual(['lost']);
    feed.close();
  });

  it('reads on (and forgets what it read past) once it has seen MAX_SEEN changes', async () => {
    const log = changeLog(0);
    log.at(1);
    const feed = feedOf(log);
    let count = 0;
    feed.listen({}, (c) => {
      count += c.length;
    });
    await vi.waitFor(() => expect(feed.state.state).toBe('live'));
    const many = Array.from({ length: MAX_SEEN }, (_, i) => change(10 + i, `c${i}`));
    log.entries.push(...many);
    log.at(10 + MAX_SEEN + 10);
    ScriptedSocket.latest().push(many);
    await vi.waitFor(() => expect(count).toBe(MAX_SEEN));
    await vi.waitFor(() => expect(log.reads.length).toBeGreaterThan(1));
    await new Promise((r) => setTimeout(r, 20));
    expect(count).toBe(MAX_SEEN);
    feed.close();
  });
});
