/**
 * Publishing to a channel: a request's delta channel (`shared/core/streaming/`) or a workspace's change channel
 * (`shared/core/stream/change-feed.ts`). AppSync Events' HTTP publish on AWS, the local events server in
 * `crumbs dev` — one adapter speaks to both (`shared/adapters/events/`).
 */

/** AppSync Events takes at most this many events in one publish request. */
export const MAX_EVENTS_PER_PUBLISH = 5;

export interface DeltaChannel {
  /**
   * Publishes events (JSON texts, at most `MAX_EVENTS_PER_PUBLISH`) to `channel` (`/crumbs/...`, `/changes/...`),
   * in order.
   * Rejects when the service did not take every one of them.
   */
  publish(channel: string, events: readonly string[]): Promise<void>;
}

/** Time as the coalescing sees it; tests and benchmarks drive a fake one. */
export interface TimerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimerClock: TimerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
