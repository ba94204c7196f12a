import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import {
  headItem,
  KIND,
  keys,
  tagItem,
  tombstoneItem,
  versionItem,
} from '#shared/adapters/dynamodb/items.ts';
import {
  type PlainPutAdopter,
  publishStreamBatch,
  type TagItemChange,
} from '#shared/core/stream/publisher.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { MAX_EVENT_CONTEXT_BYTES } from '#shared/domain/change-event.ts';
import type { BusEntry, BusPutResult, EventBus } from '#shared/ports/event-bus.ts';

const record = (overrides: Partial<Breadcrumb> = {}): Breadcrumb => ({
  id: 'b1',
  workspace: 'ws',
  schema_name: 'note.text.v1',
  title: 't',
  tags: ['a.b'],
  context: { text: 'hi' },
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

/** A bus that records every PutEvents call and can refuse entries. */
function recordingBus(refuse: (entry: BusEntry, call: number) => boolean = () => false) {
  const calls: BusEntry[][] = [];
  const bus: EventBus = {
    async put(entries): Promise<BusPutResult> {
      calls.push([...entries]);
      const call = calls.length;
      return {
        results: entries.map((e) =>
          refuse(e, call)
            ? { error: { code: 'ThrottlingException', message: 'slow down' } }
            : { eventId: 'e' },
        ),
      };
    },
  };
  return { bus, calls };
}

const adopter: PlainPutAdopter = {
  adopt: vi.fn(async () => undefined),
  rejectPlainPut: vi.fn(async () => undefined),
  discardPlainPut: vi.fn(async () => undefined),
};
const noSleep = async () => undefined;

describe('publishStreamBatch', () => {
  it('publishes Created for version 1, Updated after, and Deleted from the old image', async () => {
    const { bus, calls } = recordingBus();
    const v1 = record();
    const v2 = record({ version: 2, title: 'changed' });
    const out = await publishStreamBatch(
      [
        streamRecord('INSERT', { newImage: headItem(v1, 'w1') }),
        streamRecord('MODIFY', { newImage: headItem(v2, 'w2'), oldImage: headItem(v1, 'w1') }),
        streamRecord('REMOVE', { oldImage: headItem(v2, 'w2') }),
      ],
      { bus, adopter, sleep: noSleep },
    );
    expect(out.batchItemFailures).toEqual([]);
    expect(calls.flat().map((e) => [e.detailType, e.detail.version])).toEqual([
      ['Breadcrumb Created', 1],
      ['Breadcrumb Updated', 2],
      ['Breadcrumb Deleted', 2],
    ]);
    expect(calls[0]?.[0]?.detail).toMatchObject({
      workspace: 'ws',
      id: 'b1',
      tag_map: { 'a%2Eb': true },
      context_omitted: false,
    });
  });

  it("passes over a sealed workspace's records: routes nothing, and removes a plain put into it instead of adopting it", async () => {
    const { bus, calls } = recordingBus();
    const discarded: unknown[] = [];
    const adopting: PlainPutAdopter = {
      adopt: vi.fn(async () => undefined),
      rejectPlainPut: vi.fn(async () => undefined),
      discardPlainPut: async (seen) => {
        discarded.push(seen);
      },
    };
    const plain = { id: 'p1', workspace: 'gone', schema_name: 'note.text.v1', context: { text: 'late' } };
    const out = await publishStreamBatch(
      [
        streamRecord('INSERT', { newImage: headItem(record({ workspace: 'gone' }), 'w1') }),
        streamRecord('INSERT', { newImage: plain }),
        streamRecord('INSERT', { newImage: headItem(record({ id: 'b2' }), 'w1') }),
      ],
      { bus, adopter: adopting, sleep: noSleep, seals: { isSealed: async (ws) => ws === 'gone' } },
    );
    expect(out.batchItemFailures).toEqual([]);
    expect(calls.flat().map((e) => [e.detail.workspace, e.detail.id])).toEqual([['ws', 'b2']]);
    expect(discarded).toEqual([plain]);
    expect(adopting.adopt).not.toHaveBeenCalled();
  });

  it('publishes nothing for history, tag, idempotency items or a write that did not change the head', async () => {
    const { bus, calls } = recordingBus();
    const v1 = record();
    await publishStreamBatch(
      [
        streamRecord('INSERT', { newImage: versionItem(v1) }),
        streamRecord('INSERT', { newImage: tagItem(v1, 'a.b') }),
        streamRecord('INSERT', { newImage: { ...keys.idempotency('ws', 'k'), kind: KIND.idempotency } }),
        streamRecord('REMOVE', { oldImage: tagItem(v1, 'a.b') }),
        streamRecord('MODIFY', { newImage: headItem(v1, 'w1'), oldImage: headItem(v1, 'w1') }),
      ],
      { bus, adopter, sleep: noSleep },
    );
    expect(calls.flat()).toEqual([]);
  });

  it("writes a head's further tag items before its change is routed, and deletes those it dropped", async () => {
    const { bus, calls } = recordingBus();
    const order: string[] = [];
    const written: TagItemChange[][] = [];
    const tagItems = {
      async writeTagItems(changes: readonly TagItemChange[]) {
        order.push('tags');
        written.push([...changes]);
        return changes.length;
      },
    };
    const v1 = record({ tags: ['first', 'second', 'third'] });
    const v2 = record({ tags: ['first', 'third'], version: 2, updated_at: '2026-01-01T00:00:01.000Z' });
    const routed = {
      put: async (entries: readonly BusEntry[]) => {
        order.push('route');
        return bus.put(entries);
      },
    };
    await publishStreamBatch(
      [
        streamRecord('INSERT', { newImage: headItem(v1, 'w1') }),
        streamRecord('MODIFY', { newImage: headItem(v2, 'w2'), oldImage: headItem(v1, 'w1') }),
      ],
      { bus: routed, adopter, tagItems, sleep: noSleep },
    );
    expect(order).toEqual(['tags', 'route']);
    expect(calls.flat()).toHaveLength(2);
    const [created, updated] = written[0] ?? [];
    // The first listed tag rides on the head; the others are tag items.
    expect(created?.put.map((i) => i.id)).toEqual(['b1#t#second', 'b1#t#third']);
    expect(updated?.put.map((i) => i.id)).toEqual(['b1#t#third']);
    expect(updated?.remove).toEqual([keys.tag('ws', 'b1', 'second')]);
  });

  it('routes nothing from a record whose tag items could not be written, and reports it for retry', async () => {
    const { bus, calls } = recordingBus();
    const tagItems = {
      writeTagItems: async () => {
        throw new Error('throttled');
      },
    };
    const plain = record({ id: 'b0', tags: ['only'] });
    const tagged = record({ id: 'b1', tags: ['a', 'b'] });
    const first = streamRecord('INSERT', { newImage: headItem(plain, 'w0') });
    const second = streamRecord('INSERT', { newImage: headItem(tagged, 'w1') });
    const outcome = await publishStreamBatch([first, second], { bus, adopter, tagItems, sleep: noSleep });
    // Lambda hands the batch over again from the first record that needed tag items (b0 needs none, but the
    // writes of a batch go together, so the first record with any change is where the retry starts).
    expect(outcome.batchItemFailures).toEqual([{ itemIdentifier: first.dynamodb?.SequenceNumber }]);
    expect(calls.flat()).toHaveLength(0);
  });

  it('publishes Deleted when a head becomes a tombstone, and drops its tag items', async () => {
    const { bus, calls } = recordingBus();
    const written: TagItemChange[] = [];
    const tagItems = {
      async writeTagItems(changes: readonly TagItemChange[]) {
        written.push(...changes);
        return changes.length;
      },
    };
    const v1 = record({ tags: ['first', 'second'] });
    await publishStreamBatch(
      [
        streamRecord('MODIFY', {
          newImage: tombstoneItem(v1, '2026-01-02T00:00:00.000Z', 'user:x'),
          oldImage: headItem(v1, 'w1'),
        }),
      ],
      { bus, adopter, tagItems, sleep: noSleep },
    );
    expect(calls.flat().map((e) => e.detailType)).toEqual(['Breadcrumb Deleted']);
    expect(written[0]?.remove).toEqual([keys.tag('ws', 'b1', 'second')]);
  });

  it('leaves a large context out of the event and says so', async () => {
    const { bus, calls } = recordingBus();
    const big = record({ context: { blob: 'x'.repeat(MAX_EVENT_CONTEXT_BYTES + 1) } });
    await publishStreamBatch([streamRecord('INSERT', { newImage: headItem(big, 'w1') })], {
      bus,
      adopter,
      sleep: noSleep,
    });
    const detail = calls[0]?.[0]?.detail;
    expect(detail?.context_omitted).toBe(true);
    expect(detail).not.toHaveProperty('context');
    expect(detail).not.toHaveProperty('words');
  });

  it('lists the lowercased words of the context text fields, for contains_any rules', async () => {
    const { bus, calls } = recordingBus();
    const message = record({
      context: { content: 'Can you list my FILES?', meta: { lang: 'en' }, labels: ['Red Apple'] },
    });
    await publishStreamBatch([streamRecord('INSERT', { newImage: headItem(message, 'w1') })], {
      bus,
      adopter,
      sleep: noSleep,
    });
    const detail = calls[0]?.[0]?.detail;
    expect(detail?.words).toEqual({ content: ['can', 'you', 'list', 'my', 'files'], meta: { lang: ['en'] } });
    expect(detail?.words_truncated).toBe(false);
  });

  it('keeps every PutEvents request within 1 MB of entries', async () => {
    const { bus, calls } = recordingBus();
    const prose = (i: number) =>
      Array.from({ length: 4000 }, (_, k) => `word${i}x${k}`)
        .join(' ')
        .slice(0, MAX_EVENT_CONTEXT_BYTES - 100);
    const records = Array.from({ length: 30 }, (_, i) =>
      streamRecord('INSERT', {
        newImage: headItem(record({ id: `b${i}`, context: { text: prose(i) } }), `w${i}`),
      }),
    );
    const out = await publishStreamBatch(records, { bus, adopter, sleep: noSleep });
    expect(out.published).toBe(30);
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls) {
      const bytes = call.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e.detail)), 0);
      expect(bytes).toBeLessThanOrEqual(1024 * 1024);
    }
  });

  it('puts events in batches of at most 10', async () => {
    const { bus, calls } = recordingBus();
    const records = Array.from({ length: 23 }, (_, i) =>
      streamRecord('INSERT', { newImage: headItem(record({ id: `b${i}` }), `w${i}`) }),
    );
    const out = await publishStreamBatch(records, { bus, adopter, sleep: noSleep });
    expect(calls.map((c) => c.length)).toEqual([10, 10, 3]);
    expect(out.published).toBe(23);
  });

  it('retries entries the bus refused, and reports the first record it could not publish', async () => {
    // Refuses b1 on the first call only, and b2 always.
    const { bus, calls } = recordingBus(
      (e, call) => e.detail.id === 'b2' || (e.detail.id === 'b1' && call === 1),
    );
    const records = ['b0', 'b1', 'b2', 'b3'].map((id) =>
      streamRecord('INSERT', { newImage: headItem(record({ id }), id) }),
    );
    const out = await publishStreamBatch(records, { bus, adopter, sleep: noSleep, putAttempts: 3 });
    expect(calls.map((c) => c.map((e) => e.detail.id))).toEqual([
      ['b0', 'b1', 'b2', 'b3'],
      ['b1', 'b2'],
      ['b2'],
    ]);
    // Lambda retries from b2 on (stream order per shard), so nothing after it is lost.
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: records[2]?.dynamodb?.SequenceNumber }]);
  });

  it('adopts a plain put instead of publishing it, and reports a failed adoption for retry', async () => {
    const { bus, calls } = recordingBus();
    const plain = {
      id: 'mine',
      workspace: 'ws',
      schema_name: 'note.text.v1',
      context: { text: 'hand-written' },
    };
    const adopt = vi.fn(async () => record({ id: 'mine' }));
    const ok = await publishStreamBatch([streamRecord('INSERT', { newImage: plain })], {
      bus,
      adopter: { ...adopter, adopt },
      sleep: noSleep,
    });
    expect(adopt).toHaveBeenCalledOnce();
    expect(ok).toMatchObject({ adopted: 1, batchItemFailures: [] });
    expect(calls.flat()).toEqual([]);

    const failing = streamRecord('INSERT', { newImage: plain });
    const failed = await publishStreamBatch([failing], {
      bus,
      adopter: { ...adopter, adopt: vi.fn(async () => Promise.reject(new Error('throttled'))) },
      sleep: noSleep,
    });
    expect(failed.batchItemFailures).toEqual([{ itemIdentifier: failing.dynamodb?.SequenceNumber }]);
  });

  it('annotates an invalid plain put instead of adopting it', async () => {
    const { bus } = recordingBus();
    const rejectPlainPut = vi.fn(async () => undefined);
    const out = await publishStreamBatch(
      [
        streamRecord('INSERT', {
          newImage: { id: 'bad', workspace: 'ws', schema_name: 'Not Valid', context: {} },
        }),
      ],
      { bus, adopter: { ...adopter, rejectPlainPut }, sleep: noSleep },
    );
    expect(out.rejected).toBe(1);
    expect(rejectPlainPut).toHaveBeenCalledWith(
      expect.objectContaining({ id: 'bad' }),
      expect.arrayContaining([expect.objectContaining({ path: 'schema_name' })]),
      expect.any(String),
    );
  });
});

describe('publishStreamBatch: a pool of buses', () => {
  it("sends each event to the first bus and to its workspace's other buses, and retries from a workspace whose routes fail", async () => {
    const { bus, calls } = recordingBus();
    const routes = {
      busesFor: vi.fn(async (ws: string) => {
        if (ws === 'broken') throw new Error('table unavailable');
        return ws === 'spilled' ? ['crumbs', 'crumbs.3'] : ['crumbs'];
      }),
    };
    const a = record({ id: 'a', workspace: 'home' });
    const b = record({ id: 'b', workspace: 'spilled' });
    const c = record({ id: 'c', workspace: 'broken' });
    const d = record({ id: 'd', workspace: 'home' });
    const records = [a, b, c, d].map((r, i) => streamRecord('INSERT', { newImage: headItem(r, `w${i}`) }));
    const out = await publishStreamBatch(records, { bus, routes, adopter, sleep: noSleep });
    const sent = calls.flat().map((e) => `${String(e.detail.id)}@${e.bus}`);
    expect(sent).toEqual(['a@crumbs', 'b@crumbs', 'b@crumbs.3']);
    expect(out.published).toBe(3);
    // Lambda hands the batch over again from the record whose routes could not be read.
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: records[2]!.dynamodb!.SequenceNumber }]);
    expect(routes.busesFor).toHaveBeenCalledTimes(3);
  });
});
