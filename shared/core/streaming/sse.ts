/**
 * A request's deltas as server-sent events, for any HTTP client (the front door streams them, on AWS as under
 * `crumbs dev`): `id: <segment>-<seq>`, `event: delta|reset|final`, `data: <json>`,
 * a comment line every 15 s so proxies keep the connection, and the end after the final event. The result's
 * `bodyStream` is what `HttpResult.bodyStream` takes (the API mounts it); the subscription is made before the
 * response starts (a refused one is the caller's 403) and closed when the client leaves.
 */
import type { DeltaEvent } from './events.ts';
import { pushQueue } from './push-queue.ts';

export interface SseSource {
  /** Ends the subscription (the client left). */
  close(): void;
  /** Settles when the subscription ends (after the final event, or without one). */
  readonly done: Promise<unknown>;
}

/** Subscribes, delivering events in seq order to `onEvent` (e.g. `subscribeToRequest` with the caller's token). */
export type SseSubscribe = (onEvent: (event: DeltaEvent) => void) => Promise<SseSource>;

/** The parts of `HttpResult` (shared/core/api/http.ts) an SSE answer sets. */
export interface SseResult {
  statusCode: number;
  headers: Record<string, string>;
  bodyStream: AsyncIterable<string>;
}

export interface SseOptions {
  readonly heartbeatMs?: number;
  /** Ends the stream without a final event after this long (the API's own time limit). Default none. */
  readonly maxDurationMs?: number;
}

/** The SSE frame of one event. */
export function sseFrame(event: DeltaEvent): string {
  return `id: ${event.segment}-${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export async function sseFromChannel(subscribe: SseSubscribe, options: SseOptions = {}): Promise<SseResult> {
  let source: SseSource | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const queue = pushQueue<string>(() => {
    clearInterval(heartbeat);
    if (deadline) clearTimeout(deadline);
    source?.close();
  });
  source = await subscribe((event) => {
    queue.push(sseFrame(event));
    if (event.type === 'final') queue.end();
  });
  void source.done.then(() => queue.end());
  heartbeat = setInterval(() => queue.push(': keep-alive\n\n'), options.heartbeatMs ?? 15_000);
  if (options.maxDurationMs !== undefined) deadline = setTimeout(() => queue.end(), options.maxDurationMs);
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    },
    bodyStream: queue.values,
  };
}
