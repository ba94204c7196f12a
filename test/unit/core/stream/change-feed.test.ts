import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { gsi, headItem, tombstoneItem, versionItem } from '#shared/adapters/dynamodb/items.ts';
import type { BreadthBudget } from '#shared/core/stream/breadth-budget.ts';
import type { WorkspaceChange } from '#shared/core/stream/change-feed.ts';
import type { ChangeEvent } from '#shared/core/stream/changes.ts';
import { encodeCursor } from '#shared/core/stream/changes.ts';
import {
  changeKey,
  changeMatches,
  FEED_EVENT_TARGET_BYTES,
  type FeedChange,
  feedEvents,
  parseFeedEvent,
} from '#shared/core/stream/feed-events.ts';
import { publishStreamBatch } from '#shared/core/stream/publisher.ts';
import { ChannelChangeFeed } from '#shared/core/streaming/change-channels.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { DeltaChannel } from '#shared/ports/delta-channel.ts';
import type { BusEntry, EventBus } from '#shared/ports/event-bus.ts';

const record = (overrides: Partial<Breadcrumb> = {}): Breadcrumb => ({
  id: 'b1',
  workspace: 'ws',
  schema_name: 'note.text.v1',
  title: 't',
  tags: ['a.b'],
  context: { text: 'hi', secret: 'hidden by llm_hints' },
  llm_hints: { exclude: ['secret'] },
  version: 1,
  checksum: 'c',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  created_by: 'user:x',
  updated_by: 'user:x',
  ...overrides,
});

let sequence = 100;
function streamRecord(
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  images: { newImage?: Record<string, unknown>; oldImage?: Record<string, unknown> },
): DynamoDBRecord {
  sequence++;
  return {
    eventName,
    dynamodb: {
      SequenceNumber: String(sequence),
      ...(images.newImage
        ? { NewImage: marshall(images.newImage, { removeUndefinedValues: true }) as never }
        : {}),
      ...(images.oldImage
        ? { OldImage: marshall(images.oldImage, { removeUndefinedValues: true }) as never }
        : {}),
    },
  };
}

function change(i: number, extra: Partial<ChangeEvent> = {}): FeedChange {
  return {
    cursor: encodeCursor(`2026-01-01T00:00:00.${String(i).padStart(3, '0')}Z#b${i}#0000000001`),
    event: {
      type: 'created',
      id: `b${i}`,
      version: 1,
      schema_name: 'note.text.v1',
      title: `note ${i}`,
      tags: ['a', 'b'],
      created_by: 'user:x',
      updated_by: 'user:x',
      updated_at: '2026-01-01T00:00:00.000Z',
      causation: null,
      status: null,
      outcome: 'ok',
      ...extra,
    },
  };
}

/** A channel that records each publish, and can fail or hang. */
function recordingChannel(behaviour: (channel: string) => 'ok' | 'fail' | 'hang' = () => 'ok') {
  const publishes: { channel: string; events: string[] }[] = [];
  const channel: DeltaChannel = {
    async publish(path, events) {
      publishes.push({ channel: path, events: [...events] });
      const how = behaviour(path);
      if (how === 'fail') throw new Error('refused (500)');
      if (how === 'hang') await new Promise(() => undefined);
    },
  };
  return { channel, publishes };
}

describe('the change channel format', () => {
  it('packs changes in order into events of at most 5 KB, which parse back to the same changes', () => {
    const changes = Array.from({ length: 60 }, (_, i) => change(i));
    const events = feedEvents(changes);
    expect(events.length).toBeGreaterThan(1);
    for (const e of events) {
      expect(new TextEncoder().encode(e.text).length).toBeLessThanOrEqual(FEED_EVENT_TARGET_BYTES);
    }
    expect(events.reduce((n, e) => n + e.changes, 0)).toBe(60);
    expect(events.flatMap((e) => parseFeedEvent(e.text) ?? [])).toEqual(changes);
  });

  it('sends a summary larger than 5 KB alone', () => {
    const big = change(1, { tags: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(128, 'x')) });
    const events = feedEvents([change(0), big, change(2)]);
    expect(events.map((e) => e.changes)).toEqual([1, 1, 1]);
  });

  it('skips what is not a change event', () => {
    expect(parseFeedEvent('{"type":"delta","seq":1}')).toBeUndefined();
    expect(parseFeedEvent('not json')).toBeUndefined();
    expect(parseFeedEvent('{"type":"changes","changes":[{"cursor":1}]}')).toBeUndefined();
  });

  it('keys a delete apart from the write of the same position, and filters as /changes does', () => {
    const written = change(1);
    const deleted = { ...written, event: { ...written.event, type: 'deleted' as const } };
    expect(changeKey(written)).not.toBe(changeKey(deleted));
    const e = { ...change(1).event, causation: { caused_by: 'r@1', thread: 'r', hop: 1 } };
    expect(changeMatches({ thread: 'r' }, e)).toBe(true);
    expect(changeMatches({ thread: 'x' }, e)).toBe(false);
    expect(changeMatches({ schema_name: ['other', 'note.text.v1'], tag: 'a', writer: 'user:x' }, e)).toBe(
      true,
    );
    expect(changeMatches({ tag: 'c' }, e)).toBe(false);
  });
});

describe('ChannelChangeFeed', () => {
  it("publishes each workspace's changes to its own channel, at most 5 events a request, in order", async () => {
    const { channel, publishes } = recordingChannel();
    const changes: WorkspaceChange[] = [
      ...Array.from({ length: 200 }, (_, i) => ({ workspace: 'team-a', change: change(i) })),
      { workspace: 'team-b', change: change(999) },
    ];
    const out = await new ChannelChangeFeed(channel).publish(changes);
    expect(out).toMatchObject({ published: 201, failed: 0 });
    expect(new Set(publishes.map((p) => p.channel))).toEqual(
      new Set(['/changes/wteam-da', '/changes/wteam-db']),
    );
    for (const p of publishes) expect(p.events.length).toBeLessThanOrEqual(5);
    const seenByA = publishes
      .filter((p) => p.channel === '/changes/wteam-da')
      .flatMap((p) => p.events.flatMap((e) => parseFeedEvent(e) ?? []));
    expect(seenByA.map((c) => c.event.id)).toEqual(Array.from({ length: 200 }, (_, i) => `b${i}`));
    expect(out.events).toBe(publishes.reduce((n, p) => n + p.events.length, 0));
  });

  it('never rejects: a failed publish is counted and logged, the other workspace still gets its changes', async () => {
    const { channel, publishes } = recordingChannel((c) => (c === '/changes/wteam-da' ? 'fail' : 'ok'));
    const warn = vi.fn();
    const out = await new ChannelChangeFeed(channel, {
      warn,
      info: vi.fn(),
      error: vi.fn(),
    } as never).publish([
      { workspace: 'team-a', change: change(1) },
      { workspace: 'team-b', change: change(2) },
    ]);
    expect(out).toMatchObject({ published: 1, failed: 1 });
    expect(publishes.map((p) => p.channel).sort()).toEqual(['/changes/wteam-da', '/changes/wteam-db']);
    expect(warn).toHaveBeenCalledOnce();
  });
});

describe('publishStreamBatch and the change channel', () => {
  const bus = (log: string[]): EventBus => ({
    async put(entries: readonly BusEntry[]) {
      log.push(`routed ${entries.length}`);
      return { results: entries.map(() => ({ eventId: 'e' })) };
    },
  });

  it('sends the /changes summary of every write and delete, with its change-log position, and no context', async () => {
    const { channel, publishes } = recordingChannel();
    const v1 = record();
    const v2 = record({
      version: 2,
      title: 'changed',
      updated_at: '2026-01-01T00:00:01.000Z',
      context: { status: 'done' },
    });
    const deletedAt = '2026-01-02T00:00:00.000Z';
    const out = await publishStreamBatch(
      [
        streamRecord('INSERT', { newImage: headItem(v1, 'w1') }),
        streamRecord('MODIFY', { newImage: headItem(v2, 'w2'), oldImage: headItem(v1, 'w1') }),
        // A history item and an unchanged head are no changes; a TTL removal leaves no change-log entry.
        streamRecord('INSERT', { newImage: versionItem(v1) }),
        streamRecord('MODIFY', { newImage: headItem(v2, 'w2'), oldImage: headItem(v2, 'w2') }),
        streamRecord('MODIFY', {
          newImage: tombstoneItem(v2, deletedAt, 'user:deleter'),
          oldImage: headItem(v2, 'w2'),
        }),
        streamRecord('REMOVE', { oldImage: headItem(record({ id: 'expired' }), 'w9') }),
      ],
      {
        bus: bus([]),
        adopter: { adopt: vi.fn(), rejectPlainPut: vi.fn() },
        changeFeed: new ChannelChangeFeed(channel),
        sleep: async () => undefined,
      },
    );
    expect(out.batchItemFailures).toEqual([]);
    expect(out.feed).toMatchObject({ published: 3, failed: 0 });
    const text = publishes.flatMap((p) => p.events).join('');
    expect(text).not.toContain('hidden by llm_hints');
    expect(text).not.toContain('"context"');
    const sent = publishes.flatMap((p) => p.events.flatMap((e) => parseFeedEvent(e) ?? []));
    expect(publishes.every((p) => p.channel === '/changes/wws')).toBe(true);
    expect(sent.map((c) => [c.event.type, c.event.version, c.event.updated_by, c.event.status])).toEqual([
      ['created', 1, 'user:x', null],
      ['updated', 2, 'user:x', 'done'],
      ['deleted', 2, 'user:deleter', null],
    ]);
    expect(sent.map((c) => c.cursor)).toEqual([
      encodeCursor(gsi.changeSort(v1.updated_at, 'b1', 1)),
      encodeCursor(gsi.changeSort(v2.updated_at, 'b1', 2)),
      encodeCursor(gsi.changeSort(deletedAt, 'b1', 2)),
    ]);
  });

  it('routes while the publish is on its way, and a failing or stuck publish never fails the batch', async () => {
    for (const behaviour of ['fail', 'hang'] as const) {
      const log: string[] = [];
      let release: () => void = () => undefined;
      const channel: DeltaChannel = {
        async publish() {
          log.push('publish started');
          if (behaviour === 'fail') throw new Error('refused');
          // A stuck publish ends when the adapter's timeout fires; here the test lets it go after routing.
          await new Promise<void>((r) => {
            release = r;
          });
          throw new Error('timed out');
        },
      };
      const done = publishStreamBatch([streamRecord('INSERT', { newImage: headItem(record(), 'w1') })], {
        bus: bus(log),
        adopter: { adopt: vi.fn(), rejectPlainPut: vi.fn() },
        changeFeed: new ChannelChangeFeed(channel),
        sleep: async () => undefined,
      });
      await vi.waitFor(() => expect(log).toContain('routed 1'));
      release();
      const out = await done;
      expect(log).toEqual(['publish started', 'routed 1']);
      expect(out.batchItemFailures).toEqual([]);
      expect(out.published).toBe(1);
      expect(out.feed).toMatchObject({ published: 0, failed: 1 });
    }
  });

  it('publishes the summary of a change the breadth budget sheds: the write happened, /changes lists it', async () => {
    const { channel, publishes } = recordingChannel();
    const shedAll = { admit: async () => ({ admitted: [], shed: 1 }) } as unknown as BreadthBudget;
    const log: string[] = [];
    const out = await publishStreamBatch([streamRecord('INSERT', { newImage: headItem(record(), 'w1') })], {
      bus: bus(log),
      adopter: { adopt: vi.fn(), rejectPlainPut: vi.fn() },
      budget: shedAll,
      changeFeed: new ChannelChangeFeed(channel),
    });
    expect(out.shed).toBe(1);
    expect(log).toEqual([]);
    expect(publishes).toHaveLength(1);
  });
});
