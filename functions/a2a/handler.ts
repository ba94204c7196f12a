/**
 * The A2A server (`shared/core/a2a/`). Triggered by the front door (API Gateway REST API, STREAM integrations) on
 * `/a2a/workspaces/{ws}/agents/{agent_id}` (JSON-RPC and the agent card) behind the same TOKEN authorizer as the
 * API, and publicly on opted-in public cards; locally by the local stack's server the same way. A
 * response-streaming handler: `SendStreamingMessage` and `SubscribeToTask` send each event as it happens. Calls the
 * API's own handler code in process as the caller, so every breadcrumb it reads or writes goes through the API's
 * checks; it has the API's table access and no more. Cards name the API's configured base URL (`CRUMBS_API_URL`).
 */
import { ProtocolServerEnvSchema, parseEnv } from '#shared/config.ts';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import { channelSubscriberFromEnv } from '#shared/core/api/streaming-deps.ts';
import { ENV } from '#shared/topology.ts';
import { protocolServerHandler } from '../wiring/protocol-server.ts';
import { streamLeasesFor } from '../wiring/stream-leases.ts';

const env = parseEnv(ProtocolServerEnvSchema);
// The delta channel (AppSync Events; the local events server in `crumbs dev`): SendStreamingMessage carries the
// model's output, subscribed with the caller's token under a lease of the workspace's share of streams.
const subscribe = channelSubscriberFromEnv(streamLeasesFor(env[ENV.tableName]));

export const handler = protocolServerHandler('crumbs-a2a', env, (deps) =>
  createA2aHttp({ ...deps, baseUrl: env[ENV.apiUrl], ...(subscribe !== undefined ? { subscribe } : {}) }),
);
