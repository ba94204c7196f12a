/**
 * Every active agent of a workspace as an A2A v1.0 agent over the JSON-RPC binding:
 * - `POST /a2a/workspaces/{ws}/agents/{agent_id}`: `SendMessage`, `GetTask`, `CancelTask`, `ListTasks`, … through
 *   the SDK's `JsonRpcTransportHandler` on `CrumbsA2aHandler` (`handler.ts`);
 * - `GET /a2a/workspaces/{ws}/agents/{agent_id}/.well-known/agent-card.json`: its card (`card.ts`).
 *
 * Authorization is the API's token and workspace check (the authorizer in front on AWS). The card needs the token
 * too — a public card would list a workspace's agents to anyone. A definition may opt into a public card
 * (`a2a: { public_card: true }`): it is then also served, without a token, at
 * `/a2a/public/workspaces/{ws}/agents/{agent_id}/.well-known/agent-card.json` (a route public at the gateway; the
 * handler serves only opted-in cards there, and 404s the rest alike). An agent whose definition says `a2a: false`,
 * or that is not active, is not found.
 *
 * Nothing a client sends makes a 5xx: malformed JSON-RPC gets a JSON-RPC error from the SDK's handler.
 */
import { AgentCard } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { DefinitionSummary } from '#shared/core/api/activity-routes.ts';
import {
  type Caller,
  type HttpRequest,
  type HttpResult,
  json,
  problem,
  publicBaseUrl,
} from '#shared/core/api/http.ts';
import { isOk, listFull, workspaceApi } from '#shared/core/api/in-process.ts';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import {
  ForbiddenError,
  isCrumbsError,
  MethodNotAllowedError,
  NotFoundError,
  UnauthorizedError,
} from '#shared/domain/errors.ts';
import { agentCardOf } from './card.ts';
import { type A2aDeps, CrumbsA2aHandler } from './handler.ts';

const AGENT_PATH =
  /^\/a2a\/(?<public>public\/)?workspaces\/(?<ws>[^/]+)\/agents\/(?<agent>[^/]+)(?<card>\/\.well-known\/agent-card\.json)?$/;
/** Agent definitions read to find one (pages of 100): a workspace holds at most a few hundred definitions. */
const DEFINITION_PAGES = 5;
/** A JSON-RPC body larger than this is refused (a message is text and a little data). */
export const MAX_A2A_BODY_BYTES = 1024 * 1024;

export interface A2aHttpDeps extends A2aDeps {
  readonly onUnexpectedError?: (error: unknown, request: HttpRequest) => void;
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
        return cardResult(agentCardOf(found.context, publicBaseUrl(request), ws));
      }
      const caller = request.caller;
      if (!caller) throw new UnauthorizedError('missing or invalid bearer token');
      const allowed = caller.workspaces === '*' || caller.workspaces.includes(ws);
      if (!allowed) {
        throw new ForbiddenError(
          `you may not use workspace ${ws}${caller.claimProblem ? `: ${caller.claimProblem}` : ''}`,
        );
      }
      const found = await activeAgent(deps, ws, agent, caller);
      if (found === undefined) throw new NotFoundError(`no A2A agent ${agent} in workspace ${ws}`);
      const card = agentCardOf(found.context, publicBaseUrl(request), ws);
      if (isCard) return cardResult(card);
      if ((request.body?.length ?? 0) > MAX_A2A_BODY_BYTES) {
        return json(413, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request too large' } });
      }
      const transport = new JsonRpcTransportHandler(
        new CrumbsA2aHandler(deps, {
          workspace: ws,
          agent,
          caller,
          card,
          ...(request.remainingMs ? { remainingMs: request.remainingMs } : {}),
        }),
      );
      const answer = await transport.handle(request.body ?? '', new ServerCallContext());
      if (typeof (answer as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
        // Streaming is not offered (the card says so): the stream's first step is the SDK's refusal, answered here
        // as the JSON-RPC error it is; the function cannot hold a stream open anyway (API Gateway buffers).
        try {
          const first = await (answer as AsyncGenerator).next();
          await (answer as AsyncGenerator).return(undefined);
          return json(200, first.value ?? { jsonrpc: '2.0', id: requestIdOf(request.body), result: null });
        } catch (error) {
          return json(200, {
            jsonrpc: '2.0',
            id: requestIdOf(request.body),
            error: JsonRpcTransportHandler.mapToJSONRPCError(error),
          });
        }
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
    listFull(api, 'agent.def.v1', DEFINITION_PAGES),
    api('GET', 'definitions'),
  ]);
  const record = defs.find((d) => d.context.agent_id === agent);
  if (record === undefined || !isOk(summaries)) return undefined;
  const summary = (summaries.body as { items: DefinitionSummary[] }).items.find((s) => s.id === record.id);
  if (summary?.state !== 'active' || summary.version !== record.version) return undefined;
  const a2a = record.context.a2a;
  if (a2a === false) return undefined;
  const publicCard =
    a2a !== null && typeof a2a === 'object' && (a2a as { public_card?: unknown }).public_card === true;
  return { context: record.context, publicCard };
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
