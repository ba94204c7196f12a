import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeltaStream } from '#shared/core/streaming/delta-stream.ts';
import { type DeltaEvent, parseDeltaEvent } from '#shared/core/streaming/events.ts';
import type { DeltaChannel, TimerClock } from '#shared/ports/delta-channel.ts';

class FakeClock implements TimerClock {
  time = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private next = 0;
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    this.next += 1;
    this.timers.push({ at: this.time + ms, fn, id: this.next });
    return this.next;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const due = this.timers[0];
      if (!due || due.at > end) break;
      this.timers.shift();
      this.time = due.at;
      due.fn();
      await flushPromises();
    }
    this.time = end;
    await flushPromises();
  }
}

async function flushPromises(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
}

class RecordingChannel implements DeltaChannel {
  requests: { channel: string; events: DeltaEvent[]; at: number }[] = [];
  failNext = 0;
  constructor(private readonly clock: FakeClock) {}
  async publish(channel: string, events: readonly string[]): Promise<void> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      this.requests.push({ channel, events: [], at: this.clock.now() });
      throw new Error('throttled');
    }
    this.requests.push({
      channel,
      events: events.map((e) => parseDeltaEvent(e) as DeltaEvent),
      at: this.clock.now(),
    });
  }
  get events(): DeltaEvent[] {
    return this.requests.flatMap((r) => r.events);
  }
}

/** What a subscriber shows after applying the events in order. */
function shown(events: readonly DeltaEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type === 'delta') text += e.text;
    if (e.type === 'reset') text = '';
  }
  return text;
}

function setup(limits = {}) {
  const clock = new FakeClock();
  const channel = new RecordingChannel(clock);
  const stream = new DeltaStream({ channel: '/crumbs/wa/x', publisher: channel, clock, limits });
  return { clock, channel, stream };
}

describe('DeltaStream', () => {
  it('publishes the first text at once, then coalesces on a growing interval', async () => {
    const { clock, channel, stream } = setup();
    stream.write('Hel');
    await flushPromises();
    expect(channel.events).toEqual([{ type: 'delta', segment: 0, seq: 1, text: 'Hel' }]);
    for (let t = 0; t < 100; t += 1) {
      stream.write('x');
      await clock.advance(20); // 50 tokens a second for 2 s
    }
    const stats = await stream.final('completed', 'ans-1');
    const at = channel.requests.map((r) => r.at);
    expect(at.slice(0, 4)).toEqual([0, 250, 750, 1750]);
    expect(channel.events.at(-1)).toEqual({
      type: 'final',
      segment: 0,
      seq: channel.events.length,
      status: 'completed',
      answer_id: 'ans-1',
    });
    expect(channel.events.map((e) => e.seq)).toEqual(channel.events.map((_, i) => i + 1));
    expect(shown(channel.events)).toBe(`Hel${'x'.repeat(100)}`);
    expect(stats).toMatchObject({ events: channel.events.length, failures: 0, capped: false });
  });

  it('holds text past the cap and sends it with the final, which always goes out', async () => {
    const { clock, channel, stream } = setup({ maxEvents: 3, maxIntervalMs: 250, growth: 1 });
    for (let t = 0; t < 200; t += 1) {
      stream.write(`${t} `);
      await clock.advance(20);
    }
    // While the model writes, one event fewer than the cap: the last is kept for the held text.
    const before = channel.events.length;
    expect(before).toBe(2);
    const stats = await stream.final('completed', 'ans-2');
    expect(stats.capped).toBe(true);
    expect(channel.events.map((e) => e.type)).toEqual(['delta', 'delta', 'delta', 'final']);
    expect(channel.requests).toHaveLength(3); // the held delta and the final share one request
    expect(shown(channel.events)).toBe(Array.from({ length: 200 }, (_, t) => `${t} `).join(''));
  });

  it('sends at most maxEvents events before the final, whatever the writes, resets, failures and timing', async () => {
    const step = fc.oneof(
      fc.record({ write: fc.string({ minLength: 1, maxLength: 12 }) }),
      fc.record({ reset: fc.constant(true) }),
      fc.record({ fail: fc.integer({ min: 1, max: 2 }) }),
      fc.record({ wait: fc.integer({ min: 0, max: 3000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 14 }),
        fc.integer({ min: 1, max: 40 }),
        fc.array(step, { maxLength: 120 }),
        async (maxEvents, maxEventChars, steps) => {
          const { clock, channel, stream } = setup({ maxEvents, maxEventChars });
          let text = '';
          for (const s of steps) {
            if ('write' in s) {
              stream.write(s.write);
              text += s.write;
            } else if ('reset' in s) {
              stream.reset('again');
              text = '';
            } else if ('fail' in s) channel.failNext = s.fail;
            else await clock.advance(s.wait);
          }
          channel.failNext = 0;
          const stats = await stream.final('completed', 'a');
          // Every event sent, and every one a failed request carried (`seq` counts them all), is within the cap.
          const sent = channel.events.filter((e) => e.type !== 'final');
          expect(sent.length).toBeLessThanOrEqual(maxEvents);
          expect((channel.events.at(-1)?.seq ?? 1) - 1).toBeLessThanOrEqual(maxEvents);
          expect(channel.events.at(-1)?.type).toBe('final');
          expect(channel.events.filter((e) => e.type === 'final')).toHaveLength(1);
          // Uncapped and unfailed, the subscriber shows the whole answer (else the final's stored answer does).
          if (!stats.capped && stats.failures === 0) expect(shown(channel.events)).toBe(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('sends a reset in seq order and the subscriber drops the text so far', async () => {
    const { clock, channel, stream } = setup();
    stream.write('partial answ');
    await clock.advance(300);
    stream.reset('the model call is retried');
    stream.write('Full answer');
    await clock.advance(2000);
    await stream.final('completed', 'a');
    expect(channel.events.map((e) => e.type)).toEqual(['delta', 'reset', 'delta', 'final']);
    expect(shown(channel.events)).toBe('Full answer');
  });

  it('never throws into the writer: a failed publish is counted and the next one starts subscribers over', async () => {
    const { clock, channel, stream } = setup();
    channel.failNext = 1;
    stream.write('one ');
    await clock.advance(10);
    stream.write('two ');
    await clock.advance(300);
    stream.write('three');
    const stats = await stream.final('completed', 'a');
    expect(stats.failures).toBe(1);
    const events = channel.events;
    expect(events[0]).toMatchObject({ type: 'reset', segment: 0, seq: 2 });
    expect(shown(events)).toBe('one two three');
    expect(events.at(-1)).toMatchObject({ type: 'final' });
  });

  it('resolves final even when every publish fails', async () => {
    const { channel, stream } = setup();
    channel.failNext = 100;
    stream.write('lost');
    const stats = await stream.final('failed');
    expect(stats).toMatchObject({ events: 0, failures: 2 });
  });

  it('splits text longer than an event holds without breaking a surrogate pair', async () => {
    const { channel, stream } = setup({ maxEventChars: 4 });
    stream.write('ab😀cd😀');
    await stream.final('completed', 'a');
    const deltas = channel.events.filter((e) => e.type === 'delta');
    for (const d of deltas) expect(d.text).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/);
    expect(shown(channel.events)).toBe('ab😀cd😀');
  });

  it('puts at most 5 events in one request', async () => {
    const { channel, stream } = setup({ maxEventChars: 1 });
    stream.write('abcdefghijkl');
    await stream.final('completed', 'a');
    for (const r of channel.requests) expect(r.events.length).toBeLessThanOrEqual(5);
    expect(shown(channel.events)).toBe('abcdefghijkl');
  });
});

describe('DeltaStream.final', () => {
  it('returns after finalWaitMs when a publish hangs, so the answer is not held', async () => {
    const clock = new FakeClock();
    const hanging: DeltaChannel = { publish: () => new Promise(() => undefined) };
    const stream = new DeltaStream({
      channel: '/crumbs/wa/x',
      publisher: hanging,
      clock,
      limits: { finalWaitMs: 100 },
    });
    stream.write('text');
    const final = stream.final('completed', 'a');
    await clock.advance(100);
    expect(await final).toMatchObject({ events: 0, requests: 1 });
  });
});
