/**
 * What streaming an answer costs on AWS: typical answers (50, 300 and 1,000 tokens at 50 tokens a second, 4
 * characters a token) go through DeltaStream with a fake clock and a counting channel, so the numbers are the
 * coalescing's, not this machine's. Per answer it prints events and publish requests, and the AppSync Events price
 * per 1,000 streamed answers with one subscriber (events in + events out, 5 KB increments, a connect and a
 * subscribe, the connection's minutes), beside what publishing every 50 ms would cost and beside an agent turn.
 *
 *   node bin/run-ts.js bench/streaming-cost.bench.ts [--subscribers 1] [--rate 50]
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_DELTA_LIMITS,
  DeltaStream,
  type DeltaStreamLimits,
} from '#shared/core/streaming/delta-stream.ts';
import type { DeltaChannel, TimerClock } from '#shared/ports/delta-channel.ts';
import { PRICES } from './support/prices.ts';

const { values } = parseArgs({
  options: { subscribers: { type: 'string', default: '1' }, rate: { type: 'string', default: '50' } },
});
const SUBSCRIBERS = Number(values.subscribers);
const TOKENS_PER_SECOND = Number(values.rate);
const CHARS_PER_TOKEN = 4;

class FakeClock implements TimerClock {
  time = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private next = 0;
  now = () => this.time;
  setTimeout = (fn: () => void, ms: number): unknown => {
    this.next += 1;
    this.timers.push({ at: this.time + ms, fn, id: this.next });
    return this.next;
  };
  clearTimeout = (handle: unknown): void => {
    this.timers = this.timers.filter((t) => t.id !== handle);
  };
  async advanceTo(end: number): Promise<void> {
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const due = this.timers[0];
      if (!due || due.at > end) break;
      this.timers.shift();
      this.time = due.at;
      due.fn();
      await Promise.resolve();
    }
    this.time = end;
  }
}

class CountingChannel implements DeltaChannel {
  requests = 0;
  events: string[] = [];
  async publish(_channel: string, events: readonly string[]): Promise<void> {
    this.requests += 1;
    this.events.push(...events);
  }
}

async function streamAnswer(tokens: number, limits: Partial<DeltaStreamLimits>) {
  const clock = new FakeClock();
  const channel = new CountingChannel();
  const stream = new DeltaStream({ channel: '/crumbs/wbench/0', publisher: channel, clock, limits });
  const gap = 1000 / TOKENS_PER_SECOND;
  for (let t = 0; t < tokens; t += 1) {
    await clock.advanceTo(t * gap);
    stream.write(`${'word'.slice(0, CHARS_PER_TOKEN - 1)} `);
  }
  await clock.advanceTo(tokens * gap);
  const stats = await stream.final('completed', '01JANSWER0000000000000000');
  const metered = channel.events.reduce(
    (n, e) => n + Math.max(1, Math.ceil(Buffer.byteLength(e) / PRICES.appsyncEvents.meteredBytes)),
    0,
  );
  const seconds = (tokens * gap) / 1000;
  // In: every event published; out: every event to every subscriber; plus a connect and a subscribe each.
  const operations = metered * (1 + SUBSCRIBERS) + 2 * SUBSCRIBERS;
  const connectionMinutes = SUBSCRIBERS * Math.max(1, Math.ceil((seconds + 1) / 60));
  const dollars =
    operations * PRICES.appsyncEvents.operation + connectionMinutes * PRICES.appsyncEvents.connectionMinute;
  return {
    events: stats.events,
    requests: channel.requests,
    capped: stats.capped,
    seconds,
    operations,
    dollars,
  };
}

/** The agent turn's cost per million as `bench:cost` last printed it (the target: at most $60). */
const AGENT_TURN_PER_MILLION = 56.64;
console.log(
  `AppSync Events, ${PRICES.region}, recorded ${PRICES.recorded}: $${PRICES.appsyncEvents.operation * 1e6} per million ` +
    `operations, $${PRICES.appsyncEvents.connectionMinute * 1e6} per million connection minutes (${PRICES.appsyncEvents.source})`,
);
console.log(
  `coalescing: first delta at once, then ${DEFAULT_DELTA_LIMITS.firstIntervalMs} ms growing x${DEFAULT_DELTA_LIMITS.growth} ` +
    `to ${DEFAULT_DELTA_LIMITS.maxIntervalMs} ms, at most ${DEFAULT_DELTA_LIMITS.maxEvents} events before the final; ` +
    `${TOKENS_PER_SECOND} tokens/s, ${SUBSCRIBERS} subscriber(s)`,
);
console.log('');
console.log(
  'answer        seconds  events  requests  capped  operations  $ per 1,000 answers  every 50 ms: events, $/1,000',
);
for (const tokens of [50, 300, 1000]) {
  const coalesced = await streamAnswer(tokens, {});
  const naive = await streamAnswer(tokens, {
    firstIntervalMs: 50,
    growth: 1,
    maxIntervalMs: 50,
    maxEvents: Number.MAX_SAFE_INTEGER,
  });
  console.log(
    [
      `${tokens} tokens`.padEnd(12),
      coalesced.seconds.toFixed(1).padStart(8),
      String(coalesced.events).padStart(7),
      String(coalesced.requests).padStart(9),
      String(coalesced.capped).padStart(7),
      String(coalesced.operations).padStart(11),
      `$${(coalesced.dollars * 1000).toFixed(4)}`.padStart(21),
      `${naive.events}, $${(naive.dollars * 1000).toFixed(4)}`.padStart(28),
    ].join(' '),
  );
}
console.log('');
console.log(
  `for scale: an agent turn costs $${AGENT_TURN_PER_MILLION} per million on AWS without the model (npm run bench:cost, ` +
    'last recorded figure), i.e. ' +
    `$${(AGENT_TURN_PER_MILLION / 1000).toFixed(4)} per 1,000; the model call itself costs far more than either.`,
);
