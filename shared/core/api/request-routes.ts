/**
 * Stopping a streaming request (an `agent.request.v1`, or a chat's message, with a `stream_id`) while its model
 * call runs (`#shared/domain/streaming.ts`):
 *
 *   POST …/requests/{id}/cancel  { reason? }  → 202 `RequestCancel`, writes the request's `request.cancel.v1`
 *
 * The function making the call looks for that breadcrumb between the deltas it publishes (at most once a second,
 * `shared/core/agents/context/answer-stream.ts`), aborts the call and answers `cancelled`. Only a request that
 * streams (`stream_id`) has a call that looks, so another is a 409 saying so (an orchestrated request's run has its
 * own cancel: `POST …/runs/{id}/cancel`). A request already answered is a 409 naming the answer; the cancel's id is
 * derived from the request's, so a second ask replays the first and writes nothing.
 */
import { parseOrThrow, toFieldIssues, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError, ConflictError, NotFoundError } from '#shared/domain/errors.ts';
import { AGENT_ERROR_SCHEMA, AGENT_RESPONSE_SCHEMA, requestTag } from '#shared/domain/protocol.ts';
import { cancelIdOf, REQUEST_CANCEL_SCHEMA } from '#shared/domain/streaming.ts';
import * as z from '#shared/domain/zod.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { type Caller, type HttpRequest, type HttpResult, json } from './http.ts';

export interface RequestCancel {
  request_id: string;
  cancel_id: string;
  requested_by: string;
  /** The ask was already made (by this caller or another): nothing new was written. */
  replayed: boolean;
}

const CancelBodySchema = z.strictObject({
  reason: z.optional(z.string().check(z.minLength(1), z.maxLength(500))),
});

export function requestRoutes(
  store: BreadcrumbStore,
  helpers: { optionalJsonBody(req: HttpRequest): unknown },
) {
  return [
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
          const cancelId = cancelIdOf(workspace, id);
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

async function answerOf(store: BreadcrumbStore, workspace: string, requestId: string) {
  for (const schema of [AGENT_RESPONSE_SCHEMA, AGENT_ERROR_SCHEMA]) {
    const page = await store.list({ workspace, schema_name: schema, tag: requestTag(requestId), limit: 1 });
    if (page.items[0] !== undefined) return page.items[0];
  }
  return undefined;
}
