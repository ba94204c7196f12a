import { describe, expect, it } from 'vitest';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import {
  applyPatch,
  decodeHistoryCursor,
  encodeCursor,
  firstVersion,
  historyPage,
  liveOrGone,
} from '#shared/domain/record-rules.ts';

const created = new Date('2026-01-01T00:00:00.000Z');
const later = new Date('2026-01-02T00:00:00.000Z');
const causation = { caused_by: 'root@1', thread: 'root', hop: 1 };

function record(): Breadcrumb {
  return firstVersion(
    'ws',
    'id-1',
    {
      schema_name: 'note.v1',
      title: 'first',
      tags: ['a'],
      context: { n: 1 },
      llm_hints: { exclude: ['n'] },
      expires_at: 2_000_000_000,
    },
    2_000_000_000,
    { now: created, principal: 'user:ann', causation },
  );
}

describe('applyPatch', () => {
  it('keeps what the patch leaves out and makes the next version, stamped by the writer', () => {
    const next = applyPatch(record(), { title: 'second' }, { now: later, principal: 'user:bob' });
    expect(next).toMatchObject({
      title: 'second',
      tags: ['a'],
      context: { n: 1 },
      llm_hints: { exclude: ['n'] },
      expires_at: 2_000_000_000,
      version: 2,
      created_at: created.toISOString(),
      created_by: 'user:ann',
      updated_at: later.toISOString(),
      updated_by: 'user:bob',
      causation,
    });
    expect(next.checksum).toBe(record().checksum);
  });

  it('clears llm_hints and expires_at given as null, and takes a new context with its checksum', () => {
    const next = applyPatch(
      record(),
      { context: { n: 2 }, llm_hints: null, expires_at: null },
      { now: later, principal: 'user:bob' },
    );
    expect(next).not.toHaveProperty('llm_hints');
    expect(next).not.toHaveProperty('expires_at');
    expect(next.context).toEqual({ n: 2 });
    expect(next.checksum).not.toBe(record().checksum);
  });

  it("takes the writer's causation over the stored one", () => {
    const mine = { caused_by: 'other@3', thread: 'other', hop: 2 };
    expect(applyPatch(record(), {}, { now: later, principal: 'agent:x', causation: mine }).causation).toEqual(
      mine,
    );
  });
});

describe('history cursors', () => {
  it('read back the version they were made from and refuse one beyond the current version', () => {
    expect(decodeHistoryCursor(encodeCursor({ v: 3 }), 5)).toBe(3);
    expect(() => decodeHistoryCursor(encodeCursor({ v: 6 }), 5)).toThrow('cursor is not valid');
    expect(() => decodeHistoryCursor('%%%', 5)).toThrow('cursor is not valid');
  });
});

describe('historyPage', () => {
  it('walks the versions newest first, a page at a time, and ends at version 1', () => {
    const first = historyPage(5, { limit: 2 });
    expect(first.versions).toEqual([5, 4]);
    const second = historyPage(5, { limit: 2, cursor: first.next_cursor ?? '' });
    expect(second.versions).toEqual([3, 2]);
    const last = historyPage(5, { limit: 2, cursor: second.next_cursor ?? '' });
    expect(last).toEqual({ versions: [1], next_cursor: null });
  });
});

describe('liveOrGone', () => {
  it('answers a missing or expired head as not found, naming why', () => {
    const expiring = record();
    expect(liveOrGone(expiring, 'ws', 'id-1', 1_000)).toBe(expiring);
    expect(() => liveOrGone(undefined, 'ws', 'id-1', 1_000)).toThrow('no breadcrumb id-1 in workspace ws');
    expect(() => liveOrGone(expiring, 'ws', 'id-1', 2_000_000_001_000)).toThrow('(it expired)');
  });
});
