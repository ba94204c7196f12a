/**
 * A streaming request's model output as A2A artifact chunks: the channel's events (`shared/core/streaming/`)
 * turned into `Delta`s — text appended, and after a `reset` (a model call started over, a tool round) the next
 * chunk replaces the artifact's text — ending at the final event. Subscribed with the caller's own token before
 * the request is written, so nothing is missed and the channel's subscribe check applies to the caller.
 */
import type { DeltaEvent } from '../streaming/events.ts';
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
  const queue: Delta[] = [];
  let ended = false;
  let replace = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const subscription = await subscribe(streamId, (event) => {
    if (event.type === 'delta') {
      queue.push({ text: event.text, ...(replace ? { replace: true } : {}) });
      replace = false;
    } else if (event.type === 'reset') replace = true;
    else ended = true;
    notify();
  });
  void subscription.done.then(() => {
    ended = true;
    notify();
  });
  const close = () => {
    ended = true;
    subscription.close();
    notify();
  };
  // A plain iterator: `return()` must end a pending wait at once when the stream ends.
  const chunks: AsyncIterator<Delta> & AsyncIterable<Delta> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      for (;;) {
        const next = queue.shift();
        if (next !== undefined) return { value: next, done: false };
        if (ended) return { value: undefined, done: true };
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
    async return() {
      close();
      return { value: undefined, done: true };
    },
  };
  return { streamId, chunks, close };
}
