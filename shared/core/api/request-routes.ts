/**
 * Streamed answers over HTTP: where a stream is (`GET …/streams/{stream_id}`), its events as SSE
 * (`GET …/streams/{stream_id}/events`, streamed by the front door on AWS as under `crumbs dev`), and stopping a
 * streaming request (an `agent.request.v1`, or a chat's message, with a `stream_id`) while its model call runs
 * (`#shared/domain/streaming.ts`):
 *
 *   POST …/requests/{id}/cancel  { reason? }  → 202 `RequestCancel`, writes the request's `request.cancel.v1`
 *
 * The function making the call looks for that breadcrumb between the deltas it publishes (at most once a second,
 * `shared/core/agents/context/answer-stream.ts`), aborts the call and answers `cancelled`. Only a request that
 * streams (`stream_id`) has a call that looks, so another is a 409 saying so (an orchestrated request's run has its
 * own cancel: `POST …/runs/{id}/cancel`). A request already answered is a 409 naming the answer; the cancel's id is
 * derived from its stream's, so a second ask replays the first and writes nothing.
 */
import { parseOrThrow, toFieldIssues, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError, ConflictError, NotFoundError } from '#shared/domain/errors.ts';
import { AGENT_ERROR_SCHEMA, AGENT_RESPONSE_SCHEMA, requestTag, threadTag } from '#shared/domain/protocol.ts';
import { cancelIdOf, REQUEST_CANCEL_SCHEMA, STREAM_ID_PATTERN } from '#shared/domain/streaming.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { StreamingEndpoints } from '../streaming/endpoints.ts';
import { CancelRequestBodySchema as CancelBodySchema } from './contract/schemas.ts';
import { type Caller, type HttpRequest, type HttpResult, json } from './http.ts';

/** Where a request's answer streams (`GET …/streams/{stream_id}`): subscribe there before writing the request. */
export interface StreamInfo {
  stream_id: string;
  /** The AppSync Events channel (`/crumbs/<workspace>/<key>`). */
  channel: string;
  /** `wss://…/event/realtime` (locally `ws://127.0.0.1:<port>/event/realtime`). */
  realtime_url: string;
  /** The host a subscription's authorization names. */
  http_host: string;
  /** Server-sent events of the same stream (a path under the API's base URL). */
  events_url?: string;
}

export interface RequestCancel {
  request_id: string;
  cancel_id: string;
  requested_by: string;
  /** The ask was already made (by this caller or another): nothing new was written. */
  replayed: boolean;
}

/** Where answers stream, when the stack has a delta channel (`shared/core/streaming/`). */
export interface StreamingDeps {
  readonly endpoints: StreamingEndpoints;
  readonly channelFor: (workspace: string, streamId: string) => Promise<string>;
  /** The stream as server-sent events (`FRONT_DOOR.streamCapSeconds` at most). */
  readonly events?: (workspace: string, streamId: string, authorization: string) => Promise<HttpResult>;
}

export function requestRoutes(
  store: BreadcrumbStore,
  helpers: { optionalJsonBody(req: HttpRequest): unknown },
  streaming?: StreamingDeps,
) {
  const streamOf = (p: Record<string, string>) => {
    const workspace = parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
    const streamId = p.sid ?? '';
    if (!STREAM_ID_PATTERN.test(streamId)) {
      throw new BadRequestError('the stream id is not valid', [
        { path: 'stream_id', message: 'expected 8-64 letters, digits or "-"' },
      ]);
    }
    if (streaming === undefined) {
      throw new NotFoundError('this stack streams no answers (it has no delta channel)');
    }
    return { workspace, streamId, streaming };
  };
  return [
    {
      template: '/v1/workspaces/{ws}/streams/{stream_id}',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/streams\/(?<sid>[^/]+)$/,
      methods: {
        GET: async (_req: HttpRequest, p: Record<string, string>): Promise<HttpResult> => {
          const { workspace, streamId, streaming: s } = streamOf(p);
          const info: StreamInfo = {
            stream_id: streamId,
            channel: await s.channelFor(workspace, streamId),
            realtime_url: s.endpoints.realtime_url,
            http_host: s.endpoints.http_host,
            ...(s.events !== undefined
              ? { events_url: `/v1/workspaces/${workspace}/streams/${streamId}/events` }
              : {}),
          };
          return json(200, info);
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/streams/{stream_id}/events',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/streams\/(?<sid>[^/]+)\/events$/,
      methods: {
        GET: async (req: HttpRequest, p: Record<string, string>): Promise<HttpResult> => {
          const { workspace, streamId, streaming: s } = streamOf(p);
          if (s.events === undefined) {
            throw new NotFoundError(
              'this API serves no server-sent events: subscribe to the channel (GET …/streams/{stream_id} says where)',
            );
          }
          // Subscribed with the caller's own token: the channel's subscribe check applies to it as to any client.
          return s.events(workspace, streamId, req.headers.authorization ?? '');
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/requests/{id}/cancel',
      pattern: /^\/v1\/workspaces\/(?<ws>[^/]+)\/requests\/(?<id>[^/]+)\/cancel$/,
      methods: {
        POST: async (req: HttpRequest, p: Record<string, string>, caller: Caller): Promise<HttpResult> => {
          const workspace = parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
          const id = p.id ?? '';
          const parsed = CancelBodySchema.safeParse(helpers.optionalJsonBody(req) ?? {});
          if (!parsed.success)
            throw new BadRequestError('the cancel is not valid', toFieldIssues(parsed.error));
          const request = await store.get(workspace, id).catch((error: unknown) => {
            if (error instanceof NotFoundError)
              throw new NotFoundError(`no request ${id} in workspace ${workspace}`);
            throw error;
          });
          const context = request.context as Record<string, unknown>;
          if (typeof context.stream_id !== 'string') {
            throw new ConflictError(
              `request ${id} does not stream (no stream_id), so nothing watches for a cancel while it runs` +
                (context.orchestrate === true ? `; cancel its run: POST …/runs/run-${id}/cancel` : ''),
            );
          }
          const answer = await answerOf(store, workspace, id);
          if (answer !== undefined) {
            throw new ConflictError(`request ${id} is already answered (${answer.schema_name} ${answer.id})`);
          }
          const cancelId = cancelIdOf(workspace, context.stream_id);
          const { breadcrumb, replayed } = await store.create(
            workspace,
            {
              schema_name: REQUEST_CANCEL_SCHEMA,
              title: `cancel ${id}`,
              tags: ['request:cancel'],
              context: {
                request_id: id,
                ...(parsed.data.reason !== undefined ? { reason: parsed.data.reason } : {}),
              },
            },
            { id: cancelId, principal: caller.principal },
          );
          const result: RequestCancel = {
            request_id: id,
            cancel_id: cancelId,
            requested_by: breadcrumb.created_by,
            replayed,
          };
          return json(202, result);
        },
      },
    },
  ];
}

/** The request's answer: tagged with the request, or (a chat message answered through a context) in its thread. */
async function answerOf(store: BreadcrumbStore, workspace: string, requestId: string) {
  for (const tag of [requestTag(requestId), threadTag(requestId)]) {
    for (const schema of [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA]) {
      const page = await store.list({ workspace, schema_name: schema, tag, limit: 1 });
      if (page.items[0] !== undefined) return page.items[0];
    }
  }
  return undefined;
}
