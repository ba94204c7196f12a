/**
 * Following a workspace's changes as they are pushed (the dashboard's views, `crumbs tail`): one subscription to
 * the workspace's change channel (`GET …/changes/channel` says where) shared by every listener of a session (open
 * while one listens, and a few seconds after the last one left), and
 * `GET …/changes?wait=0` — answered at once, never held — only to catch up.
 *
 * The rule: a listener sees each change once, and misses none that `/changes` would show, as long as pushes
 * arrive. Positions (`cursor`s) order changes; the feed keeps the position it has read `/changes` up to (`read`),
 * a chain without gaps, and drops a pushed change at or before it (already read) or already seen.
 * - Subscribed first, then read: the first read (from now) starts the chain, so a change written after the
 *   subscription is pushed and one written before is read — the settle lag of `/changes` means nothing falls
 *   between.
 * - A connection that ends is opened again (back-off from 1 s, doubling to 30 s; longer after a refusal for
 *   capacity), then the chain is read on from its position: what was written meanwhile arrives once.
 * - A push that AppSync never delivered (a publish failed) is found by the next catch-up: on reconnect, when the
 *   set of seen changes reaches `MAX_SEEN` (a read then moves the chain on and forgets what lies behind it), and
 *   every `reconcileMs` while a listener asked for `exact` (`crumbs tail`, Chat waiting for an answer).
 * - A new listener's own first read (its filters, its backlog) runs after the feed is subscribed, and the changes
 *   pushed shortly before it registered are replayed to it, so it too misses nothing and sees nothing twice.
 * A refused token (401/403, or `UnauthorizedException`) stops the feed: its listeners are told and the caller
 * decides (the dashboard shows it).
 *
 * Browser-safe (the dashboard bundles it): the WebSocket class and the `/changes` reader are given.
 */
import type { ChangeFilters } from '#shared/core/stream/changes.ts';
import {
  changeKey,
  changeMatches,
  type FeedChange,
  MAX_CHANGES_PER_ANSWER,
  parseFeedEvent,
  positionKey,
} from '#shared/core/stream/feed-events.ts';
import {
  type ChannelSocket,
  ChannelSubscribeError,
  openChannelSocket,
  type WebSocketConstructor,
} from '#shared/core/streaming/channel-socket.ts';

/** Where the changes are pushed (`GET …/changes/channel`). */
export interface ChangeChannel {
  readonly channel: string;
  readonly realtime_url: string;
  readonly http_host: string;
}

/** One answer of `GET …/changes?wait=0`: its changes (oldest first) and the position it read up to. */
export interface ChangesAnswer {
  readonly changes: FeedChange[];
  readonly cursor: string | undefined;
}

/** Reads `GET …/changes?wait=0`: after `after` (Last-Event-ID), or from now with the newest `backlog` first. */
export type ReadChanges = (query: {
  after?: string;
  backlog?: number;
  filters?: ChangeFilters;
}) => Promise<ChangesAnswer>;

export type FeedStatus =
  | { readonly state: 'connecting' }
  | { readonly state: 'live' }
  | { readonly state: 'retrying'; readonly error: Error; readonly inMs: number }
  | { readonly state: 'stopped'; readonly error: Error };

/** Timers, replaceable in tests. */
export interface FeedTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const systemTimers: FeedTimers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface ChangeFeedOptions {
  readonly channel: ChangeChannel;
  /**
   * The caller's token (the API's): the channel's onSubscribe handler checks its workspaces claim. A function is
   * asked again at each (re)connect, so a signed-in session's refreshed token is the one sent.
   */
  readonly token: string | (() => Promise<string | undefined>);
  readonly read: ReadChanges;
  /** Default `globalThis.WebSocket` (browsers); Node passes `WebSocket` of the `ws` package. */
  readonly webSocket?: WebSocketConstructor;
  /** How often an `exact` listener's feed reads `/changes` to find lost pushes. Default 60 s. */
  readonly reconcileMs?: number;
  readonly timers?: FeedTimers;
}

export interface ListenOptions {
  /** Changes written before the listener came, newest this many (read once with its filters). Default 0. */
  readonly backlog?: number;
  /** Reconcile every `reconcileMs` while this listener listens (a lost push shows up by then). */
  readonly exact?: boolean;
  /** Told when the feed's state changes (and at once with the current one). */
  readonly onStatus?: (status: FeedStatus) => void;
}

/** Seen changes the feed remembers before it reads on to forget what lies behind (a reconcile). */
export const MAX_SEEN = 2000;
/**
 * How long pushed changes are kept to replay to a listener that reads a backlog: its read answers only what is
 * older than `/changes`' settle lag, so the newest pushes before it came are replayed (deduplicated).
 */
const REPLAY_MS = 10_000;
const REPLAY_MAX = 500;
/** A listener's own deduplication, for the overlap of its first read with pushes. */
const LISTENER_SEEN = 2000;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 30_000;
const LIMITED_RETRY_MS = 10_000;
/** How long a feed without listeners keeps its connection (the next view's listener is usually on its way). */
const IDLE_CLOSE_MS = 5_000;

interface Listener {
  readonly filters: ChangeFilters;
  readonly onChanges: (changes: FeedChange[]) => void;
  readonly options: ListenOptions;
  /** Pushes that came while its first read ran. */
  pending: FeedChange[] | undefined;
  readonly delivered: Set<string>;
}

export class ChangeFeed {
  private readonly timers: FeedTimers;
  private readonly listeners = new Set<Listener>();
  private socket: ChannelSocket | undefined;
  private status: FeedStatus = { state: 'connecting' };
  /** The position `/changes` has been read up to (its cursor, and the key that orders it). */
  private position: { cursor: string; key: string } | undefined;
  /** Changes seen after `position`: their keys, and the keys of their positions. */
  private readonly seen = new Map<string, string>();
  private recent: { at: number; change: FeedChange }[] = [];
  private started = false;
  private closed = false;
  private attempt = 0;
  private retryTimer: unknown;
  private reconcileTimer: unknown;
  private idleTimer: unknown;
  private reading: Promise<void> | undefined;
  private readAgain = false;
  private liveWaiters: (() => void)[] = [];

  constructor(private readonly options: ChangeFeedOptions) {
    this.timers = options.timers ?? systemTimers;
  }

  /** The feed's state now. */
  get state(): FeedStatus {
    return this.status;
  }

  /**
   * Delivers every change matching `filters` from now on (and the newest `backlog` before) to `onChanges`, each
   * once; returns the function that stops it. The first listener opens the connection, the last one closes it.
   */
  listen(
    filters: ChangeFilters,
    onChanges: (changes: FeedChange[]) => void,
    options: ListenOptions = {},
  ): () => void {
    const listener: Listener = { filters, onChanges, options, pending: [], delivered: new Set() };
    this.timers.clearTimeout(this.idleTimer);
    this.listeners.add(listener);
    options.onStatus?.(this.status);
    if (!this.started) this.start();
    this.scheduleReconcile();
    void this.whenLive().then(() => this.welcome(listener));
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size > 0) return;
      // A view giving way to another drops its listener just before the next one comes: keep the connection.
      this.timers.clearTimeout(this.idleTimer);
      this.idleTimer = this.timers.setTimeout(() => {
        if (this.listeners.size === 0) this.close();
      }, IDLE_CLOSE_MS);
    };
  }

  /** Ends the subscription and every timer; listeners hear nothing more. */
  close(): void {
    this.closed = true;
    this.started = false;
    this.timers.clearTimeout(this.retryTimer);
    this.timers.clearTimeout(this.reconcileTimer);
    this.timers.clearTimeout(this.idleTimer);
    this.socket?.close();
    this.socket = undefined;
    this.listeners.clear();
    for (const wake of this.liveWaiters.splice(0)) wake();
  }

  private start(): void {
    this.started = true;
    this.closed = false;
    void this.connect();
  }

  private setStatus(status: FeedStatus): void {
    const same =
      status.state === this.status.state && (status.state === 'connecting' || status.state === 'live');
    this.status = status;
    if (same) return;
    for (const l of this.listeners) l.options.onStatus?.(status);
  }

  private whenLive(): Promise<void> {
    if (this.status.state === 'live' || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.liveWaiters.push(resolve));
  }

  private async connect(): Promise<void> {
    this.setStatus({ state: 'connecting' });
    try {
      const socket = await openChannelSocket({
        realtimeUrl: this.options.channel.realtime_url,
        httpHost: this.options.channel.http_host,
        token:
          typeof this.options.token === 'string' ? this.options.token : ((await this.options.token()) ?? ''),
        channel: this.options.channel.channel,
        ...(this.options.webSocket ? { webSocket: this.options.webSocket } : {}),
        onData: (text) => this.onPush(text),
        onClose: (error) => {
          this.socket = undefined;
          if (!this.closed) this.retry(error);
        },
      });
      if (this.closed) {
        socket.close();
        return;
      }
      this.socket = socket;
      this.attempt = 0;
      // The chain starts (or goes on) only now that pushes arrive: nothing written meanwhile falls between.
      await this.catchUp();
      if (this.closed) return;
      this.setStatus({ state: 'live' });
      for (const wake of this.liveWaiters.splice(0)) wake();
    } catch (error) {
      if (this.closed) return;
      const failure = error instanceof Error ? error : new Error(String(error));
      if (failure instanceof ChannelSubscribeError && failure.unauthorized) {
        this.setStatus({ state: 'stopped', error: failure });
        this.socket?.close();
        for (const wake of this.liveWaiters.splice(0)) wake();
        return;
      }
      this.socket?.close();
      this.socket = undefined;
      this.retry(failure);
    }
  }

  private retry(error: Error): void {
    this.attempt += 1;
    const backoff = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (this.attempt - 1));
    const inMs =
      error instanceof ChannelSubscribeError && error.limited ? Math.max(LIMITED_RETRY_MS, backoff) : backoff;
    this.setStatus({ state: 'retrying', error, inMs });
    this.timers.clearTimeout(this.retryTimer);
    this.retryTimer = this.timers.setTimeout(() => {
      if (!this.closed) void this.connect();
    }, inMs);
  }

  /** Reads `/changes` on from the chain's position until caught up (one read at a time; a request meanwhile runs after). */
  private catchUp(): Promise<void> {
    if (this.reading) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.readAgain = false;
        for (;;) {
          const answer = await this.options.read(
            this.position !== undefined ? { after: this.position.cursor } : {},
          );
          if (this.closed) return;
          this.accept(answer.changes);
          if (answer.cursor !== undefined) this.moveTo(answer.cursor);
          if (answer.changes.length < MAX_CHANGES_PER_ANSWER) break;
        }
      } while (this.readAgain && !this.closed);
    })().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** The chain has been read up to `cursor`: forget what lies at or before it. */
  private moveTo(cursor: string): void {
    const position = { cursor, key: positionKey(cursor) };
    this.position = position;
    for (const [key, at] of this.seen) if (at <= position.key) this.seen.delete(key);
  }

  private onPush(text: string): void {
    const changes = parseFeedEvent(text);
    if (changes === undefined) return;
    const fresh = this.accept(changes);
    const now = this.timers.now();
    this.recent.push(...fresh.map((change) => ({ at: now, change })));
    this.recent = this.recent.filter((r) => now - r.at <= REPLAY_MS).slice(-REPLAY_MAX);
    if (this.seen.size >= MAX_SEEN) void this.catchUp().catch(() => undefined);
  }

  /** Delivers the changes not yet seen (and after the chain's position) to every listener; returns them. */
  private accept(changes: readonly FeedChange[]): FeedChange[] {
    const fresh: FeedChange[] = [];
    for (const change of changes) {
      const key = changeKey(change);
      if (this.seen.has(key)) continue;
      const at = positionKey(change.cursor);
      if (this.position !== undefined && at <= this.position.key) continue;
      this.seen.set(key, at);
      fresh.push(change);
    }
    if (fresh.length === 0) return fresh;
    for (const listener of this.listeners) {
      if (listener.pending !== undefined) listener.pending.push(...fresh);
      else this.deliver(listener, fresh);
    }
    return fresh;
  }

  private deliver(listener: Listener, changes: readonly FeedChange[]): void {
    const out: FeedChange[] = [];
    for (const change of changes) {
      if (!changeMatches(listener.filters, change.event)) continue;
      const key = changeKey(change);
      if (listener.delivered.has(key)) continue;
      listener.delivered.add(key);
      if (listener.delivered.size > LISTENER_SEEN) {
        const oldest = listener.delivered.values().next().value;
        if (oldest !== undefined) listener.delivered.delete(oldest);
      }
      out.push(change);
    }
    if (out.length > 0) listener.onChanges(out);
  }

  /**
   * A new listener's first read (its backlog) and the pushes of the last moments (which that read may be too early
   * for), then what came meanwhile. Without a backlog it hears only what comes after it.
   */
  private async welcome(listener: Listener): Promise<void> {
    if (!this.listeners.has(listener) || this.status.state === 'stopped') return;
    const backlog = listener.options.backlog ?? 0;
    let first: FeedChange[] = [];
    const now = this.timers.now();
    const replay = backlog > 0 ? this.recent.filter((r) => now - r.at <= REPLAY_MS).map((r) => r.change) : [];
    if (backlog > 0) {
      try {
        first = (await this.options.read({ backlog, filters: listener.filters })).changes;
      } catch (error) {
        listener.options.onStatus?.({
          state: 'retrying',
          error: error instanceof Error ? error : new Error(String(error)),
          inMs: 0,
        });
      }
    }
    const waiting = listener.pending ?? [];
    listener.pending = undefined;
    if (!this.listeners.has(listener)) return;
    this.deliver(listener, [...first, ...replay, ...waiting]);
  }

  private scheduleReconcile(): void {
    this.timers.clearTimeout(this.reconcileTimer);
    if (this.closed || ![...this.listeners].some((l) => l.options.exact)) return;
    this.reconcileTimer = this.timers.setTimeout(() => {
      if (this.status.state === 'live') void this.catchUp().catch(() => undefined);
      this.scheduleReconcile();
    }, this.options.reconcileMs ?? 60_000);
  }
}
