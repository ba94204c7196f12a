/**
 * The API's part in streamed answers, from the environment: where the channel is (`GET …/streams/{id}`), and —
 * where the server in front of the handler sends a body as it is produced (`crumbs dev`) — the stream as
 * server-sent events, subscribed to the channel with the caller's own token so its subscribe check applies.
 */
import { ENV } from '#shared/topology.ts';
import { channelFor } from '../streaming/channel.ts';
import { streamingEndpoints } from '../streaming/endpoints.ts';
import { sseFromChannel } from '../streaming/sse.ts';
import type { StreamingDeps } from './request-routes.ts';

/** How long one SSE response may last: past it the client reads the stored answer. */
const SSE_MAX_MS = 10 * 60_000;

export function apiStreamingFromEnv(env: NodeJS.ProcessEnv = process.env): StreamingDeps | undefined {
  const endpoints = streamingEndpoints(env);
  if (endpoints === undefined) return undefined;
  if (env[ENV.streamResponses] !== '1') return { endpoints, channelFor };
  return {
    endpoints,
    channelFor,
    events: async (workspace, streamId, authorization) => {
      // Loaded only where responses stream (`crumbs dev`): the api function on AWS never subscribes.
      const [{ subscribeToRequest }, { WebSocket }] = await Promise.all([
        import('#shared/client/delta-subscriber.ts'),
        import('ws'),
      ]);
      const result = await sseFromChannel(
        (onEvent) =>
          subscribeToRequest({
            realtimeUrl: endpoints.realtime_url,
            httpHost: endpoints.http_host,
            token: authorization.replace(/^Bearer\s+/i, ''),
            workspace,
            requestId: streamId,
            onEvent,
            webSocket: WebSocket as never,
          }),
        { maxDurationMs: SSE_MAX_MS },
      );
      return result;
    },
  };
}
