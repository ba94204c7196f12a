/**
 * Every active agent of a workspace as an A2A v1.0 agent over the JSON-RPC binding:
 * - `POST /a2a/workspaces/{ws}/agents/{agent_id}`: `SendMessage`, `SendStreamingMessage` and `SubscribeToTask`
 *   (server-sent events), `GetTask`, `CancelTask`, `ListTasks` through the SDK's `JsonRpcTransportHandler` on
 *   `CrumbsA2aHandler` (`handler.ts`); A2A 0.3's names (`message/send`, …) through the SDK's compat handler;
 * - `GET /a2a/workspaces/{ws}/agents/{agent_id}/.well-known/agent-card.json`: its card (`card.ts`).
 *
 * DNS rebinding: the MCP endpoint's rule (`originRefusal`) — a present `Origin` must be the endpoint's own, or a
 * loopback origin for a request over loopback (`crumbs dev`), whose Host must name loopback — refused with a 403 and
 * a JSON-RPC error before the token check; only the opted-in public cards, readable by anyone, skip it.
 *
 * Authorization is the API's token and workspace check (the authorizer in front on AWS). The card needs the token
 * too — a public card would list a workspace's agents to anyone. A definition may opt into a public card
 * (`a2a: { public_card: true }`): it is then also served, without a token, at
 * `/a2a/public/workspaces/{ws}/agents/{agent_id}/.well-known/agent-card.json` (a route public at the gateway; the
 * handler serves only opted-in cards there, and 404s the rest alike). An agent whose definition says `a2a: false`,
 * or that is not active, is not found.
 *
 * Nothing a client sends makes a 5xx: a message nested deeper than `MAX_MESSAGE_DEPTH` is a 400 with a JSON-RPC
 * Invalid Request naming the limit, malformed JSON-RPC gets a JSON-RPC error from the SDK's handler.
 */
import { AgentCard } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { A2AError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { DefinitionSummary } from '#shared/core/api/activity-routes.ts';
import { type Caller, type HttpRequest, type HttpResult, json, problem } from '#shared/core/api/http.ts';
import { isOk, listFull, workspaceApi } from '#shared/core/api/in-process.ts';
import { depthProblem } from '#shared/core/api/json-depth.ts';
import { originRefusal } from '#shared/core/api/origin.ts';
import { jsonRpcCost, type RequestRate } from '#shared/core/api/request-rate.ts';
import type { ChannelSubscribe } from '#shared/core/api/streaming-deps.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import { legacyAgentContext } from '#shared/domain/definitions.ts';
import {
  ForbiddenError,
  isCrumbsError,
  MethodNotAllowedError,
  NotFoundError,
  UnauthorizedError,
} from '#shared/domain/errors.ts';
import { AGENT_DEF_SCHEMA, LEGACY_AGENT_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { agentCardOf } from './card.ts';
import { type A2aDeps, CrumbsA2aHandler } from './handler.ts';
import { SSE_HEADERS, sseBody } from './stream.ts';

const AGENT_PATH =
  /^\/a2a\/(?<public>public\/)?workspaces\/(?<ws>[^/]+)\/agents\/(?<agent>[^/]+)(?<card>\/\.well-known\/agent-card\.json)?$/;
/** Agent definitions read to find one (pages of 100): a workspace holds at most a few hundred definitions. */
const DEFINITION_PAGES = 5;
/** A JSON-RPC body larger than this is refused (a message is text and a little data). */
export const MAX_A2A_BODY_BYTES = 1024 * 1024;

export interface A2aHttpDeps extends A2aDeps {
  /** The API's public base URL (`ENV.apiUrl`, no trailing slash): cards name the agents' URLs under it. */
  readonly baseUrl: string;
  readonly onUnexpectedError?: (error: unknown, request: HttpRequest) => void;
  /**
   * Whether the request reached the server over loopback (its peer address is a loopback one: the local stack).
   * Absent, no request did (AWS, behind API Gateway).
   */
  readonly viaLoopback?: (request: HttpRequest) => boolean;
  /** The stack's delta channel, subscribed as the caller: `SendStreamingMessage` then carries model output. */
  readonly subscribe?: ChannelSubscribe;
  /** The workspace's request rate, the API's: a card read takes one, a JSON-RPC request one per message. */
  readonly requestRate?: RequestRate;
}

export function createA2aHttp(deps: A2aHttpDeps): (request: HttpRequest) => Promise<HttpResult> {
  return async (request) => {
    try {
      const m = AGENT_PATH.exec(request.path);
      if (!m?.groups) throw new NotFoundError(`no route for ${request.path}`);
      const ws = decoded(m.groups.ws);
      const agent = decoded(m.groups.agent);
      if (!WORKSPACE_PATTERN.test(ws)) throw new NotFoundError(`no workspace "${ws.slice(0, 64)}"`);
      const isCard = m.groups.card !== undefined;
      if (m.groups.public !== undefined && !isCard) throw new NotFoundError(`no route for ${request.path}`);
      if (request.method !== (isCard ? 'GET' : 'POST')) {
        throw new MethodNotAllowedError(`${request.method} is not supported on ${request.path}`, [
          isCard ? 'GET' : 'POST',
        ]);
      }
      if (m.groups.public !== undefined) {
        // No token here: the definition is read by the service, and only an opted-in card is answered.
        const found = await activeAgent(deps, ws, agent, { principal: 'system:a2a', workspaces: [ws] });
        if (!found?.publicCard) throw new NotFoundError(`no public A2A card for ${agent} in workspace ${ws}`);
        return cardResult(agentCardOf(found.context, deps.baseUrl, ws));
      }
      const refusal = originRefusal(request, deps.viaLoopback?.(request) === true, deps.baseUrl);
      if (refusal !== undefined) {
        return json(403, {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32000, message: `Forbidden: ${refusal}` },
        });
      }
      const caller = request.caller;
      if (!caller) throw new UnauthorizedError('missing or invalid bearer token');
      const allowed = caller.workspaces === '*' || caller.workspaces.includes(ws);
      if (!allowed) {
        throw new ForbiddenError(
          `you may not use workspace ${ws}${caller.claimProblem ? `: ${caller.claimProblem}` : ''}`,
        );
      }
      await deps.requestRate?.admit(ws, isCard ? 1 : jsonRpcCost(request.body));
      const found = await activeAgent(deps, ws, agent, caller);
      if (found === undefined) throw new NotFoundError(`no A2A agent ${agent} in workspace ${ws}`);
      const card = agentCardOf(found.context, deps.baseUrl, ws);
      if (isCard) return cardResult(card);
      if ((request.body?.length ?? 0) > MAX_A2A_BODY_BYTES) {
        return json(413, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request too large' } });
      }
      // Refused before the SDK's checks walk it: they recurse once per level.
      const tooDeep = depthProblem(request.body);
      if (tooDeep !== undefined) {
        // 422, as the API answers a body past its depth, with the JSON-RPC Invalid Request naming the limit.
        return json(422, {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: `Invalid Request: ${tooDeep}` },
        });
      }
      // Aborted when a stream's client goes away (the local server calls `return()` on the body): stops reading.
      const abort = new AbortController();
      const subscribe = deps.subscribe;
      const handler = new CrumbsA2aHandler(deps, {
        workspace: ws,
        agent,
        caller,
        card,
        signal: abort.signal,
        ...(request.remainingMs ? { remainingMs: request.remainingMs } : {}),
        ...(subscribe !== undefined
          ? {
              subscribeDeltas: (streamId: string, onEvent: Parameters<ChannelSubscribe>[3]) =>
                subscribe(ws, streamId, request.headers.authorization ?? '', onEvent),
            }
          : {}),
      });
      const body = request.body ?? '';
      // A2A 0.3's method names (`message/send`, `tasks/get`, …) through the SDK's compat handler on the same
      // handler; 1.0's names have no "/".
      const transport = isLegacyMethod(body)
        ? new LegacyJsonRpcTransportHandler(handler)
        : new JsonRpcTransportHandler(handler);
      const answer = await transport.handle(body, new ServerCallContext());
      if (typeof (answer as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
        return streamResult(answer as AsyncGenerator<unknown, void, undefined>, request, abort, (error) =>
          deps.onUnexpectedError?.(error, request),
        );
      }
      return json(200, answer);
    } catch (error) {
      if (isCrumbsError(error)) return problem(error);
      deps.onUnexpectedError?.(error, request);
      return json(500, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } });
    }
  };
}

interface FoundAgent {
  context: Record<string, unknown>;
  publicCard: boolean;
}

/** The agent's active definition, unless it opted out of A2A. */
async function activeAgent(
  deps: A2aDeps,
  ws: string,
  agent: string,
  caller: Caller,
): Promise<FoundAgent | undefined> {
  const api = workspaceApi(deps.api, { workspace: ws, caller });
  const [defs, summaries] = await Promise.all([
    listFull(api, AGENT_DEF_SCHEMA, DEFINITION_PAGES),
    api('GET', 'definitions'),
  ]);
  if (!isOk(summaries)) return undefined;
  const items = (summaries.body as { items: DefinitionSummary[] }).items;
  let record = defs.find((d) => d.context.agent_id === agent);
  // Seed 002's agent shape, read only where the workspace has one (its `agent_name` is the agent's id).
  if (record === undefined && items.some((s) => s.schema_name === LEGACY_AGENT_DEF_SCHEMA)) {
    const legacy = (await listFull(api, LEGACY_AGENT_DEF_SCHEMA, DEFINITION_PAGES))
      .map((d) => ({ ...d, context: legacyAgentContext(d.context) }))
      .find((d) => d.context.agent_id === agent);
    record = legacy;
  }
  if (record === undefined) return undefined;
  const found = record;
  const summary = items.find((s) => s.id === found.id);
  if (summary?.state !== 'active' || summary.version !== record.version) return undefined;
  const a2a = record.context.a2a;
  if (a2a === false) return undefined;
  const publicCard =
    a2a !== null && typeof a2a === 'object' && (a2a as { public_card?: unknown }).public_card === true;
  return { context: record.context, publicCard };
}

/**
 * A stream's JSON-RPC responses as server-sent events, as the SDK's express handler answers: its first step read
 * before answering, so a refusal (an unknown task, a malformed message) is a plain JSON-RPC error response; then
 * `text/event-stream`, each event written as it comes.
 */
async function streamResult(
  stream: AsyncGenerator<unknown, void, undefined>,
  request: HttpRequest,
  abort: AbortController,
  onUnexpectedError: (error: unknown) => void,
): Promise<HttpResult> {
  const id = requestIdOf(request.body);
  let first: IteratorResult<unknown, void>;
  try {
    first = await stream.next();
  } catch (error) {
    if (!(error instanceof A2AError)) onUnexpectedError(error);
    return json(200, {
      jsonrpc: '2.0',
      id,
      error:
        error instanceof A2AError
          ? JsonRpcTransportHandler.mapToJSONRPCError(error)
          : { code: -32603, message: 'Internal error' },
    });
  }
  if (first.done) return json(200, { jsonrpc: '2.0', id, result: null });
  const events = sseBody(first.value, stream, id, onUnexpectedError);
  const bodyStream: AsyncIterable<string> = {
    [Symbol.asyncIterator]: () => ({
      next: () => events.next(),
      return: async () => {
        abort.abort();
        return events.return(undefined);
      },
    }),
  };
  return { statusCode: 200, headers: { ...SSE_HEADERS }, bodyStream };
}

function isLegacyMethod(body: string): boolean {
  try {
    const method = (JSON.parse(body) as { method?: unknown }).method;
    return typeof method === 'string' && method.includes('/');
  } catch {
    return false;
  }
}

/** The JSON-RPC id of a request body, or null when there is none to read. */
function requestIdOf(body: string | undefined): string | number | null {
  try {
    const id = (JSON.parse(body ?? '') as { id?: unknown }).id;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}

/** The card in A2A's JSON form (the SDK's types are its protobuf messages). */
function cardResult(card: AgentCard): HttpResult {
  return json(200, AgentCard.toJSON(card), { 'cache-control': 'private, max-age=60' });
}

function decoded(segment: string | undefined): string {
  try {
    return decodeURIComponent(segment ?? '');
  } catch {
    throw new NotFoundError('no such path');
  }
}
