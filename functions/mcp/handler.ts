/**
 * The MCP server (`shared/core/mcp/`). Triggered by the front door (API Gateway REST API, STREAM integrations) on
 * `/v1/workspaces/{ws}/mcp` behind the same TOKEN authorizer as the API, and publicly on the endpoint's protected
 * resource metadata; locally by the local stack's server the same way. A response-streaming handler: an agent's
 * answer goes out as progress notifications while it is written. Calls the API's own handler code in process as
 * the caller, so every breadcrumb it reads or writes goes through the API's checks; it has the API's table access
 * and no more. The URLs it publishes are built from the API's configured base URL (`CRUMBS_API_URL`).
 * Whether a request came over loopback, for its DNS rebinding check, comes from the shared wiring.
 */
import { DynamoCallIndex } from '#shared/adapters/dynamodb/call-index.ts';
import { McpEnvSchema, parseEnv } from '#shared/config.ts';
import { channelSubscriberFromEnv } from '#shared/core/api/streaming-deps.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import { ENV } from '#shared/topology.ts';
import { protocolServerHandler } from '../wiring/protocol-server.ts';
import { streamLeasesFor } from '../wiring/stream-leases.ts';

const env = parseEnv(McpEnvSchema);
// Where the stack has a delta channel, an agent's answer streams to a caller that asks for progress (under a lease
// of the workspace's share of streams).
const subscribe = channelSubscriberFromEnv(streamLeasesFor(env[ENV.tableName]));

export const handler = protocolServerHandler('crumbs-mcp', env, (deps) =>
  createMcpHttp({
    ...deps,
    baseUrl: env[ENV.apiUrl],
    // A streamed call's cancel, a POST of its own on any instance, finds its request here.
    calls: new DynamoCallIndex(env[ENV.tableName]),
    ...(env[ENV.jwtIssuer] ? { issuer: env[ENV.jwtIssuer] } : {}),
    ...(subscribe !== undefined ? { subscribe } : {}),
  }),
);
