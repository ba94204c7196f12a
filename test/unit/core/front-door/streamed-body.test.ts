/**
 * The body the front door streams: an event stream opens with an SSE comment (the status and headers go out with
 * it), a comment after every idle stretch (only between events), nothing added to a body that is not an event
 * stream, and an end at the deadline that tells the producer to stop.
 */
import { describe, expect, it } from 'vitest';
import { KEEP_ALIVE_COMMENT, streamedBody } from '#shared/core/front-door/streamed-body.ts';
import { pushQueue } from '#shared/core/streaming/push-queue.ts';

async function collect(body: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const chunk of body) out.push(chunk);
  return out;
}

describe('streamedBody', () => {
  it('opens an event stream with a comment and passes chunks on as they come', async () => {
    const q = pushQueue<string>(() => undefined);
    const body = streamedBody(q.values, { keepAliveMs: 60_000, deadline: Date.now() + 60_000 });
    const it = body[Symbol.asyncIterator]();
    expect((await it.next()).value).toBe(KEEP_ALIVE_COMMENT);
    q.push('data: 1\n\n');
    expect((await it.next()).value).toBe('data: 1\n\n');
    q.end();
    expect((await it.next()).done).toBe(true);
  });

  it('sends a comment when idle, but never in the middle of an event', async () => {
    const q = pushQueue<string>(() => undefined);
    const body = streamedBody(q.values, { keepAliveMs: 20, deadline: Date.now() + 60_000 });
    const it = body[Symbol.asyncIterator]();
    await it.next(); // the opening comment
    expect((await it.next()).value).toBe(KEEP_ALIVE_COMMENT);
    q.push('data: half');
    expect((await it.next()).value).toBe('data: half');
    // Idle in the middle of an event: nothing may be inserted; the rest of the event comes next.
    setTimeout(() => q.push(' done\n\n'), 80);
    expect((await it.next()).value).toBe(' done\n\n');
    expect((await it.next()).value).toBe(KEEP_ALIVE_COMMENT);
    await it.return?.(undefined);
  });

  it('adds nothing to a body that is not an event stream', async () => {
    const q = pushQueue<string>(() => undefined);
    q.push('{"a":');
    q.push('1}');
    q.end();
    expect(await collect(streamedBody(q.values, { deadline: Date.now() + 60_000 }))).toEqual(['{"a":', '1}']);
  });

  it('ends at the deadline and tells the producer to stop', async () => {
    let stopped = false;
    const q = pushQueue<string>(() => {
      stopped = true;
    });
    q.push('data: 1\n\n');
    const chunks = await collect(streamedBody(q.values, { keepAliveMs: 10_000, deadline: Date.now() + 50 }));
    expect(chunks).toEqual([KEEP_ALIVE_COMMENT, 'data: 1\n\n']);
    expect(stopped).toBe(true);
  });
});
