/**
 * Serves the HTTP functions on a local port, playing the front door's part (API Gateway REST API,
 * `infra/constructs/front-door.ts`) from the same topology declarations:
 *
 * - routing: each function's `routes` (behind the token check) and `publicRoutes` (without it), in API Gateway's
 *   route syntax, and every other path to the function with `defaultRoute`, behind the token check;
 * - the TOKEN authorizer: a bearer token is one of the local tokens (`tokens.ts`), or — where the stack has an
 *   issuer — a JWT the front door's own token check accepts (`authorize`, kept per token for the authorizer's TTL
 *   as API Gateway keeps it); the caller reaches the handler as the authorizer's context in
 *   `requestContext.authorizer`, exactly the keys and forms the authorizer sends, so workspace scoping runs in the
 *   handler as on AWS;
 * - the integrations: a REST API proxy event (payload format 1.0) in; a response-streaming handler is invoked with
 *   an emulated response stream (`lambda-runtime.ts`) and its bytes read as API Gateway reads a STREAM
 *   integration's (metadata, delimiter, then the body sent on as it comes); a plain handler's result is sent whole.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { HttpEvent } from '#shared/core/api/http.ts';
import {
  AUTHORIZER,
  AUTHORIZER_SUB_KEY,
  AUTHORIZER_WORKSPACES_KEY,
} from '#shared/core/front-door/authorizer.ts';
import * as z from '#shared/domain/zod.ts';
import type { FunctionDeclaration, HttpTrigger } from '#shared/topology.ts';
import { invoke, type LambdaHandler } from './event-sources/lambda-context.ts';
import {
  IntegrationResponseError,
  invokeStreaming,
  isStreamingHandler,
  readIntegrationResponse,
} from './lambda-runtime.ts';
import type { LocalToken } from './tokens.ts';

/** API Gateway's own payload limit; the handler enforces crumbs' smaller limit with a 413 of its own. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
/** The stage name the local events carry (the front door's stage is the crumbs stage). */
const LOCAL_STAGE = 'local';

/** One HTTP function: its declaration (routes, timeout) and its Lambda handler (streaming or not). */
export interface LocalHttpFunction {
  readonly declaration: Pick<FunctionDeclaration, 'name' | 'timeoutSeconds' | 'memoryMb'> & {
    readonly trigger: HttpTrigger;
  };
  readonly handler: unknown;
}

/**
 * The front door's authorizer as the local server calls it: the authorizer context of an Authorization header it
 * allows, undefined for one it refuses (API Gateway's 401); throws when the authorizer fails (API Gateway's 500).
 */
export type LocalAuthorizer = (authorization: string) => Promise<Record<string, string> | undefined>;

export interface LocalApiServer {
  readonly endpoint: string;
  readonly port: number;
  /**
   * Serves these functions from now on (requests before this are answered 503), with the authorizer for bearer
   * tokens that are not local tokens (none: those are refused).
   */
  attach(functions: readonly LocalHttpFunction[], authorize?: LocalAuthorizer): void;
  stop(): Promise<void>;
}

interface Route {
  method: string;
  pattern: RegExp;
  template: string;
  public: boolean;
  fn: LocalHttpFunction;
}

export async function startLocalApiServer(options: {
  port: number;
  host: string;
  /** Every accepted token with the workspaces it may use (`localTokens` in tokens.ts). */
  tokens: readonly LocalToken[];
  log?: (line: string) => void;
}): Promise<LocalApiServer> {
  let routes: Route[] | undefined;
  let fallback: LocalHttpFunction | undefined;
  let authorize: LocalAuthorizer | undefined;
  const accepted = options.tokens.map((t) => ({ ...t, header: Buffer.from(`Bearer ${t.token}`) }));
  /** Compares against every token in constant time per token, so timing says nothing about which is close. */
  const localTokenFor = (authorization: string | undefined): LocalToken | undefined => {
    const given = Buffer.from(authorization ?? '');
    let found: LocalToken | undefined;
    for (const t of accepted) {
      if (given.length === t.header.length && timingSafeEqual(given, t.header)) found ??= t;
    }
    return found;
  };
  /**
   * The authorizer's answers per Authorization header — an Allow's context, or undefined for a Deny — kept for its
   * TTL as API Gateway keeps them. An authorizer that fails is asked again next time (API Gateway caches no error).
   */
  const answers = new Map<string, { context: Record<string, string> | undefined; until: number }>();
  const authorizerContext = async (
    authorization: string | undefined,
  ): Promise<Record<string, string> | undefined> => {
    const local = localTokenFor(authorization);
    if (local) {
      return {
        principalId: local.sub,
        [AUTHORIZER_SUB_KEY]: local.sub,
        [AUTHORIZER_WORKSPACES_KEY]: local.workspaces === '*' ? '*' : JSON.stringify(local.workspaces),
      };
    }
    if (authorize === undefined || authorization === undefined) return undefined;
    // API Gateway refuses a header that does not match the validation expression without calling the authorizer.
    if (!new RegExp(AUTHORIZER.validationRegex).test(authorization)) return undefined;
    const now = Date.now();
    const kept = answers.get(authorization);
    if (kept !== undefined && kept.until > now) return kept.context;
    const context = await authorize(authorization);
    // Oldest first (every answer is kept for the same TTL): drop the expired ones from the front.
    for (const [header, answer] of answers) {
      if (answer.until > now) break;
      answers.delete(header);
    }
    answers.delete(authorization);
    answers.set(authorization, { context, until: now + AUTHORIZER.ttlSeconds * 1000 });
    return context;
  };

  const server: Server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      options.log?.(`api: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) sendGatewayError(res, 500, 'Internal server error');
      else res.destroy();
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
        sendProblem(res, 413, 'Payload too large', 'the request body is larger than 10 MB');
        req.destroy();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    if (routes === undefined) {
      sendProblem(res, 503, 'Service unavailable', 'the local stack is still starting');
      return;
    }
    const method = req.method ?? 'GET';
    const route = routes.find((r) => r.method === method && r.pattern.test(resourcePath(url.pathname)));
    const fn = route?.fn ?? fallback;
    if (fn === undefined) {
      sendGatewayError(res, 403, 'Missing Authentication Token');
      return;
    }
    let authorizer: Record<string, string> | undefined;
    if (route?.public !== true) {
      authorizer = await authorizerContext(req.headers.authorization);
      if (authorizer === undefined) {
        sendProblem(
          res,
          401,
          'Unauthorized',
          'missing or invalid bearer token (Authorization: Bearer <token>)',
          {
            'www-authenticate': 'Bearer',
          },
        );
        return;
      }
    }
    const event = proxyEvent(req, url, route, chunks, authorizer);
    if (isStreamingHandler(fn.handler)) await sendStreamed(res, fn, event);
    else await sendBuffered(res, fn, event);
  }

  async function sendStreamed(res: ServerResponse, fn: LocalHttpFunction, event: HttpEvent): Promise<void> {
    const invocation = invokeStreaming(fn.handler, event, fn.declaration);
    let closed = false;
    // A client that leaves ends its invocation (the handler's stream breaks): that is no failure to report.
    invocation.done.catch((error: unknown) => {
      if (!closed) options.log?.(`${fn.declaration.name}: ${String(error)}`);
    });
    let response: Awaited<ReturnType<typeof readIntegrationResponse>>;
    try {
      response = await readIntegrationResponse(invocation.output);
    } catch (error) {
      // API Gateway answers an integration that does not speak the streaming format with a 502.
      options.log?.(`${fn.declaration.name}: ${(error as Error).message}`);
      if (!(error instanceof IntegrationResponseError)) options.log?.(String(error));
      sendGatewayError(res, 502, 'Internal server error');
      invocation.abort();
      return;
    }
    const { metadata, body } = response;
    const headers: Record<string, string | string[]> = { ...metadata.headers };
    for (const [k, v] of Object.entries(metadata.multiValueHeaders ?? {})) headers[k.toLowerCase()] = v;
    if (metadata.cookies?.length) headers['set-cookie'] = metadata.cookies;
    res.writeHead(metadata.statusCode, headers);
    res.flushHeaders();
    res.once('close', () => {
      closed = true;
      invocation.abort();
    });
    try {
      for await (const chunk of body) {
        if (closed) break;
        res.write(chunk);
      }
    } catch {
      // The function ended the stream with an error or timed out: the client gets what was sent (as on AWS).
    } finally {
      if (!closed) res.end();
    }
  }

  async function sendBuffered(res: ServerResponse, fn: LocalHttpFunction, event: HttpEvent): Promise<void> {
    let result: APIGatewayProxyResult;
    try {
      result = await invoke(
        fn.handler as LambdaHandler<HttpEvent, APIGatewayProxyResult>,
        event,
        fn.declaration,
      );
    } catch (error) {
      options.log?.(`${fn.declaration.name}: ${String(error)}`);
      sendGatewayError(res, 502, 'Internal server error');
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(result.headers ?? {})) headers[k.toLowerCase()] = String(v);
    for (const [k, v] of Object.entries(result.multiValueHeaders ?? {}))
      headers[k.toLowerCase()] = v.map(String);
    res.writeHead(result.statusCode, headers);
    res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
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
    attach(functions, authorizer) {
      authorize = authorizer;
      routes = functions.flatMap((fn) => [
        ...(fn.declaration.trigger.routes ?? []).map((r) => ({ ...compileRoute(r), public: false, fn })),
        ...(fn.declaration.trigger.publicRoutes ?? []).map((r) => ({ ...compileRoute(r), public: true, fn })),
      ]);
      fallback = functions.find((fn) => fn.declaration.trigger.defaultRoute === true);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const AuthorizerAnswerSchema = z.object({
  principalId: z.string(),
  policyDocument: z.object({
    Statement: z.array(z.object({ Effect: z.string(), Action: z.string(), Resource: z.string() })),
  }),
  context: z.optional(z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))),
});

/**
 * A TOKEN authorizer handler as API Gateway calls it: an `Allow` of `execute-api:Invoke` gives its context (every
 * value a string, as the integration receives it); a `Deny` (or `Unauthorized` thrown) is a refusal; anything else
 * is an error.
 */
export function authorizerOf(
  handler: unknown,
  fn: Pick<FunctionDeclaration, 'name' | 'timeoutSeconds' | 'memoryMb'>,
): LocalAuthorizer {
  return async (authorization) => {
    let answer: unknown;
    try {
      answer = await invoke(
        handler as LambdaHandler<unknown, unknown>,
        { type: 'TOKEN', authorizationToken: authorization, methodArn: LOCAL_METHOD_ARN },
        fn,
      );
    } catch (error) {
      if ((error as Error).message === 'Unauthorized') return undefined;
      throw error;
    }
    const parsed = AuthorizerAnswerSchema.parse(answer);
    const statements = parsed.policyDocument.Statement.filter((s) => s.Action === 'execute-api:Invoke');
    const allows =
      statements.some((s) => s.Effect === 'Allow') && !statements.some((s) => s.Effect === 'Deny');
    if (!allows) return undefined;
    const context: Record<string, string> = { principalId: parsed.principalId };
    for (const [k, v] of Object.entries(parsed.context ?? {})) context[k] = String(v);
    return context;
  };
}

const LOCAL_METHOD_ARN = `arn:aws:execute-api:us-east-1:000000000000:local/${LOCAL_STAGE}/GET/`;

/** The REST API proxy event API Gateway would send for this request. */
function proxyEvent(
  req: IncomingMessage,
  url: URL,
  route: Route | undefined,
  body: Buffer[],
  authorizer: Record<string, string> | undefined,
): HttpEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(req.headersDistinct)) {
    if (v === undefined || v.length === 0) continue;
    headers[k] = v[v.length - 1] as string;
    multiValueHeaders[k] = v;
  }
  const query: Record<string, string> = {};
  const multiValueQuery: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) {
    query[k] = v;
    // Own keys only: a parameter may be called `valueOf` or `constructor`.
    multiValueQuery[k] = Object.hasOwn(multiValueQuery, k) ? [...(multiValueQuery[k] as string[]), v] : [v];
  }
  const hasQuery = Object.keys(query).length > 0;
  const resource = route?.template ?? '/{proxy+}';
  const now = new Date();
  return {
    resource,
    path: url.pathname,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiValueQuery : null,
    pathParameters: route
      ? pathParameters(route, resourcePath(url.pathname))
      : { proxy: url.pathname.slice(1) },
    stageVariables: null,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: authorizer ? { ...authorizer, integrationLatency: 0 } : undefined,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        user: null,
        userAgent: headers['user-agent'] ?? null,
        userArn: null,
      },
      path: `/${LOCAL_STAGE}${url.pathname}`,
      stage: LOCAL_STAGE,
      requestId: randomUUID(),
      requestTimeEpoch: now.getTime(),
      resourceId: 'local',
      resourcePath: resource,
    },
    body: body.length > 0 ? Buffer.concat(body).toString('utf8') : null,
    isBase64Encoded: false,
  };
}

function pathParameters(route: Route, path: string): Record<string, string> | null {
  const match = route.pattern.exec(path);
  const groups = match?.groups;
  if (!groups || Object.keys(groups).length === 0) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(groups)) if (v !== undefined) out[k.replace(/_greedy$/, '')] = v;
  return out;
}

function sendProblem(
  res: ServerResponse,
  status: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): void {
  const type =
    status === 401
      ? 'unauthorized'
      : status === 413
        ? 'payload-too-large'
        : status === 503
          ? 'service-unavailable'
          : 'internal-error';
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
  res.end(JSON.stringify({ type: `https://crumbs.dev/problems/${type}`, title, status, detail }));
}

/** An answer API Gateway itself gives (not the function's): `{"message": ...}`. */
function sendGatewayError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ message }));
}

/** An API Gateway route (`GET /a/{id}/b`, `ANY /ui/{proxy+}`) as a method and a path pattern. */
/**
 * The path a REST API matches against its resources: a trailing slash is ignored (`GET /ui/` is the `/ui` resource,
 * the dashboard's page), while the event's `path` keeps it as sent.
 */
function resourcePath(pathname: string): string {
  return pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
}

function compileRoute(route: string): { method: string; pattern: RegExp; template: string } {
  const [method, path] = route.split(' ') as [string, string];
  const body = path
    .split('/')
    .map((segment) => {
      const greedy = /^\{([^}]+)\+\}$/.exec(segment);
      if (greedy) return `(?<${safeName(greedy[1] as string)}_greedy>.+)`;
      const param = /^\{([^}]+)\}$/.exec(segment);
      if (param) return `(?<${safeName(param[1] as string)}>[^/]+)`;
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { method, pattern: new RegExp(`^${body}$`), template: path };
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, '_');
}
