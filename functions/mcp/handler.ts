/**
 * The MCP server (`shared/core/mcp/`). Triggered by API Gateway HTTP API (payload 2.0) on `/v1/workspaces/{ws}/mcp`
 * behind the same JWT authorizer as the API, and publicly on the endpoint's protected resource metadata; locally by
 * the local stack's server the same way. Calls the API's own handler code in process as the caller, so every
 * breadcrumb it reads or writes goes through the API's checks; it has the API's table access and no more.
 * The peer address of each request (API Gateway's `sourceIp`, the local server's socket) tells the endpoint whether
 * it came over loopback, for its DNS rebinding check; it rides along in an AsyncLocalStorage because the request the
 * shared wiring builds carries headers only.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context } from 'aws-lambda';
import ipaddr from 'ipaddr.js';
import { McpEnvSchema, parseEnv } from '#shared/config.ts';
import type { HttpEvent } from '#shared/core/api/http.ts';
import { channelSubscriberFromEnv } from '#shared/core/api/streaming-deps.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import { ENV } from '#shared/topology.ts';
import { protocolServerHandler } from '../wiring/protocol-server.ts';
import { streamLeasesFor } from '../wiring/stream-leases.ts';

const env = parseEnv(McpEnvSchema);
// Where the stack has a delta channel, an agent's answer streams to a caller that asks for progress (under a lease
// of the workspace's share of streams).
const subscribe = channelSubscriberFromEnv(streamLeasesFor(env[ENV.tableName]));
const peer = new AsyncLocalStorage<string>();
const served = protocolServerHandler('crumbs-mcp', env, (deps) =>
  createMcpHttp({
    ...deps,
    viaLoopback: () => isLoopback(peer.getStore()),
    ...(env[ENV.jwtIssuer] ? { issuer: env[ENV.jwtIssuer] } : {}),
    ...(subscribe !== undefined ? { subscribe } : {}),
  }),
);

export const handler = (event: HttpEvent, context: Context) =>
  peer.run(event.requestContext.http.sourceIp, () => served(event, context));

function isLoopback(address: string | undefined): boolean {
  if (address === undefined || !ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}
