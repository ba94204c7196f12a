/**
 * One subscription to one channel over AppSync Events' WebSocket protocol (AWS, and the local events server):
 * connect with subprotocols `aws-appsync-event-ws` and `header-<base64url {host, Authorization}>`,
 * `connection_init` → `connection_ack`, `subscribe` → `subscribe_success`, then each `data` message's event text
 * to `onData`, `ka` keeping it alive. Resolves once the subscription is in place; rejects with a
 * `ChannelSubscribeError` saying why not — `limited` when the service refused for capacity (an HTTP 429 at the
 * upgrade, or a `LimitExceededException`/throttling error type), so a caller can answer 429 rather than fail. What
 * a channel carries is the caller's: deltas (`subscriber.ts`), changes (`shared/client/change-feed.ts`). The socket
 * class is given (`ws` in Node, the browser's own `WebSocket`), so the dashboard runs this same code.
 */

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

/** Error types AppSync (and the local server) give a refusal for capacity: worth another try later. */
const LIMIT_ERROR_TYPES = new Set([
  'LimitExceededException',
  'ThrottlingException',
  'TooManyRequestsException',
  'RateLimitExceeded',
]);

/** Why a subscription could not be made or ended early (AppSync's error types where it sent some). */
export class ChannelSubscribeError extends Error {
  constructor(
    message: string,
    readonly errorTypes: readonly string[] = [],
    /** The HTTP status that refused the WebSocket upgrade, where the socket class says it (`ws` does). */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ChannelSubscribeError';
  }

  /** Refused for capacity (too many connections or subscriptions): another try later may pass. */
  get limited(): boolean {
    return this.status === 429 || this.errorTypes.some((t) => LIMIT_ERROR_TYPES.has(t));
  }

  /** Refused the token or the channel. */
  get unauthorized(): boolean {
    return (
      this.status === 401 ||
      this.status === 403 ||
      this.errorTypes.some((t) => t === 'UnauthorizedException' || t === 'ForbiddenException')
    );
  }
}

export interface ChannelSocketOptions {
  /** `wss://<realtime domain>/event/realtime` (`ws://127.0.0.1:<port>/event/realtime` locally). */
  readonly realtimeUrl: string;
  /** The `host` a connection's and a subscription's authorization names: the HTTP endpoint's host. */
  readonly httpHost: string;
  /** The caller's token (the JWT the API takes; locally a local token). */
  readonly token: string;
  /** The channel path, e.g. `/changes/wteam-da`. */
  readonly channel: string;
  /** Each event text the channel delivers. */
  readonly onData: (event: string) => void;
  /** Told once when the connection ends after it subscribed, unless `close()` ended it. */
  readonly onClose?: (error: ChannelSubscribeError) => void;
  /** Default `globalThis.WebSocket` (browsers); Node 20 passes `WebSocket` of the `ws` package. */
  readonly webSocket?: WebSocketConstructor;
  /** How long connecting and subscribing may take. Default 10 s. */
  readonly timeoutMs?: number;
}

export interface ChannelSocket {
  readonly channel: string;
  /** Ends the subscription and the connection (no `onClose`). */
  close(reason?: string): void;
}

export function base64url(text: string): string {
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

/** `ws` reports a refused upgrade as "Unexpected server response: 429"; a browser says nothing about it. */
function upgradeStatus(message: string | undefined): number | undefined {
  const match = /Unexpected server response: (\d{3})/.exec(message ?? '');
  return match ? Number(match[1]) : undefined;
}

export function openChannelSocket(options: ChannelSocketOptions): Promise<ChannelSocket> {
  const Socket = options.webSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (Socket === undefined) {
    return Promise.reject(new ChannelSubscribeError('no WebSocket class: pass webSocket (the ws package)'));
  }
  const authorization = { host: options.httpHost, Authorization: options.token };
  const id = globalThis.crypto.randomUUID();
  const socket = new Socket(options.realtimeUrl, [
    'aws-appsync-event-ws',
    `header-${base64url(JSON.stringify(authorization))}`,
  ]);

  let subscribed = false;
  let finished = false;
  let kaTimer: ReturnType<typeof setTimeout> | undefined;
  let kaTimeoutMs = 300_000;
  const armKeepAlive = () => {
    if (kaTimer) clearTimeout(kaTimer);
    kaTimer = setTimeout(() => end(new ChannelSubscribeError('no keep-alive from the server')), kaTimeoutMs);
  };
  let fail: (error: ChannelSubscribeError) => void = () => undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cleanup = () => {
    if (kaTimer) clearTimeout(kaTimer);
    if (timer) clearTimeout(timer);
    kaTimer = undefined;
    timer = undefined;
  };
  const end = (error: ChannelSubscribeError) => {
    if (finished) return;
    finished = true;
    cleanup();
    socket.close();
    if (subscribed) options.onClose?.(error);
    else fail(error);
  };
  const handle: ChannelSocket = {
    channel: options.channel,
    close: (reason = 'closed by the client') => {
      if (finished) return;
      finished = true;
      cleanup();
      socket.close(1000, reason);
    },
  };

  return new Promise<ChannelSocket>((resolve, reject) => {
    fail = reject;
    const timeoutMs = options.timeoutMs ?? 10_000;
    timer = setTimeout(
      () => end(new ChannelSubscribeError(`not subscribed within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.onopen = () => socket.send(JSON.stringify({ type: 'connection_init' }));
    socket.onerror = (event) => {
      const message = (event as { message?: string } | undefined)?.message;
      end(
        new ChannelSubscribeError(
          `the connection failed${message ? `: ${message}` : ''}`,
          [],
          upgradeStatus(message),
        ),
      );
    };
    socket.onclose = (event) =>
      end(
        new ChannelSubscribeError(
          `the connection closed (${event.code}${event.reason ? ` ${event.reason}` : ''})`,
        ),
      );
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
          socket.send(JSON.stringify({ type: 'subscribe', id, channel: options.channel, authorization }));
          return;
        case 'ka':
          armKeepAlive();
          return;
        case 'subscribe_success':
          if (message.id !== id) return;
          if (timer) clearTimeout(timer);
          timer = undefined;
          subscribed = true;
          resolve(handle);
          return;
        case 'subscribe_error':
        case 'connection_error':
        case 'error': {
          const { text, types } = errorsOf(message);
          end(new ChannelSubscribeError(`${String(message.type)}: ${text || 'no detail'}`, types));
          return;
        }
        case 'data':
          if (message.id !== id || typeof message.event !== 'string' || finished) return;
          options.onData(message.event);
          return;
        default:
          return;
      }
    };
  });
}
