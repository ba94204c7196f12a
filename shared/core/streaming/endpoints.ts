/**
 * Where a client finds the delta channels: the realtime URL it connects to and the host its connection's
 * authorization names (AppSync's HTTP domain), from the environment the CDK app (or `crumbs dev`) sets. The API
 * puts these in a response so a client needs no configuration of its own.
 */
import { DeltaChannelEnvSchema, parseEnv } from '#shared/config.ts';
import { ENV } from '#shared/topology.ts';

export interface StreamingEndpoints {
  /** `wss://<realtime domain>/event/realtime` (`ws://127.0.0.1:<port>/event/realtime` locally). */
  readonly realtime_url: string;
  /** The `host` a connection's and a subscription's authorization names: the HTTP endpoint's host. */
  readonly http_host: string;
}

/** The endpoints, or undefined when this stack has no delta channel configured. */
export function streamingEndpoints(env: NodeJS.ProcessEnv = process.env): StreamingEndpoints | undefined {
  const parsed = parseEnv(DeltaChannelEnvSchema, env);
  const http = parsed[ENV.eventsHttpUrl];
  const realtime = parsed[ENV.eventsRealtimeUrl];
  if (http === undefined || realtime === undefined) return undefined;
  return { realtime_url: realtime, http_host: new URL(http).host };
}
