/**
 * The HTTP side of streamed answers, from the environment: where the channel is (`GET …/streams/{id}`), a
 * subscriber that subscribes as the caller (the caller's own token, so the channel's subscribe check applies to
 * it as to any client: the API's SSE route, A2A's `SendStreamingMessage`), and the API's server-sent events, which the
 * front door streams on AWS as `crumbs dev` does (`functions/wiring/http-handler.ts`).
 */
import { FRONT_DOOR } from '#shared/topology.ts';
import { channelFor } from '../streaming/channel.ts';
import { type StreamingEndpoints, streamingEndpoints } from '../streaming/endpoints.ts';
import type { DeltaEvent } from '../streaming/events.ts';
import { sseFromChannel } from '../streaming/sse.ts';
import type { StreamingDeps } from './request-routes.ts';

/** How long one SSE response may last: past it the client subscribes again or reads the stored answer. */
const SSE_MAX_MS = FRONT_DOOR.streamCapSeconds * 1000;

/** Subscribes to a stream as the caller whose `Authorization` header is given; resolves once subscribed. */
export type ChannelSubscribe = (
  workspace: string,
  streamId: string,
  authorization: string,
  onEvent: (event: DeltaEvent) => void,
) => Promise<{ close(): void; readonly done: Promise<unknown> }>;

/** The subscriber of this stack's channel; undefined when it has none. */
export function channelSubscriberFromEnv(env: NodeJS.ProcessEnv = process.env): ChannelSubscribe | undefined {
  const endpoints = streamingEndpoints(env);
  return endpoints === undefined ? undefined : channelSubscriber(endpoints);
}

function channelSubscriber(endpoints: StreamingEndpoints): ChannelSubscribe {
  return async (workspace, streamId, authorization, onEvent) => {
    // Loaded on first use: a function that never subscribes never loads the WebSocket client.
    const [{ subscribeToRequest }, { WebSocket }] = await Promise.all([
      import('#shared/core/streaming/subscriber.ts'),
      import('ws'),
    ]);
    return subscribeToRequest({
      realtimeUrl: endpoints.realtime_url,
      httpHost: endpoints.http_host,
      token: authorization.replace(/^Bearer\s+/i, ''),
      workspace,
      requestId: streamId,
      onEvent,
      webSocket: WebSocket as never,
    });
  };
}

export function apiStreamingFromEnv(env: NodeJS.ProcessEnv = process.env): StreamingDeps | undefined {
  const endpoints = streamingEndpoints(env);
  if (endpoints === undefined) return undefined;
  const subscribe = channelSubscriber(endpoints);
  return {
    endpoints,
    channelFor,
    events: (workspace, streamId, authorization) =>
      sseFromChannel((onEvent) => subscribe(workspace, streamId, authorization, onEvent), {
        maxDurationMs: SSE_MAX_MS,
      }),
  };
}
