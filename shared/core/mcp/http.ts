/**
 * The MCP endpoint over HTTP: `POST /v1/workspaces/{ws}/mcp`, Streamable HTTP in the SDK's stateless mode with JSON
 * responses — a fresh transport and server per request, nothing held in the process, so it runs in a Lambda behind
 * the HTTP API (which cannot stream a response). `GET` (a server-sent event stream) and `DELETE` (a session's end)
 * are 405: a stateless server has neither.
 *
 * Authorization is the API's: the same bearer token / JWT (the authorizer in front on AWS, the local server's check
 * locally) and the same workspace check, 401 / 403 otherwise. A 401 names the protected resource metadata (RFC 9728)
 * in `WWW-Authenticate`, served per endpoint path at `/.well-known/oauth-protected-resource/v1/workspaces/{ws}/mcp`
 * with the issuer the operator configured: MCP clients compare its `resource` with the URL they called.
 *
 * Nothing a client sends makes a 5xx: the transport answers malformed JSON-RPC with JSON-RPC errors, and an
 * unexpected failure inside a handler becomes a JSON-RPC internal error (logged).
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  type Caller,
  type HttpRequest,
  type HttpResult,
  json,
  problem,
  publicBaseUrl,
} from '#shared/core/api/http.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import {
  ForbiddenError,
  isCrumbsError,
  MethodNotAllowedError,
  NotFoundError,
  UnauthorizedError,
} from '#shared/domain/errors.ts';
import { type McpDeps, mcpServer } from './server.ts';

export const MCP_PATH = /^\/v1\/workspaces\/(?<ws>[^/]+)\/mcp$/;
const METADATA_PREFIX = '/.well-known/oauth-protected-resource';
const METADATA_PATH = /^\/\.well-known\/oauth-protected-resource\/v1\/workspaces\/(?<ws>[^/]+)\/mcp$/;
/** A JSON-RPC request (a batch included) larger than this is refused with a 413 before it is parsed. */
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

export interface McpHttpDeps extends McpDeps {
  /** The issuer of the tokens the endpoint accepts (the JWT authorizer's), for the resource metadata. */
  readonly issuer?: string;
  /** Called with unexpected errors before they are answered as a JSON-RPC internal error. */
  readonly onUnexpectedError?: (error: unknown, request: HttpRequest) => void;
}

export function createMcpHttp(deps: McpHttpDeps): (request: HttpRequest) => Promise<HttpResult> {
  return async (request) => {
    try {
      const metadata = METADATA_PATH.exec(request.path);
      if (metadata) return resourceMetadata(deps, request, workspaceOf(metadata.groups?.ws));
      const m = MCP_PATH.exec(request.path);
      if (!m) throw new NotFoundError(`no route for ${request.path}`);
      const ws = workspaceOf(m.groups?.ws);
      const caller = request.caller;
      if (!caller) {
        const result = problem(new UnauthorizedError('missing or invalid bearer token'));
        result.headers['www-authenticate'] =
          `Bearer resource_metadata="${publicBaseUrl(request)}${METADATA_PREFIX}/v1/workspaces/${ws}/mcp"`;
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
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: MAX_MCP_BODY_BYTES,
  });
  const server = mcpServer(deps, {
    workspace: ws,
    caller,
    ...(request.remainingMs ? { remainingMs: request.remainingMs } : {}),
  });
  // No server.onerror: what reaches it is a client's malformed message (answered with a JSON-RPC error) or a
  // handler's failure (answered as an internal error; the API in process logs its own).
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(request.headers)) headers.set(k, v);
    const response = await transport.handleRequest(
      new Request(`${publicBaseUrl(request)}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body !== undefined ? { body: request.body } : {}),
      }),
    );
    const out: Record<string, string> = {};
    response.headers.forEach((value, key) => {
      out[key] = value;
    });
    return { statusCode: response.status, headers: out, body: await response.text() };
  } finally {
    await server.close();
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
      resource: `${publicBaseUrl(request)}/v1/workspaces/${ws}/mcp`,
      ...(deps.issuer ? { authorization_servers: [deps.issuer] } : {}),
      bearer_methods_supported: ['header'],
      resource_name: `crumbs workspace ${ws}`,
    },
    { 'cache-control': 'max-age=300' },
  );
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
