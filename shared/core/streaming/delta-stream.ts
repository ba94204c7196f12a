/**
 * One streamed answer's deltas, coalesced (`docs/streaming.md` has the figures): every publish is billed, so text is
 * gathered and sent as one `delta` event at most once per interval — the first as soon as there is text (time to
 * first token stays the model's), then after 250 ms, the interval doubling up to 2 s — and at most `maxEvents`
 * events before the final, all told: while the model writes, one fewer, so that the last is kept for the text held
 * past the cap, which goes out with the final (the final is always sent). Text that still does not fit (a publish
 * lost at the very end, a held text longer than the events left hold) is left to the stored answer the final names,
 * which clients show at the end; `capped` says so. Events
 * go out one publish request at a time (at most 5 events each), in `seq` order. Publishing never throws into the
 * model call: a failed publish is logged and counted, and the next publish starts with a `reset` and the whole
 * text so far, so a subscriber that lost a delta is whole again.
 */
import {
  type DeltaChannel,
  MAX_EVENTS_PER_PUBLISH,
  systemTimerClock,
  type TimerClock,
} from '#shared/ports/delta-channel.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { DeltaEvent, FinalStatus } from './events.ts';

export interface DeltaStreamLimits {
  /** The wait after the first publish before the second. */
  readonly firstIntervalMs: number;
  /** Each interval is the previous one times this, up to `maxIntervalMs`. */
  readonly growth: number;
  readonly maxIntervalMs: number;
  /** Delta and reset events per answer before the final, held text included (the final always goes out). */
  readonly maxEvents: number;
  /** Text per event: AppSync takes events up to 240 KB; 32,768 UTF-16 units stay under it even fully escaped. */
  readonly maxEventChars: number;
  /** How long `final` waits for the answer's publishes before it returns (the model call's end is not held longer). */
  readonly finalWaitMs: number;
}

export const DEFAULT_DELTA_LIMITS: DeltaStreamLimits = {
  firstIntervalMs: 250,
  growth: 2,
  maxIntervalMs: 2000,
  maxEvents: 12,
  maxEventChars: 32_768,
  finalWaitMs: 5000,
};

export interface DeltaStreamStats {
  /** Events published (accepted by the channel), the final included. */
  readonly events: number;
  /** Publish requests made (each up to 5 events), failed ones included. */
  readonly requests: number;
  readonly failures: number;
  /** Whether the cap held text back until the final. */
  readonly capped: boolean;
}

export interface DeltaStreamOptions {
  readonly channel: string;
  /** This part of the answer's segment (`events.ts`). @default the clock's now */
  readonly segment?: number;
  readonly publisher: DeltaChannel;
  readonly clock?: TimerClock;
  readonly limits?: Partial<DeltaStreamLimits>;
  readonly log?: Log;
}

export class DeltaStream {
  private readonly limits: DeltaStreamLimits;
  private readonly clock: TimerClock;
  private readonly log: Log;
  /** Every text written since the last reset (what a `reset` after a lost publish resends). */
  private text = '';
  /** Text not yet put into an event. */
  private pending = '';
  private seq = 0;
  private queue: DeltaEvent[] = [];
  private published = 0;
  private eventsBeforeFinal = 0;
  private requests = 0;
  private failures = 0;
  private lost = false;
  private capped = false;
  private finished = false;
  private interval: number;
  private lastFlushAt: number | undefined;
  private timer: unknown;
  private sending: Promise<void> | undefined;

  constructor(private readonly options: DeltaStreamOptions) {
    this.limits = { ...DEFAULT_DELTA_LIMITS, ...options.limits };
    this.clock = options.clock ?? systemTimerClock;
    this.log = options.log ?? silentLog;
    this.interval = this.limits.firstIntervalMs;
    this.segment = options.segment ?? this.clock.now();
  }

  private readonly segment: number;

  /** Appends model output; published coalesced. */
  write(text: string): void {
    if (this.finished || text === '') return;
    this.text += text;
    this.pending += text;
    this.schedule();
  }

  /** Drops the text so far (the model call starts over); subscribers drop theirs. */
  reset(reason: string): void {
    if (this.finished) return;
    this.text = '';
    this.pending = '';
    if (this.room(false) <= 0) {
      // Past the cap: the final starts subscribers over (a reset, then the text written since).
      this.lost = true;
      return;
    }
    this.enqueue({ type: 'reset', segment: 0, seq: 0, reason });
    this.kick();
  }

  /**
   * Sends held text and the final event, and waits for every publish of the answer to end. Never rejects: a
   * subscriber that missed the end reads the answer breadcrumb.
   */
  async final(status: FinalStatus, answerId?: string): Promise<DeltaStreamStats> {
    return this.end({ status, answerId });
  }

  /**
   * Ends this part of the answer without a final event (an invocation that ends in a tool round: the next part is
   * the next invocation's segment): sends what is held and waits for the publishes, as `final` does.
   */
  async close(): Promise<DeltaStreamStats> {
    return this.end(undefined);
  }

  private async end(last: { status: FinalStatus; answerId: string | undefined } | undefined) {
    if (!this.finished) {
      this.finished = true;
      if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
      this.timer = undefined;
      this.takePending(true);
      if (last !== undefined) {
        this.enqueue({
          type: 'final',
          segment: 0,
          seq: 0,
          status: last.status,
          ...(last.answerId !== undefined ? { answer_id: last.answerId } : {}),
        });
      }
      this.kick();
    }
    let timer: unknown;
    const waited = new Promise<'late'>((resolve) => {
      timer = this.clock.setTimeout(() => resolve('late'), this.limits.finalWaitMs);
    });
    while (this.sending) {
      if ((await Promise.race([this.sending.then(() => 'sent' as const), waited])) === 'late') {
        this.log.warn('delta publishes still under way at the end of the answer', {
          channel: this.options.channel,
          queued: this.queue.length,
        });
        break;
      }
    }
    this.clock.clearTimeout(timer);
    return this.stats();
  }

  stats(): DeltaStreamStats {
    return {
      events: this.published,
      requests: this.requests,
      failures: this.failures,
      capped: this.capped,
    };
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    if (this.room(false) <= 0) {
      this.capped = true;
      return;
    }
    const now = this.clock.now();
    const due = this.lastFlushAt === undefined ? now : this.lastFlushAt + this.interval;
    if (due <= now) {
      this.flush();
      return;
    }
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, due - now);
  }

  private flush(): void {
    if (this.finished || this.pending === '') return;
    if (this.lastFlushAt !== undefined) {
      this.interval = Math.min(this.interval * this.limits.growth, this.limits.maxIntervalMs);
    }
    this.lastFlushAt = this.clock.now();
    this.takePending(false);
    this.kick();
  }

  /**
   * Delta and reset events this answer may still send: up to `maxEvents` in all, one of them kept back while the
   * model writes, for the text held past the cap that goes out with the final.
   */
  private room(final: boolean): number {
    return (final ? this.limits.maxEvents : this.limits.maxEvents - 1) - this.eventsBeforeFinal;
  }

  /**
   * Moves pending text into delta events (one, unless it is longer than an event holds), as many as there is room
   * for: the rest stays held (or, at the end, is left to the stored answer).
   */
  private takePending(final: boolean): void {
    if (this.lost && this.room(final) > 0) {
      // A publish failed: start subscribers over with everything written since the last reset.
      this.lost = false;
      this.enqueue({ type: 'reset', segment: 0, seq: 0, reason: 'resent: the text so far follows' });
      this.pending = this.text;
    }
    let rest = this.pending;
    this.pending = '';
    while (rest !== '') {
      if (this.lost || this.room(final) <= 0) {
        this.capped = true;
        if (!final) this.pending = rest;
        return;
      }
      let cut = Math.min(rest.length, this.limits.maxEventChars);
      // Never split a surrogate pair between two events.
      const code = rest.charCodeAt(cut - 1);
      if (cut < rest.length && code >= 0xd800 && code <= 0xdbff) cut -= 1;
      this.enqueue({ type: 'delta', segment: 0, seq: 0, text: rest.slice(0, cut) });
      rest = rest.slice(cut);
    }
  }

  private enqueue(event: DeltaEvent): void {
    this.seq += 1;
    this.queue.push({ ...event, segment: this.segment, seq: this.seq });
    if (event.type !== 'final') this.eventsBeforeFinal += 1;
  }

  /** Starts the sender if it is idle; it sends the queue in order, one request at a time. */
  private kick(): void {
    if (this.sending || this.queue.length === 0) return;
    this.sending = this.drain().finally(() => {
      this.sending = undefined;
      if (this.queue.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_EVENTS_PER_PUBLISH);
      this.requests += 1;
      try {
        await this.options.publisher.publish(
          this.options.channel,
          batch.map((e) => JSON.stringify(e)),
        );
        this.published += batch.length;
      } catch (error) {
        this.failures += 1;
        if (batch.some((e) => e.type !== 'final')) this.lost = true;
        this.log.warn('delta publish failed', {
          channel: this.options.channel,
          events: batch.length,
          first_seq: batch[0]?.seq,
          error: (error as Error).message,
        });
      }
    }
  }
}
