/**
 * A streaming request's model output as A2A artifact chunks: the channel's events (`shared/core/streaming/`)
 * turned into `Delta`s — text appended, and after a `reset` (a model call started over, a tool round) the next
 * chunk replaces the artifact's text — ending at the final event. Subscribed with the caller's own token before
 * the request is written, so nothing is missed and the channel's subscribe check applies to the caller.
 */
import type { DeltaEvent } from '../streaming/events.ts';
import { pushQueue } from '../streaming/push-queue.ts';
import type { Delta } from './stream.ts';

/** Subscribes to a stream with the caller's token (`subscribeToRequest`); resolves once subscribed. */
export type SubscribeDeltas = (
  streamId: string,
  onEvent: (event: DeltaEvent) => void,
) => Promise<{ close(): void; readonly done: Promise<unknown> }>;

export interface LiveDeltas {
  readonly streamId: string;
  readonly chunks: AsyncIterable<Delta>;
  close(): void;
}

export async function liveDeltas(subscribe: SubscribeDeltas, streamId: string): Promise<LiveDeltas> {
  let subscription: Awaited<ReturnType<SubscribeDeltas>> | undefined;
  const queue = pushQueue<Delta>(() => subscription?.close());
  let replace = false;
  subscription = await subscribe(streamId, (event) => {
    if (event.type === 'delta') {
      queue.push({ text: event.text, ...(replace ? { replace: true } : {}) });
      replace = false;
    } else if (event.type === 'reset') replace = true;
    else queue.end();
  });
  void subscription.done.then(() => queue.end());
  return { streamId, chunks: queue.values, close: () => void queue.values.return?.() };
}
