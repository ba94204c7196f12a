/**
 * HTTP API. Triggered by the front door (API Gateway REST API, STREAM integrations behind the TOKEN authorizer:
 * every route no other function serves, the SSE route included) — and locally by the local stack's server, which
 * plays API Gateway's part. A response-streaming handler (`streamingHttpHandler`): server-sent events go out as
 * they come. Reads and writes the breadcrumbs table (and each workspace's request rate cell in it,
 * `request-rate.ts`). Writes nothing else, but for a workspace's deletion, which also deletes that workspace's agent
 * credentials (`secret-eraser.ts`), and a person's "forget", which also deletes their vectors (S3 Vectors).
 */
import { vectorDepsFor } from '#functions/wiring/embedder-from-env.ts';
import { DynamoChangeLog, DynamoThreadIndex } from '#shared/adapters/dynamodb/activity-index.ts';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoPurge } from '#shared/adapters/dynamodb/purge.ts';
import { DynamoRateCells } from '#shared/adapters/dynamodb/rate-cells.ts';
import { DynamoUsageTotals } from '#shared/adapters/dynamodb/usage-totals.ts';
import { DynamoWorkspaceSweeper } from '#shared/adapters/dynamodb/workspace-sweeper.ts';
import { SchedulerWorkspaceTimers } from '#shared/adapters/scheduler/scheduler-timers.ts';
import { secretEraserFromEnv } from '#shared/adapters/secrets/secret-eraser.ts';
import { ApiEnvSchema, parseEnv, requestRateLimitsOf, TimerCancelEnvSchema } from '#shared/config.ts';
import { createApi } from '#shared/core/api/api.ts';
import { RequestRate } from '#shared/core/api/request-rate.ts';
import { apiStreamingFromEnv } from '#shared/core/api/streaming-deps.ts';
import { removeEmbedding } from '#shared/core/stream/vector-search.ts';
import { streamingEndpoints } from '#shared/core/streaming/endpoints.ts';
import { attachmentsFromEnv } from '#shared/rooms/attachments/from-env.ts';
import { guardrailsApi } from '#shared/rooms/guardrails/routes.ts';
import { memoryRoutes } from '#shared/rooms/memory/routes.ts';
import { ENV } from '#shared/topology.ts';
import { streamingHttpHandler } from '../wiring/http-handler.ts';
import { measureHttpAnswer } from '../wiring/metrics.ts';
import { powertools } from '../wiring/powertools.ts';
import { streamLeasesFor } from '../wiring/stream-leases.ts';

const env = parseEnv(ApiEnvSchema);
const pt = powertools('crumbs-api', [defaultDocumentClient()]);
const { logger, metrics } = pt;
const localEndpoints = env[ENV.localEndpoints];

const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const threads = new DynamoThreadIndex({ tableName: env[ENV.tableName] });
const changes = new DynamoChangeLog({ tableName: env[ENV.tableName] });
// Server-sent events of a stream hold a channel subscription for the caller, under a lease of the workspace's share.
const streaming = apiStreamingFromEnv(streamLeasesFor(env[ENV.tableName], logger));
// A workspace's deletion cancels its timers and schedules in the stack's schedule group.
const scheduleGroup = parseEnv(TimerCancelEnvSchema)[ENV.scheduleGroup];
const vectors = vectorDepsFor(store, env[ENV.tableName]);
const purge = new DynamoPurge(env[ENV.tableName]);
const attachments = attachmentsFromEnv();
const api = createApi({
  store,
  ...(attachments ? { attachments } : {}),
  requestRate: new RequestRate({
    cells: new DynamoRateCells(env[ENV.tableName]),
    limits: requestRateLimitsOf(),
    log: logger,
  }),
  vectorSearch: vectors,
  // The memory room: a person's records, and forgetting them (purged with their versions, their vectors at once).
  roomRoutes: memoryRoutes({
    store,
    purge: (workspace, id) => purge.purge(workspace, id),
    removeVector: (workspace, id) => removeEmbedding(vectors, workspace, id),
  }),
  ...(streaming !== undefined ? { streaming } : {}),
  activity: {
    store,
    threads,
    changes,
    stream: {
      maxWaitMs: 20_000,
      settleMs: env[ENV.changesSettleMs],
      pollMs: env[ENV.changesPollMs],
    },
    // The publisher sends every change to the same channels API (its `changes` namespace).
    channels: streamingEndpoints(),
  },
  workspaces: {
    store,
    threads,
    changes,
    sweeper: new DynamoWorkspaceSweeper(env[ENV.tableName]),
    ...(attachments ? { blobs: attachments } : {}),
    secrets: secretEraserFromEnv(),
    ...(scheduleGroup !== undefined ? { timers: new SchedulerWorkspaceTimers(scheduleGroup) } : {}),
  },
  usage: new DynamoUsageTotals(env[ENV.tableName]),
  // Rooms: their routes and write gates (DESIGN.md "New capabilities land as rooms").
  rooms: [guardrailsApi({ store, log: logger })],
  health: () => (localEndpoints ? { local: localEndpoints } : {}),
  onUnexpectedError: (error, request) =>
    logger.error('unexpected error', { error, method: request.method, path: request.path }),
});

export const handler = streamingHttpHandler(pt, env[ENV.workspacesClaim], api, (result) =>
  measureHttpAnswer(metrics, result.statusCode),
);
