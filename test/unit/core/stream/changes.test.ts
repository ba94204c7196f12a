import { describe, expect, it } from 'vitest';
import { parseEventStream } from '#shared/client/sse.ts';
import { readChanges, toEventStream } from '#shared/core/stream/changes.ts';
import type { ChangeEntry, ChangeLog } from '#shared/ports/activity.ts';

/** A change log in memory, with the adapter's cursor format; `visible` decides what a read can already see. */
function memoryLog(entries: ChangeEntry[], visible: (e: ChangeEntry) => boolean = () => true): ChangeLog {
  const sorted = () => entries.filter(visible).sort((a, b) => (a.cursor < b.cursor ? -1 : 1));
  return {
    cursorAt: (time) => `${time.toISOString()}~`,
    checkCursor: (c) => c,
    read: async (_ws, after, until, limit) =>
      sorted()
        .filter((e) => e.cursor > after && e.cursor <= until)
        .slice(0, limit),
    latest: async (_ws, until, limit) =>
      sorted()
        .filter((e) => e.cursor <= until)
        .slice(-limit),
  };
}

function entry(at: string, id: string, extra: Partial<ChangeEntry> = {}): ChangeEntry {
  return {
    id,
    workspace: 'w',
    kind: 'version',
    schema_name: 'note.v1',
    title: '',
    tags: [],
    version: 1,
    created_at: at,
    created_by: 'user:a',
    updated_at: at,
    updated_by: 'user:a',
    cursor: `${at}#${id}#0000000001`,
    ...extra,
  };
}

const clockAt = (iso: string) => ({ now: () => new Date(iso) });

describe('readChanges', () => {
  it('hands out only settled changes, so a write committed late is not passed over', async () => {
    const late = entry('2026-01-01T00:00:09.900Z', 'late');
    const log = memoryLog([entry('2026-01-01T00:00:05.000Z', 'a'), late]);
    const first = await readChanges(log, {
      workspace: 'w',
      cursor: '2026-01-01T00:00:00.000Z~',
      filters: {},
      waitMs: 0,
      settleMs: 500,
      pollMs: 10,
      clock: clockAt('2026-01-01T00:00:10.000Z'),
    });
    expect(first.events.map((e) => e.event.id)).toEqual(['a']);
    // 09.900 is younger than the settle lag at 10.000: the next read, from the returned cursor, still gets it.
    const second = await readChanges(log, {
      workspace: 'w',
      cursor: first.cursor,
      filters: {},
      waitMs: 0,
      settleMs: 500,
      pollMs: 10,
      clock: clockAt('2026-01-01T00:00:11.000Z'),
    });
    expect(second.events.map((e) => e.event.id)).toEqual(['late']);
  });

  it('advances past changes the filters leave out, and flags error answers', async () => {
    const log = memoryLog([
      entry('2026-01-01T00:00:01.000Z', 'x', { schema_name: 'other.v1' }),
      entry('2026-01-01T00:00:02.000Z', 'y', { schema_name: 'tool.response.v1', status: 'error' }),
    ]);
    const batch = await readChanges(log, {
      workspace: 'w',
      cursor: '2026-01-01T00:00:00.000Z~',
      filters: { schema_name: ['tool.response.v1'] },
      waitMs: 0,
      settleMs: 0,
      pollMs: 10,
      clock: clockAt('2026-01-01T00:00:03.000Z'),
    });
    expect(batch.events.map((e) => [e.event.id, e.event.outcome])).toEqual([['y', 'error']]);
    expect(batch.cursor).toBe('2026-01-01T00:00:03.000Z~');
  });

  it('answers as SSE frames a browser resumes from: a retry hint, one id per change, and the final position', () => {
    const text = toEventStream(
      {
        cursor: 'end',
        events: [{ cursor: 'c1', event: { id: 'a' } as never }],
      },
      (c) => c.toUpperCase(),
      250,
    );
    const parsed = parseEventStream(text);
    expect(parsed.retryMs).toBe(250);
    expect(parsed.messages.map((m) => [m.id, JSON.parse(m.data).id])).toEqual([['C1', 'a']]);
    expect(parsed.lastEventId).toBe('END');
  });
});
