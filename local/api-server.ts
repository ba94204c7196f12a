/**
 * Serves the API Lambda handler on a local port, playing API Gateway HTTP API's part: it turns requests into
 * payload-2.0 events, checks the bearer token as the JWT authorizer would (every route but /health), and passes the
 * caller's claims in `requestContext.authorizer.jwt.claims` — `sub` and the workspaces claim rendered as API
 * Gateway renders a JWT list claim (`tokens.ts`), so workspace scoping runs in the handler exactly as on AWS. With
 * `crumbs dev --oidc-issuer`, a token that is none of the local ones is checked as a JWT of that issuer
 * (`jwt-authorizer.ts`) and its own claims are passed on.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { HttpEvent, HttpResult } from '#shared/core/api/http.ts';
import type { JwtAuthorizer } from './jwt-authorizer.ts';
import { type LocalToken, workspacesClaimValue } from './tokens.ts';

/** API Gateway's own payload limit; the handler enforces crumbs' smaller limit with a 413 of its own. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

export interface LocalApiServer {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export async function startLocalApiServer(options: {
  port: number;
  host: string;
  /** Every accepted token with the workspaces it may use (`localTokens` in tokens.ts). */
  tokens: readonly LocalToken[];
  /** JWTs of an OIDC issuer, besides the local tokens (`crumbs dev --oidc-issuer`). */
  jwt?: JwtAuthorizer;
  workspacesClaim: string;
  handler: (event: HttpEvent) => Promise<HttpResult>;
  /**
   * Handlers of public routes by path prefix (the dashboard's `/ui`), as API Gateway routes them to their own
   * function without the authorizer.
   */
  publicHandlers?: readonly { prefix: string; handler: (event: HttpEvent) => Promise<HttpResult> }[];
  /**
   * Functions serving routes of their own (`HttpTrigger.routes`, behind the token check, and `publicRoutes`,
   * without), in API Gateway's route syntax (`POST /v1/workspaces/{ws}/mcp`), as API Gateway routes them.
   */
  routedHandlers?: readonly {
    routes: readonly string[];
    publicRoutes?: readonly string[];
    handler: (event: HttpEvent) => Promise<HttpResult>;
  }[];
  log?: (line: string) => void;
}): Promise<LocalApiServer> {
  const routed = (options.routedHandlers ?? []).flatMap((r) => [
    ...r.routes.map((route) => ({ ...compileRoute(route), public: false, handler: r.handler })),
    ...(r.publicRoutes ?? []).map((route) => ({ ...compileRoute(route), public: true, handler: r.handler })),
  ]);
  const accepted = options.tokens.map((t) => ({ ...t, header: Buffer.from(`Bearer ${t.token}`) }));
  /** Compares against every token in constant time per token, so timing says nothing about which is close. */
  const tokenFor = (authorization: string | undefined): LocalToken | undefined => {
    const given = Buffer.from(authorization ?? '');
    let found: LocalToken | undefined;
    for (const t of accepted) {
      if (given.length === t.header.length && timingSafeEqual(given, t.header)) found ??= t;
    }
    return found;
  };
  const server: Server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      options.log?.(`api: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent)
        send(res, problem(500, 'Internal error', 'the local API server failed; see its log'));
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Concatenated, not resolved against a base: a path starting with `//` is a path (as API Gateway reads it), not
    // a protocol-relative URL naming another host.
    const url = new URL(`http://localhost${req.url ?? '/'}`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_REQUEST_BYTES) {
        send(res, problem(413, 'Payload too large', 'the request body is larger than 10 MB'));
        req.destroy();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;

    const ownRoute = routed.find((r) => r.method === req.method && r.pattern.test(url.pathname));
    const publicRoute =
      ownRoute?.public === true
        ? ownRoute
        : options.publicHandlers?.find(
            (p) => url.pathname === p.prefix || url.pathname.startsWith(`${p.prefix}/`),
          );
    let claims: Record<string, string> | undefined;
    if (url.pathname !== '/health' && !publicRoute) {
      const caller = tokenFor(headers.authorization);
      if (caller) {
        claims = { sub: caller.sub, [options.workspacesClaim]: workspacesClaimValue(caller.workspaces) };
      } else if (options.jwt && headers.authorization) {
        claims = await options.jwt.claimsOf(headers.authorization.replace(/^Bearer\s+/i, ''));
      }
      if (!claims) {
        send(
          res,
          problem(401, 'Unauthorized', 'missing or invalid bearer token (Authorization: Bearer <token>)'),
        );
        return;
      }
    }

    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
    const now = new Date();
    const event: HttpEvent = {
      version: '2.0',
      routeKey: '$default',
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers,
      queryStringParameters: Object.keys(query).length > 0 ? query : undefined,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        domainName: headers.host ?? 'localhost',
        domainPrefix: 'local',
        http: {
          method: req.method ?? 'GET',
          path: url.pathname,
          protocol: `HTTP/${req.httpVersion}`,
          sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
          userAgent: headers['user-agent'] ?? '',
        },
        requestId: randomUUID(),
        routeKey: '$default',
        stage: '$default',
        time: now.toUTCString(),
        timeEpoch: now.getTime(),
        ...(claims
          ? { authorizer: { principalId: 'local', integrationLatency: 0, jwt: { claims, scopes: [] } } }
          : {}),
      },
      body: chunks.length > 0 ? Buffer.concat(chunks).toString('utf8') : undefined,
      isBase64Encoded: false,
    };
    const result = await (publicRoute ?? ownRoute ?? options).handler(event);
    if (result.bodyStream !== undefined) await sendStream(res, result, result.bodyStream);
    else send(res, result);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    endpoint: `http://${options.host}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, result: HttpResult): void {
  res.writeHead(result.statusCode, result.headers);
  res.end(typeof result.body === 'string' ? result.body : '');
}

/**
 * A streamed body (server-sent events) written chunk by chunk as it is produced; a client that goes away ends the
 * producer (`return()` on its iterator), so nothing keeps reading the table for nobody.
 */
async function sendStream(
  res: ServerResponse,
  result: HttpResult,
  body: AsyncIterable<string>,
): Promise<void> {
  res.writeHead(result.statusCode, result.headers);
  res.flushHeaders();
  const iterator = body[Symbol.asyncIterator]();
  let closed = false;
  res.once('close', () => {
    closed = true;
    void iterator.return?.();
  });
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || closed) break;
      res.write(next.value);
    }
  } finally {
    if (!closed) res.end();
  }
}

function problem(status: number, title: string, detail: string): HttpResult {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/problem+json' },
    body: JSON.stringify({
      type: `https://crumbs.dev/problems/${status === 401 ? 'unauthorized' : status === 413 ? 'payload-too-large' : 'internal-error'}`,
      title,
      status,
      detail,
    }),
  };
}

/** An API Gateway route (`GET /a/{id}/b`, `ANY /ui/{proxy+}`) as a method and a path pattern. */
function compileRoute(route: string): { method: string; pattern: RegExp } {
  const [method, path] = route.split(' ') as [string, string];
  const body = path
    .split('/')
    .map((segment) =>
      /^\{[^}]+\+\}$/.test(segment)
        ? '.+'
        : /^\{[^}]+\}$/.test(segment)
          ? '[^/]+'
          : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return { method, pattern: new RegExp(`^${body}$`) };
}
