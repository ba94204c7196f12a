/**
 * The MCP endpoint over HTTP: `POST /v1/workspaces/{ws}/mcp`, Streamable HTTP in the SDK's stateless mode with JSON
 * responses — a fresh transport and server per request, nothing held in the process, so it runs in a Lambda. An
 * agent's call with a progress token is answered with server-sent events (`asksForProgress`): the progress
 * notifications go out as the answer is written (the front door streams them, `functions/wiring/http-handler.ts`),
 * then the result, for up to `FRONT_DOOR.streamCapSeconds`. `GET` (a standalone event stream) and `DELETE` (a
 * session's end) are 405: a stateless server has neither.
 *
 * Authorization is the API's: the same bearer token / JWT (the authorizer in front on AWS, the local server's check
 * locally) and the same workspace check, 401 / 403 otherwise. A 401 names the protected resource metadata (RFC 9728)
 * in `WWW-Authenticate`, served per endpoint path at `/.well-known/oauth-protected-resource/v1/workspaces/{ws}/mcp`
 * with the issuer the operator configured: MCP clients compare its `resource` with the URL they called. Every URL the
 * endpoint publishes is built from the API's configured base URL (`baseUrl`), never from a request's `Host` or
 * `X-Forwarded-Proto`, which a client chooses.
 *
 * DNS rebinding: a request whose `Origin` is neither this endpoint's own origin nor, when it came over loopback
 * (`crumbs dev`), a loopback origin is refused with a 403, and a request over loopback must name a loopback Host
 * (`originRefusal`, the A2A endpoint's rule too). Clients that are not browsers send no Origin and pass.
 *
 * Nothing a client sends makes a 5xx: a message nested deeper than `MAX_MESSAGE_DEPTH` is a 400 with a JSON-RPC
 * Invalid Request naming the limit before anything walks it, the transport answers malformed JSON-RPC with JSON-RPC
 * errors, and an unexpected failure inside a handler becomes a JSON-RPC internal error (logged).
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { type Caller, type HttpRequest, type HttpResult, json, problem } from '#shared/core/api/http.ts';
import { depthProblem } from '#shared/core/api/json-depth.ts';
import { originRefusal } from '#shared/core/api/origin.ts';
import { jsonRpcCost, type RequestRate } from '#shared/core/api/request-rate.ts';
import type { ChannelSubscribe } from '#shared/core/api/streaming-deps.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import {
  ForbiddenError,
  isCrumbsError,
  MethodNotAllowedError,
  NotFoundError,
  UnauthorizedError,
} from '#shared/domain/errors.ts';
import { type McpDeps, mcpServer, settled } from './server.ts';

export { originRefusal };

export const MCP_PATH = /^\/v1\/workspaces\/(?<ws>[^/]+)\/mcp$/;
const METADATA_PREFIX = '/.well-known/oauth-protected-resource';
const METADATA_PATH = /^\/\.well-known\/oauth-protected-resource\/v1\/workspaces\/(?<ws>[^/]+)\/mcp$/;
/** A JSON-RPC request (a batch included) larger than this is refused with a 413 before it is parsed. */
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

export interface McpHttpDeps extends McpDeps {
  /** The API's public base URL (`ENV.apiUrl`, no trailing slash): what the endpoint's URLs are built from. */
  readonly baseUrl: string;
  /** The issuer of the tokens the endpoint accepts (the JWT authorizer's), for the resource metadata. */
  readonly issuer?: string;
  /**
   * Whether the request reached the server over loopback (its peer address is a loopback one: the local stack).
   * Absent, no request did (AWS, behind API Gateway).
   */
  readonly viaLoopback?: (request: HttpRequest) => boolean;
  /** The stack's delta channel, subscribed as the caller: an agent's answer then streams as MCP progress. */
  readonly subscribe?: ChannelSubscribe;
  /** Called with unexpected errors before they are answered as a JSON-RPC internal error. */
  readonly onUnexpectedError?: (error: unknown, request: HttpRequest) => void;
  /** The workspace's request rate, the API's: each JSON-RPC message of a request takes one (a batch, as many). */
  readonly requestRate?: RequestRate;
}

export function createMcpHttp(deps: McpHttpDeps): (request: HttpRequest) => Promise<HttpResult> {
  return async (request) => {
    try {
      const metadata = METADATA_PATH.exec(request.path);
      if (metadata) return resourceMetadata(deps, request, workspaceOf(metadata.groups?.ws));
      const m = MCP_PATH.exec(request.path);
      if (!m) throw new NotFoundError(`no route for ${request.path}`);
      const ws = workspaceOf(m.groups?.ws);
      const refusal = originRefusal(request, deps.viaLoopback?.(request) === true, deps.baseUrl);
      if (refusal !== undefined) {
        return json(403, {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32000, message: `Forbidden: ${refusal}` },
        });
      }
      const caller = request.caller;
      if (!caller) {
        const result = problem(new UnauthorizedError('missing or invalid bearer token'));
        result.headers['www-authenticate'] =
          `Bearer resource_metadata="${deps.baseUrl}${METADATA_PREFIX}/v1/workspaces/${ws}/mcp"`;
        return result;
      }
      if (caller.workspaces !== '*' && !caller.workspaces.includes(ws)) {
        throw new ForbiddenError(
          `you may not use workspace ${ws}${caller.claimProblem ? `: ${caller.claimProblem}` : ''}`,
        );
      }
      if (request.method !== 'POST') {
        throw new MethodNotAllowedError(
          `${request.method} is not supported on ${request.path}: this MCP server is stateless (POST only)`,
          ['POST'],
        );
      }
      await deps.requestRate?.admit(ws, jsonRpcCost(request.body));
      const tooDeep = depthProblem(request.body);
      // 422, as the API answers a body past its depth, with the JSON-RPC Invalid Request naming the limit.
      if (tooDeep !== undefined) return invalidRequest(tooDeep, 422);
      return await handle(deps, request, ws, caller);
    } catch (error) {
      if (isCrumbsError(error)) return problem(error);
      deps.onUnexpectedError?.(error, request);
      return json(500, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } });
    }
  };
}

async function handle(
  deps: McpHttpDeps,
  request: HttpRequest,
  ws: string,
  caller: Caller,
): Promise<HttpResult> {
  const subscribe = deps.subscribe;
  const streams = subscribe !== undefined && asksForProgress(request.body);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !streams,
    maxRequestBodySize: MAX_MCP_BODY_BYTES,
  });
  const abort = new AbortController();
  const server = mcpServer(deps, {
    workspace: ws,
    caller,
    ...(request.remainingMs ? { remainingMs: request.remainingMs } : {}),
    ...(streams
      ? {
          subscribeDeltas: (streamId, onEvent) =>
            subscribe(ws, streamId, request.headers.authorization ?? '', onEvent),
          signal: abort.signal,
        }
      : {}),
  });
  // No server.onerror: what reaches it is a client's malformed message (answered with a JSON-RPC error) or a
  // handler's failure (answered as an internal error; the API in process logs its own).
  await server.connect(transport);
  let closesLater = false;
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(request.headers)) headers.set(k, v);
    const response = await transport.handleRequest(
      new Request(`${deps.baseUrl}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body !== undefined ? { body: request.body } : {}),
      }),
    );
    // A POST of notifications is answered at once (202): what they asked for is done first.
    await settled(server);
    const out: Record<string, string> = {};
    response.headers.forEach((value, key) => {
      out[key] = value;
    });
    if (streams && response.body !== null && out['content-type']?.startsWith('text/event-stream')) {
      closesLater = true;
      return {
        statusCode: response.status,
        headers: out,
        bodyStream: sseBody(response.body, async () => {
          abort.abort();
          await server.close();
        }),
      };
    }
    return { statusCode: response.status, headers: out, body: await response.text() };
  } finally {
    if (!closesLater) await server.close();
  }
}

/**
 * Whether the message is one `tools/call` of an agent (`ask_…`) with a progress token: the only request answered
 * with server-sent events (progress notifications, then the result), which the MCP transport allows for any POST
 * and clients must accept; they go out as they are written, on AWS and in `crumbs dev`. Everything else keeps JSON
 * responses.
 */
function asksForProgress(body: string | undefined): boolean {
  if (body === undefined) return false;
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return false;
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return false;
  const m = message as { method?: unknown; id?: unknown; params?: unknown };
  if (m.method !== 'tools/call' || m.id === undefined || m.params === null || typeof m.params !== 'object') {
    return false;
  }
  const params = m.params as { name?: unknown; task?: unknown; _meta?: { progressToken?: unknown } };
  const token = params._meta?.progressToken;
  return (
    typeof params.name === 'string' &&
    params.name.startsWith('ask_') &&
    params.task === undefined &&
    (typeof token === 'number' || (typeof token === 'string' && token.length <= MAX_PROGRESS_TOKEN_CHARS))
  );
}

/**
 * Every notification repeats the progress token: a longer one is not honoured (the spec lets a server send no
 * progress), so a client cannot make each chunk of an answer carry a megabyte.
 */
const MAX_PROGRESS_TOKEN_CHARS = 256;

/** The transport's event stream as text chunks; `done` runs when it ends or its reader goes away. */
async function* sseBody(body: ReadableStream<Uint8Array>, done: () => Promise<void>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      const text = decoder.decode(value, { stream: true });
      if (text !== '') yield text;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    await done();
  }
}

/** RFC 9728 metadata of the endpoint at this path: its URL, the issuer, bearer tokens in the header. */
function resourceMetadata(deps: McpHttpDeps, request: HttpRequest, ws: string): HttpResult {
  if (request.method !== 'GET') {
    throw new MethodNotAllowedError(`${request.method} is not supported on ${request.path}`, ['GET']);
  }
  return json(
    200,
    {
      resource: `${deps.baseUrl}/v1/workspaces/${ws}/mcp`,
      ...(deps.issuer ? { authorization_servers: [deps.issuer] } : {}),
      bearer_methods_supported: ['header'],
      resource_name: `crumbs workspace ${ws}`,
    },
    { 'cache-control': 'max-age=300' },
  );
}

/** A 400 with a JSON-RPC Invalid Request: a message refused before it is read. */
function invalidRequest(message: string, status = 400): HttpResult {
  return json(status, {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32600, message: `Invalid Request: ${message}` },
  });
}

function workspaceOf(raw: string | undefined): string {
  let ws: string;
  try {
    ws = decodeURIComponent(raw ?? '');
  } catch {
    throw new NotFoundError('no such workspace path');
  }
  if (!WORKSPACE_PATTERN.test(ws)) throw new NotFoundError(`no workspace "${ws.slice(0, 64)}"`);
  return ws;
}
