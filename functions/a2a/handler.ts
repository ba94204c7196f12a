/**
 * The A2A server (`shared/core/a2a/`). Triggered by API Gateway HTTP API (payload 2.0) on
 * `/a2a/workspaces/{ws}/agents/{agent_id}` (JSON-RPC and the agent card) behind the same JWT authorizer as the API,
 * and publicly on opted-in public cards; locally by the local stack's server the same way. Calls the API's own handler code in process as the caller, so every
 * breadcrumb it reads or writes goes through the API's checks; it has the API's table access and no more.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { DynamoChangeLog, DynamoThreadIndex } from '#shared/adapters/dynamodb/activity-index.ts';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { ApiEnvSchema, parseEnv } from '#shared/config.ts';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import { createApi } from '#shared/core/api/api.ts';
import { type HttpEvent, type HttpResult, toHttpRequest } from '#shared/core/api/http.ts';
import { ENV } from '#shared/topology.ts';
import { instrumented, powertools } from '../wiring/powertools.ts';

const env = parseEnv(ApiEnvSchema);
const pt = powertools('crumbs-a2a', [defaultDocumentClient()]);
const { logger } = pt;

const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const api = createApi({
  store,
  activity: {
    store,
    threads: new DynamoThreadIndex({ tableName: env[ENV.tableName] }),
    changes: new DynamoChangeLog({ tableName: env[ENV.tableName] }),
    stream: { maxWaitMs: 0, settleMs: env[ENV.changesSettleMs], pollMs: env[ENV.changesPollMs] },
  },
  onUnexpectedError: (error, request) =>
    logger.error('unexpected error in the API called by A2A', {
      error,
      method: request.method,
      path: request.path,
    }),
});
const a2a = createA2aHttp({
  api,
  onUnexpectedError: (error, request) =>
    logger.error('unexpected error', { error, method: request.method, path: request.path }),
});

export const handler = instrumented(
  middy(
    async (event: HttpEvent, context: Context): Promise<HttpResult> =>
      a2a(toHttpRequest(event, env[ENV.workspacesClaim], context)),
  ),
  pt,
);
