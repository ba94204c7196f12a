/**
 * Values pushed by a callback (a channel's events) read as an async iterable by whoever sends them on (an SSE body,
 * A2A artifact chunks). A plain iterator, not a generator: its `return()` — the reader leaving — must end a pending
 * wait at once and run `onStop` (unsubscribe, clear timers), which a suspended generator cannot.
 */
export interface PushQueue<T> {
  push(value: T): void;
  /** No more values: the reader gets what is queued, then the end. */
  end(): void;
  readonly values: AsyncIterable<T> & AsyncIterator<T>;
}

export function pushQueue<T>(onStop: () => void): PushQueue<T> {
  const queued: T[] = [];
  let ended = false;
  let stopped = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const stop = () => {
    ended = true;
    if (!stopped) {
      stopped = true;
      onStop();
    }
    notify();
  };
  const values: AsyncIterable<T> & AsyncIterator<T> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next(): Promise<IteratorResult<T>> {
      for (;;) {
        const value = queued.shift();
        if (value !== undefined) return { value, done: false };
        if (ended) {
          stop();
          return { value: undefined, done: true };
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
    async return(): Promise<IteratorResult<T>> {
      queued.length = 0;
      stop();
      return { value: undefined, done: true };
    },
  };
  return {
    push(value) {
      if (ended) return;
      queued.push(value);
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    values,
  };
}
