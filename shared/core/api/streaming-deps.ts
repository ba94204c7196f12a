/**
 * The HTTP side of streamed answers, from the environment: where the channel is (`GET …/streams/{id}`), a
 * subscriber that subscribes as the caller (the caller's own token, so the channel's subscribe check applies to
 * it as to any client: the API's SSE route, A2A's `SendStreamingMessage`, MCP's progress), and the API's
 * server-sent events, which the front door streams on AWS as `crumbs dev` does (`functions/wiring/http-handler.ts`).
 *
 * Every stream crumbs holds for a caller first takes a lease (`stream-leases.ts`: the workspace's and the token's
 * share), given back when the subscription ends. A subscription the channel refuses is the caller's answer, never
 * a 500: over a share (ours or the service's) 429 with `Retry-After`, a token that may not read the channel 403,
 * the service unreachable 503.
 */
import {
  ForbiddenError,
  isCrumbsError,
  RetriableError,
  TooManyRequestsError,
} from '#shared/domain/errors.ts';
import { FRONT_DOOR } from '#shared/topology.ts';
import { channelFor } from '../streaming/channel.ts';
import { ChannelSubscribeError } from '../streaming/channel-socket.ts';
import { type StreamingEndpoints, streamingEndpoints } from '../streaming/endpoints.ts';
import type { DeltaEvent } from '../streaming/events.ts';
import { sseFromChannel } from '../streaming/sse.ts';
import type { StreamLeases } from '../streaming/stream-leases.ts';
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

/** The subscriber of this stack's channel (each stream under a lease); undefined when it has none. */
export function channelSubscriberFromEnv(
  leases: StreamLeases,
  env: NodeJS.ProcessEnv = process.env,
): ChannelSubscribe | undefined {
  const endpoints = streamingEndpoints(env);
  return endpoints === undefined ? undefined : channelSubscriber(endpoints, leases);
}

export function channelSubscriber(endpoints: StreamingEndpoints, leases: StreamLeases): ChannelSubscribe {
  return async (workspace, streamId, authorization, onEvent) => {
    const release = await leases.take(workspace, authorization);
    try {
      // Loaded on first use: a function that never subscribes never loads the WebSocket client.
      const [{ subscribeToRequest }, { WebSocket }] = await Promise.all([
        import('#shared/core/streaming/subscriber.ts'),
        import('ws'),
      ]);
      const subscription = await subscribeToRequest({
        realtimeUrl: endpoints.realtime_url,
        httpHost: endpoints.http_host,
        token: authorization.replace(/^Bearer\s+/i, ''),
        workspace,
        requestId: streamId,
        onEvent,
        webSocket: WebSocket as never,
      });
      void subscription.done.then(release);
      return subscription;
    } catch (error) {
      await release();
      throw refusal(error);
    }
  };
}

/** A subscription that could not be made, as the caller's answer. */
function refusal(error: unknown): unknown {
  if (isCrumbsError(error) || !(error instanceof ChannelSubscribeError)) return error;
  if (error.limited) {
    return new TooManyRequestsError(
      `the stream's channel is at its share of connections or subscriptions; try again in ${RETRY_AFTER_SECONDS} s`,
      RETRY_AFTER_SECONDS,
      { cause: error },
    );
  }
  if (error.unauthorized) {
    return new ForbiddenError('this token may not read the stream’s channel', { cause: error });
  }
  return new RetriableError(`the stream's channel cannot be reached: ${error.message}`, { cause: error });
}
const RETRY_AFTER_SECONDS = 10;

export function apiStreamingFromEnv(
  leases: StreamLeases,
  env: NodeJS.ProcessEnv = process.env,
): StreamingDeps | undefined {
  const endpoints = streamingEndpoints(env);
  if (endpoints === undefined) return undefined;
  const subscribe = channelSubscriber(endpoints, leases);
  return {
    endpoints,
    channelFor,
    events: (workspace, streamId, authorization) =>
      sseFromChannel((onEvent) => subscribe(workspace, streamId, authorization, onEvent), {
        maxDurationMs: SSE_MAX_MS,
      }),
  };
}
