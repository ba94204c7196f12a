/**
 * What the protocol servers' functions (MCP `functions/mcp`, A2A `functions/a2a`) share: the crumbs API built in
 * process on the table — breadcrumbs and the definitions listing, nothing that deletes a workspace, sends a model
 * call or holds a change stream open — which they call as the caller, and the response-streaming Lambda handler
 * around their HTTP handler (`http-handler.ts`). The peer address of each request (API Gateway's `sourceIp`, the
 * local server's socket) tells a server whether it came over loopback, for its DNS rebinding check
 * (`originRefusal`).
 */
import ipaddr from 'ipaddr.js';
import { DynamoChangeLog, DynamoThreadIndex } from '#shared/adapters/dynamodb/activity-index.ts';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoRateCells } from '#shared/adapters/dynamodb/rate-cells.ts';
import { type ApiEnvSchema, requestRateLimitsOf } from '#shared/config.ts';
import { createApi } from '#shared/core/api/api.ts';
import type { HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import { RequestRate } from '#shared/core/api/request-rate.ts';
import type { z } from '#shared/domain/zod.ts';
import { attachmentsFromEnv } from '#shared/rooms/attachments/from-env.ts';
import { guardrailsApi } from '#shared/rooms/guardrails/routes.ts';
import { ENV } from '#shared/topology.ts';
import { streamingHttpHandler } from './http-handler.ts';
import { measureHttpAnswer } from './metrics.ts';
import { powertools } from './powertools.ts';

type ApiEnv = z.output<typeof ApiEnvSchema>;

/** The Lambda handler of a protocol server: `serve` gets the API in process and a logger. */
export function protocolServerHandler(
  service: string,
  env: ApiEnv,
  serve: (deps: {
    api: (request: HttpRequest) => Promise<HttpResult>;
    onUnexpectedError: (error: unknown, request: HttpRequest) => void;
    viaLoopback: (request: HttpRequest) => boolean;
    requestRate: RequestRate;
  }) => (request: HttpRequest) => Promise<HttpResult>,
) {
  const pt = powertools(service, [defaultDocumentClient()]);
  const { logger } = pt;
  const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
  // Attachments: MCP tool results carry their images and files, A2A messages their file parts.
  const attachments = attachmentsFromEnv();
  const api = createApi({
    store,
    ...(attachments ? { attachments } : {}),
    activity: {
      store,
      threads: new DynamoThreadIndex({ tableName: env[ENV.tableName] }),
      changes: new DynamoChangeLog({ tableName: env[ENV.tableName] }),
      stream: { maxWaitMs: 0, settleMs: env[ENV.changesSettleMs], pollMs: env[ENV.changesPollMs] },
    },
    // The same rooms as the API's: a write through MCP or A2A passes the same gates.
    rooms: [guardrailsApi({ store, log: logger })],
    onUnexpectedError: (error, request) =>
      logger.error('unexpected error in the API called in process', {
        error,
        method: request.method,
        path: request.path,
      }),
  });
  const http = serve({
    api,
    // The API's per-workspace request rate, one cell for the API and both servers: a workspace's MCP and A2A
    // messages take from the same allowance as its API requests. The in-process API above takes none (its calls
    // are the parts of a request already counted).
    requestRate: new RequestRate({
      cells: new DynamoRateCells(env[ENV.tableName]),
      limits: requestRateLimitsOf(),
      log: logger,
    }),
    onUnexpectedError: (error, request) =>
      logger.error('unexpected error', { error, method: request.method, path: request.path }),
    viaLoopback: (request) => isLoopback(request.sourceIp),
  });
  return streamingHttpHandler(pt, env[ENV.workspacesClaim], http, (result) =>
    measureHttpAnswer(pt.metrics, result.statusCode),
  );
}

function isLoopback(address: string | undefined): boolean {
  if (address === undefined || !ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}
