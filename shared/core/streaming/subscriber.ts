/**
 * Subscribes to one request's delta channel over AppSync Events' WebSocket protocol (AWS, and the local events
 * server): connect with subprotocols `aws-appsync-event-ws` and `header-<base64url {host, Authorization}>`,
 * `connection_init` → `connection_ack`, `subscribe` → `subscribe_success`, then `data` until the final event.
 * Resolves once the subscription is in place, so a caller can subscribe before it writes the request and miss
 * nothing. Events reach `onEvent` in `seq` order: duplicates are dropped, early ones wait for the missing ones
 * (a publisher that lost one starts over with a `reset`, so a gap is skipped after `gapTimeoutMs`). The socket class
 * is given (`ws` in Node, the browser's own `WebSocket`), so the dashboard runs this same code.
 */
import { channelFor } from '#shared/core/streaming/channel.ts';
import { type DeltaEvent, parseDeltaEvent } from '#shared/core/streaming/events.ts';

/**
 * A handler property taking `E` or any richer event (a method type, so the browser's and `ws`'s own event types,
 * which carry more, are accepted).
 */
type Handler<E> = { handle(event: E): void }['handle'] | null;

/** What this needs of a WebSocket: the browser's API, which `ws` implements too. */
export interface WebSocketLike {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: Handler<unknown>;
  onmessage: Handler<{ data: unknown }>;
  onclose: Handler<{ code: number; reason: string }>;
  onerror: Handler<unknown>;
}
export type WebSocketConstructor = new (url: string, protocols: string[]) => WebSocketLike;

/** Why the subscription could not be made or ended early (AppSync's error types where it sent some). */
export class DeltaSubscribeError extends Error {
  constructor(
    message: string,
    readonly errorTypes: readonly string[] = [],
  ) {
    super(message);
    this.name = 'DeltaSubscribeError';
  }
}

export interface SubscribeOptions {
  /** `realtime_url` of `streamingEndpoints` (`wss://<realtime domain>/event/realtime`). */
  readonly realtimeUrl: string;
  /** `http_host` of `streamingEndpoints`. */
  readonly httpHost: string;
  /** The caller's token (the JWT the API takes; locally a local token). */
  readonly token: string;
  readonly workspace: string;
  readonly requestId: string;
  readonly onEvent: (event: DeltaEvent) => void;
  /** Told once when the connection ends before the final event (the caller then reads the answer breadcrumb). */
  readonly onClose?: (error: DeltaSubscribeError) => void;
  /** Default `globalThis.WebSocket` (browsers); Node 20 passes `WebSocket` of the `ws` package. */
  readonly webSocket?: WebSocketConstructor;
  /** How long an early event waits for a missing one before the gap is skipped. Default 3 s. */
  readonly gapTimeoutMs?: number;
  /** How long connecting and subscribing may take. Default 10 s. */
  readonly timeoutMs?: number;
}

export interface DeltaSubscription {
  readonly channel: string;
  /** Resolves with the final event, or undefined when the subscription ended without one. */
  readonly done: Promise<Extract<DeltaEvent, { type: 'final' }> | undefined>;
  close(): void;
}

function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function errorsOf(message: Record<string, unknown>): { text: string; types: string[] } {
  const errors = Array.isArray(message.errors) ? (message.errors as Record<string, unknown>[]) : [];
  return {
    text: errors.map((e) => `${String(e.errorType ?? 'Error')}: ${String(e.message ?? '')}`).join('; '),
    types: errors.map((e) => String(e.errorType ?? 'Error')),
  };
}

/**
 * Orders events by (`segment`, `seq`): drops what was delivered and what belongs to an older segment, holds early
 * ones, skips a gap when told to. A newer segment starts over: it is delivered as a `reset` first (the part it
 * follows or replaces is done), then its events from `seq` 1.
 */
export class SeqOrder {
  private segment = -1;
  private next = 1;
  private readonly held = new Map<number, DeltaEvent>();
  constructor(private readonly deliver: (event: DeltaEvent) => void) {}
  /** Takes an event; returns whether some are held waiting for a missing one. */
  push(event: DeltaEvent): boolean {
    if (event.segment < this.segment) return this.held.size > 0;
    if (event.segment > this.segment) {
      if (this.segment >= 0) {
        // No reason of its own: the part before said why it ended (a tool round), or nothing needs saying.
        this.deliver({ type: 'reset', segment: event.segment, seq: 0, reason: '' });
      }
      this.segment = event.segment;
      this.next = 1;
      this.held.clear();
    }
    if (event.seq >= this.next && !this.held.has(event.seq)) this.held.set(event.seq, event);
    this.drain();
    return this.held.size > 0;
  }
  /** Gives up on the missing events before the earliest held one; returns whether some are still held. */
  skipGap(): boolean {
    if (this.held.size === 0) return false;
    this.next = Math.min(...this.held.keys());
    this.drain();
    return this.held.size > 0;
  }
  private drain(): void {
    for (let e = this.held.get(this.next); e !== undefined; e = this.held.get(this.next)) {
      this.held.delete(this.next);
      this.next += 1;
      this.deliver(e);
    }
  }
}

export async function subscribeToRequest(options: SubscribeOptions): Promise<DeltaSubscription> {
  const Socket = options.webSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (Socket === undefined)
    throw new DeltaSubscribeError('no WebSocket class: pass webSocket (the ws package)');
  const channel = await channelFor(options.workspace, options.requestId);
  const authorization = { host: options.httpHost, Authorization: options.token };
  const id = globalThis.crypto.randomUUID();
  const socket = new Socket(options.realtimeUrl, [
    'aws-appsync-event-ws',
    `header-${base64url(JSON.stringify(authorization))}`,
  ]);

  let subscribed = false;
  let finished = false;
  let resolveDone: (final: Extract<DeltaEvent, { type: 'final' }> | undefined) => void = () => undefined;
  const done = new Promise<Extract<DeltaEvent, { type: 'final' }> | undefined>((r) => {
    resolveDone = r;
  });
  let gapTimer: ReturnType<typeof setTimeout> | undefined;
  let kaTimer: ReturnType<typeof setTimeout> | undefined;
  let kaTimeoutMs = 300_000;
  const armKeepAlive = () => {
    if (kaTimer) clearTimeout(kaTimer);
    kaTimer = setTimeout(() => end(new DeltaSubscribeError('no keep-alive from the server')), kaTimeoutMs);
  };
  const order = new SeqOrder((event) => {
    if (finished) return;
    options.onEvent(event);
    if (event.type === 'final') {
      finished = true;
      cleanup();
      resolveDone(event);
      socket.close(1000, 'final');
    }
  });
  const cleanup = () => {
    if (gapTimer) clearTimeout(gapTimer);
    if (kaTimer) clearTimeout(kaTimer);
    gapTimer = undefined;
    kaTimer = undefined;
  };
  let fail: (error: DeltaSubscribeError) => void = () => undefined;
  const end = (error: DeltaSubscribeError) => {
    if (finished) return;
    finished = true;
    cleanup();
    socket.close();
    if (subscribed) {
      options.onClose?.(error);
      resolveDone(undefined);
    } else fail(error);
  };

  return new Promise<DeltaSubscription>((resolve, reject) => {
    fail = reject;
    const timer = setTimeout(
      () => end(new DeltaSubscribeError(`not subscribed within ${options.timeoutMs ?? 10_000} ms`)),
      options.timeoutMs ?? 10_000,
    );
    socket.onopen = () => socket.send(JSON.stringify({ type: 'connection_init' }));
    socket.onerror = (event) => {
      const message = (event as { message?: string } | undefined)?.message;
      clearTimeout(timer);
      end(new DeltaSubscribeError(`the connection failed${message ? `: ${message}` : ''}`));
    };
    socket.onclose = (event) => {
      clearTimeout(timer);
      end(
        new DeltaSubscribeError(
          `the connection closed (${event.code}${event.reason ? ` ${event.reason}` : ''})`,
        ),
      );
    };
    socket.onmessage = (event) => {
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(String(event.data)) as Record<string, unknown>;
      } catch {
        return;
      }
      switch (message.type) {
        case 'connection_ack':
          if (typeof message.connectionTimeoutMs === 'number') kaTimeoutMs = message.connectionTimeoutMs;
          armKeepAlive();
          socket.send(JSON.stringify({ type: 'subscribe', id, channel, authorization }));
          return;
        case 'ka':
          armKeepAlive();
          return;
        case 'subscribe_success':
          if (message.id !== id) return;
          clearTimeout(timer);
          subscribed = true;
          resolve({
            channel,
            done,
            close: () => {
              if (finished) return;
              finished = true;
              cleanup();
              resolveDone(undefined);
              socket.close(1000, 'closed by the client');
            },
          });
          return;
        case 'subscribe_error':
        case 'connection_error':
        case 'error': {
          const { text, types } = errorsOf(message);
          clearTimeout(timer);
          end(new DeltaSubscribeError(`${String(message.type)}: ${text || 'no detail'}`, types));
          return;
        }
        case 'data': {
          if (message.id !== id || typeof message.event !== 'string') return;
          const delta = parseDeltaEvent(message.event);
          if (delta === undefined) return;
          const waiting = order.push(delta);
          // The clock starts when a gap opens and is not restarted by later events: a lost event costs at most
          // gapTimeoutMs however fast the rest arrive.
          if (!waiting && gapTimer) {
            clearTimeout(gapTimer);
            gapTimer = undefined;
          } else if (waiting && !gapTimer) {
            const skip = () => {
              gapTimer = undefined;
              if (order.skipGap()) gapTimer = setTimeout(skip, options.gapTimeoutMs ?? 3000);
            };
            gapTimer = setTimeout(skip, options.gapTimeoutMs ?? 3000);
          }
          return;
        }
        default:
          return;
      }
    };
  });
}
