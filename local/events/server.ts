/**
 * The local twin of the AppSync Events API that carries delta channels (namespace `crumbs`) and change channels
 * (namespace `changes`), speaking its protocol so one client works
 * against both: `POST /event` publishes (SigV4-signed with the local stack's credentials, as only the executor's
 * IAM role may publish on AWS), and `GET /event/realtime` upgrades to a WebSocket (subprotocols
 * `aws-appsync-event-ws` and `header-<base64url {host, Authorization}>`) with `connection_init`/`connection_ack`,
 * `ka`, `subscribe`/`subscribe_success`/`subscribe_error`, `data`, `unsubscribe`/`unsubscribe_success`; `publish`
 * over the socket is refused (a token may not publish). A token is one of the local API's tokens, turned into
 * claims as the local API does; every subscribe runs the namespace's own onSubscribe handler. Bounded: connections
 * and subscriptions in all, per workspace and per token (so one workspace cannot take what another needs: a
 * connection counts for every workspace its token grants, a subscription for its channel's workspace and its
 * token), subscriptions per connection, message and body sizes, and idle connections are closed. Over a bound a
 * connection is refused with 429 and `Retry-After` at the upgrade, a subscription with `LimitExceededException`.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { callerFromClaims } from '#shared/core/api/http.ts';
import { CHANNEL_NAMESPACES } from '#shared/core/streaming/channel.ts';
import { loadOnSubscribe } from '#shared/core/streaming/on-subscribe.ts';
import { MAX_EVENTS_PER_PUBLISH } from '#shared/ports/delta-channel.ts';
import type { JwtAuthorizer } from '../jwt-authorizer.ts';
import { LOCAL_TOKEN_CLIENT, type LocalToken, workspacesClaimValue } from '../tokens.ts';
import { sigv4Problem } from './sigv4.ts';

export const EVENTS_SUBPROTOCOL = 'aws-appsync-event-ws';

export interface LocalEventsLimits {
  /** Open WebSocket connections at once, in all. */
  readonly maxConnections: number;
  /** Open connections of tokens granting a workspace (a `*` token counts for `*`). */
  readonly maxConnectionsPerWorkspace: number;
  /** Open connections made with one token. */
  readonly maxConnectionsPerToken: number;
  readonly maxSubscriptionsPerConnection: number;
  /** Subscriptions to one workspace's channels, over every connection. */
  readonly maxSubscriptionsPerWorkspace: number;
  /** Subscriptions made with one token, over every connection. */
  readonly maxSubscriptionsPerToken: number;
  /** What a refusal for a bound asks the client to wait (`Retry-After`, seconds). */
  readonly retryAfterSeconds: number;
  /** A WebSocket message from a client (AppSync: 240 KB per event). */
  readonly maxMessageBytes: number;
  /** A connection that has not sent `connection_init` by then, or has had no subscription that long, is closed. */
  readonly idleMs: number;
  /** How often `ka` is sent (AppSync: every minute); `connection_ack` says 5 minutes. */
  readonly keepAliveMs: number;
  /** The size of one event (AppSync: 240 KB). */
  readonly maxEventBytes: number;
}

export const DEFAULT_EVENTS_LIMITS: LocalEventsLimits = {
  maxConnections: 1000,
  maxConnectionsPerWorkspace: 100,
  maxConnectionsPerToken: 50,
  maxSubscriptionsPerConnection: 100,
  maxSubscriptionsPerWorkspace: 200,
  maxSubscriptionsPerToken: 100,
  retryAfterSeconds: 10,
  maxMessageBytes: 256 * 1024,
  idleMs: 5 * 60_000,
  keepAliveMs: 60_000,
  maxEventBytes: 240 * 1024,
};

const CONNECTION_TIMEOUT_MS = 300_000;

export interface LocalEventsServer {
  /** `http://127.0.0.1:<port>`: where publishes go (`ENV.eventsHttpUrl`). */
  readonly httpUrl: string;
  /** `ws://127.0.0.1:<port>/event/realtime` (`ENV.eventsRealtimeUrl`). */
  readonly realtimeUrl: string;
  readonly port: number;
  /** Events published so far (benchmarks and tests count them). */
  published(): number;
  stop(): Promise<void>;
}

interface Subscription {
  readonly id: string;
  readonly channel: string;
  readonly socket: WebSocket;
  /** What it is counted against: its channel's workspace and the token that made it. */
  readonly workspace: string;
  readonly token: string;
}

/** Counts per key (workspace, token), for the bounds. */
class Tally {
  private readonly counts = new Map<string, number>();
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  add(keys: readonly string[], n: 1 | -1): void {
    for (const key of keys) {
      const next = this.get(key) + n;
      if (next > 0) this.counts.set(key, next);
      else this.counts.delete(key);
    }
  }
}

type Json = Record<string, unknown>;

/** A caller of the events server: a local token or an issuer's JWT, with the claims the handler judges. */
interface Caller extends LocalToken {
  readonly claims: Record<string, unknown>;
}

function error(errorType: string, message: string): { errorType: string; message: string } {
  return { errorType, message };
}

export async function startLocalEventsServer(options: {
  port: number;
  host: string;
  tokens: readonly LocalToken[];
  /** JWTs of an OIDC issuer, besides the local tokens (`crumbs dev --oidc-issuer`). */
  jwt?: JwtAuthorizer;
  workspacesClaim: string;
  /** The only credentials whose signed publishes are taken (the local stack's). */
  credentials: { accessKeyId: string; secretAccessKey: string };
  limits?: Partial<LocalEventsLimits>;
  log?: (line: string) => void;
}): Promise<LocalEventsServer> {
  const limits = { ...DEFAULT_EVENTS_LIMITS, ...options.limits };
  const log = options.log ?? (() => undefined);
  // With an issuer, the handler checks the audience as on AWS; the local tokens name a client of their own.
  const handler = loadOnSubscribe(
    options.workspacesClaim,
    options.jwt ? [...options.jwt.audiences, LOCAL_TOKEN_CLIENT] : null,
  );
  const accepted = options.tokens.map((t) => ({ ...t, raw: Buffer.from(t.token) }));
  let publishedCount = 0;

  /**
   * Who the token given is: one of the local API's tokens (`tokens.ts`), compared in constant time with each, with
   * the claims the local API passes for it; else, with an issuer, the JWT with its own claims when it is one of that
   * issuer's (its shares counted under the JWT itself and the workspaces its claim grants).
   */
  const tokenOf = (authorization: unknown): Caller | undefined => {
    if (typeof authorization !== 'string') return undefined;
    const bearer = authorization.replace(/^Bearer\s+/i, '');
    const given = Buffer.from(bearer);
    let found: (LocalToken & { raw: Buffer }) | undefined;
    for (const t of accepted) {
      if (given.length === t.raw.length && timingSafeEqual(given, t.raw)) found ??= t;
    }
    if (found) {
      return {
        ...found,
        claims: {
          sub: found.sub,
          client_id: LOCAL_TOKEN_CLIENT,
          [options.workspacesClaim]: workspacesClaimValue(found.workspaces),
        },
      };
    }
    const claims = options.jwt?.payloadOfSync(bearer);
    if (claims === undefined) return undefined;
    // callerFromClaims reads `sub` and the workspaces claim only, each checked as unknown.
    const { workspaces } = callerFromClaims(
      claims as Parameters<typeof callerFromClaims>[0],
      options.workspacesClaim,
    );
    return { token: bearer, sub: String(claims.sub ?? ''), workspaces, claims };
  };
  /** The claims the onSubscribe handler judges. */
  const claimsOf = (caller: Caller): Record<string, unknown> => caller.claims;
  /** The workspaces a connection made with `token` counts for. */
  const grantOf = (token: LocalToken): readonly string[] =>
    token.workspaces === '*' ? ['*'] : token.workspaces;
  const connectionsBy = { workspace: new Tally(), token: new Tally() };
  const subscriptionsBy = { workspace: new Tally(), token: new Tally() };

  /** channel → its subscriptions. */
  const channels = new Map<string, Set<Subscription>>();

  const deliver = (channel: string, events: readonly string[]): void => {
    const subs = channels.get(channel);
    for (const event of events) {
      publishedCount += 1;
      for (const sub of subs ?? []) sub.socket.send(JSON.stringify({ type: 'data', id: sub.id, event }));
    }
  };

  const server: Server = createServer((req, res) => {
    servePublish(req, res).catch((e: unknown) => {
      log(`events: ${(e as Error).stack ?? String(e)}`);
      if (!res.headersSent) sendJson(res, 500, { errors: [error('InternalFailure', 'see the log')] });
    });
  });

  async function servePublish(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(`http://localhost${req.url ?? '/'}`).pathname;
    if (path !== '/event') {
      sendJson(res, 404, { errors: [error('NotFound', 'publish with POST /event')] });
      return;
    }
    if (req.method !== 'POST') {
      sendJson(res, 405, { errors: [error('MethodNotAllowed', 'publish with POST /event')] });
      return;
    }
    const maxBody = MAX_EVENTS_PER_PUBLISH * limits.maxEventBytes + 4096;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > maxBody) {
        sendJson(res, 413, {
          errors: [error('PayloadTooLarge', `the body is larger than ${maxBody} bytes`)],
        });
        req.destroy();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    const unsigned = await sigv4Problem({ method: 'POST', path, headers, body }, options.credentials);
    if (unsigned !== undefined) {
      // Publishing is IAM only: a bearer token (or anything else) is not a publisher.
      sendJson(res, 401, { errors: [error('UnauthorizedException', unsigned)] });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      sendJson(res, 400, { errors: [error('BadRequestException', 'the body is not JSON')] });
      return;
    }
    const { channel, events } = (parsed ?? {}) as { channel?: unknown; events?: unknown };
    const problem = publishProblem(channel, events, limits.maxEventBytes);
    if (problem !== undefined) {
      sendJson(res, 400, { errors: [error('BadRequestException', problem)] });
      return;
    }
    const list = events as string[];
    deliver(channel as string, list);
    sendJson(res, 200, {
      failed: [],
      successful: list.map((_, index) => ({ identifier: randomUUID(), index })),
    });
  }

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    handleProtocols: (protocols) => (protocols.has(EVENTS_SUBPROTOCOL) ? EVENTS_SUBPROTOCOL : false),
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    const path = new URL(`http://localhost${req.url ?? '/'}`).pathname;
    if (path !== '/event/realtime') return refuse(404, 'Not Found');
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim());
    if (!protocols.includes(EVENTS_SUBPROTOCOL)) return refuse(400, 'Bad Request');
    const header = protocols.find((p) => p.startsWith('header-'));
    let authorization: unknown;
    try {
      authorization = (JSON.parse(Buffer.from(header?.slice(7) ?? '', 'base64url').toString('utf8')) as Json)
        .Authorization;
    } catch {
      authorization = undefined;
    }
    const token = tokenOf(authorization);
    if (token === undefined) return refuse(401, 'Unauthorized');
    const over = connectionBound(token);
    if (over !== undefined) {
      log(`events: refused a connection: ${over}`);
      socket.end(
        `HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${limits.retryAfterSeconds}\r\nConnection: close\r\n` +
          `Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(over)}\r\n\r\n${over}`,
      );
      return;
    }
    // handleUpgrade answers and calls back at once: counted before the next upgrade is looked at.
    wss.handleUpgrade(req, socket, head, (ws) => connection(ws, token));
  });

  /** Which bound a new connection of `token` would pass, or undefined. */
  function connectionBound(token: Caller): string | undefined {
    if (wss.clients.size >= limits.maxConnections) return `${limits.maxConnections} connections in all`;
    if (connectionsBy.token.get(token.token) >= limits.maxConnectionsPerToken) {
      return `at most ${limits.maxConnectionsPerToken} connections per token`;
    }
    const full = grantOf(token).find(
      (w) => connectionsBy.workspace.get(w) >= limits.maxConnectionsPerWorkspace,
    );
    return full === undefined
      ? undefined
      : `at most ${limits.maxConnectionsPerWorkspace} connections per workspace (${full})`;
  }

  function connection(ws: WebSocket, token: Caller): void {
    connectionsBy.token.add([token.token], 1);
    connectionsBy.workspace.add(grantOf(token), 1);
    const own = new Map<string, Subscription>();
    let initialised = false;
    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      if (idle) clearTimeout(idle);
      idle = own.size === 0 ? setTimeout(() => ws.close(4000, 'idle'), limits.idleMs) : undefined;
    };
    armIdle();
    const keepAlive = setInterval(() => {
      if (initialised) ws.send(JSON.stringify({ type: 'ka' }));
    }, limits.keepAliveMs);
    const send = (message: Json) => ws.send(JSON.stringify(message));

    ws.on('close', () => {
      clearInterval(keepAlive);
      if (idle) clearTimeout(idle);
      connectionsBy.token.add([token.token], -1);
      connectionsBy.workspace.add(grantOf(token), -1);
      for (const sub of own.values()) drop(sub);
      own.clear();
    });
    const drop = (sub: Subscription) => {
      channels.get(sub.channel)?.delete(sub);
      if (channels.get(sub.channel)?.size === 0) channels.delete(sub.channel);
      subscriptionsBy.workspace.add([sub.workspace], -1);
      subscriptionsBy.token.add([sub.token], -1);
    };
    ws.on('message', (data, isBinary) => {
      let message: Json;
      try {
        if (isBinary) throw new Error('binary');
        const value: unknown = JSON.parse(String(data));
        if (value === null || typeof value !== 'object' || Array.isArray(value))
          throw new Error('not an object');
        message = value as Json;
      } catch {
        send({ type: 'error', errors: [error('BadRequestException', 'a message is a JSON object')] });
        return;
      }
      const id = typeof message.id === 'string' ? message.id : undefined;
      switch (message.type) {
        case 'connection_init':
          initialised = true;
          send({ type: 'connection_ack', connectionTimeoutMs: CONNECTION_TIMEOUT_MS });
          return;
        case 'subscribe': {
          const fail = (e: { errorType: string; message: string }) =>
            send({ type: 'subscribe_error', ...(id !== undefined ? { id } : {}), errors: [e] });
          if (id === undefined || id.length < 1 || id.length > 128)
            return fail(error('BadRequestException', 'id: expected 1-128 characters'));
          if (own.has(id)) return fail(error('BadRequestException', `a subscription with id ${id} exists`));
          if (own.size >= limits.maxSubscriptionsPerConnection) {
            return fail(
              error(
                'LimitExceededException',
                `at most ${limits.maxSubscriptionsPerConnection} subscriptions`,
              ),
            );
          }
          const channel = message.channel;
          if (typeof channel !== 'string' || channel.length > 512)
            return fail(error('BadRequestException', 'channel: expected a channel path'));
          const namespace = channel.replace(/^\//, '').split('/')[0] ?? '';
          if (!CHANNEL_NAMESPACES.includes(namespace))
            return fail(error('BadRequestException', `channel: no namespace ${JSON.stringify(namespace)}`));
          const subscriber = tokenOf((message.authorization as Json | undefined)?.Authorization);
          if (subscriber === undefined)
            return fail(error('UnauthorizedException', 'the authorization is not valid'));
          const claims = claimsOf(subscriber);
          try {
            handler.onSubscribe({
              identity: {
                sub: String(claims.sub),
                issuer: typeof claims.iss === 'string' ? claims.iss : 'crumbs-local',
                claims,
              },
              info: {
                channel: { path: channel, segments: channel.replace(/^\//, '').split('/') },
                channelNamespace: { name: namespace },
              },
            });
          } catch {
            return fail(error('UnauthorizedException', 'Unauthorized'));
          }
          const workspace = handler.workspaceOfChannel(channel) ?? '';
          const bound =
            subscriptionsBy.workspace.get(workspace) >= limits.maxSubscriptionsPerWorkspace
              ? `at most ${limits.maxSubscriptionsPerWorkspace} subscriptions per workspace`
              : subscriptionsBy.token.get(subscriber.token) >= limits.maxSubscriptionsPerToken
                ? `at most ${limits.maxSubscriptionsPerToken} subscriptions per token`
                : undefined;
          if (bound !== undefined) {
            return fail(
              error('LimitExceededException', `${bound}; try again in ${limits.retryAfterSeconds} s`),
            );
          }
          const sub: Subscription = { id, channel, socket: ws, workspace, token: subscriber.token };
          subscriptionsBy.workspace.add([workspace], 1);
          subscriptionsBy.token.add([subscriber.token], 1);
          own.set(id, sub);
          const set = channels.get(channel) ?? new Set<Subscription>();
          channels.set(channel, set);
          set.add(sub);
          armIdle();
          send({ type: 'subscribe_success', id });
          return;
        }
        case 'unsubscribe': {
          const sub = id === undefined ? undefined : own.get(id);
          if (!sub) {
            send({
              type: 'unsubscribe_error',
              ...(id !== undefined ? { id } : {}),
              errors: [error('BadRequestException', 'no such subscription')],
            });
            return;
          }
          own.delete(sub.id);
          drop(sub);
          armIdle();
          send({ type: 'unsubscribe_success', id: sub.id });
          return;
        }
        case 'publish':
          send({
            type: 'publish_error',
            ...(id !== undefined ? { id } : {}),
            errors: [
              error('UnauthorizedException', 'publishing on this namespace is for the stack itself (IAM)'),
            ],
          });
          return;
        default:
          send({
            type: 'error',
            ...(id !== undefined ? { id } : {}),
            errors: [error('UnsupportedOperation', `unknown message type ${JSON.stringify(message.type)}`)],
          });
      }
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const hostPart = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    httpUrl: `http://${hostPart}:${port}`,
    realtimeUrl: `ws://${hostPart}:${port}/event/realtime`,
    port,
    published: () => publishedCount,
    stop: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      // Publishers keep their connections alive between publishes: close those too, or the close waits them out.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function publishProblem(channel: unknown, events: unknown, maxEventBytes: number): string | undefined {
  const inNamespace = (c: string) => CHANNEL_NAMESPACES.some((ns) => c.startsWith(`/${ns}/`));
  if (typeof channel !== 'string' || !inNamespace(channel) || channel.includes('*')) {
    return `channel: expected a channel path in namespace ${CHANNEL_NAMESPACES.join(' or ')}, without wildcards`;
  }
  const segments = channel.slice(1).split('/');
  if (segments.length > 5 || !segments.every((s) => /^[A-Za-z0-9-]{1,50}$/.test(s))) {
    return 'channel: at most 5 segments of 1-50 letters, digits or "-"';
  }
  if (!Array.isArray(events) || events.length < 1 || events.length > MAX_EVENTS_PER_PUBLISH) {
    return `events: expected 1-${MAX_EVENTS_PER_PUBLISH} events`;
  }
  for (const [i, event] of events.entries()) {
    if (typeof event !== 'string') return `events[${i}]: expected a JSON text`;
    if (Buffer.byteLength(event) > maxEventBytes) return `events[${i}]: larger than ${maxEventBytes} bytes`;
    try {
      JSON.parse(event);
    } catch {
      return `events[${i}]: not valid JSON`;
    }
  }
  return undefined;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
