import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  gsi,
  headItem,
  inheritedOf,
  listedTags,
  tagItemChanges,
  unmarshallImage,
} from '#shared/adapters/dynamodb/items.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';

const record = (overrides: Partial<Breadcrumb> = {}): Breadcrumb => ({
  id: 'b1',
  workspace: 'ws',
  schema_name: 'note.text.v1',
  title: 't',
  tags: ['a'],
  context: { text: 'hi' },
  version: 1,
  checksum: 'c',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  created_by: 'user:x',
  updated_by: 'user:x',
  ...overrides,
});

/** A head as the stream hands it to the publisher. */
const image = (r: Breadcrumb, inherited: string[] = []) =>
  unmarshallImage(marshall(headItem(r, 'w', inherited), { removeUndefinedValues: true }) as never);

const run = (version: number, status: string, updated_at: string) =>
  record({
    id: 'run-1',
    schema_name: 'workflow.run.v1',
    tags: ['workflow:w', 'run:run-1', `run-status:${status}`, `run-status:w:${status}`],
    context: { status },
    version,
    updated_at,
    causation: { caused_by: 'req@1', thread: 'req', hop: 1 },
  });

describe('index entries of a head', () => {
  it('lists a run where it started: a rewrite moves none of its entries and rewrites no tag item it keeps', () => {
    const v1 = run(1, 'running', '2026-01-01T00:00:00.000Z');
    const v2 = run(2, 'running', '2026-01-01T00:00:05.000Z');
    const head = headItem(v2, 'w2');
    const sort = gsi.sort(v1.created_at, v1.id);
    expect([head.gsi1sk, head.gsi3sk]).toEqual([sort, sort]);
    // Every tag through tag items (written once), none on the head: a copy of the whole run at every step costs more.
    expect(head.gsi2pk).toBeUndefined();
    // The change log still moves: it is ordered by write.
    expect(String(head.gsi4sk)).toContain(v2.updated_at);

    const created = tagItemChanges(image(v1), undefined)!;
    // `run:run-1` names the run itself: read by id, no entry.
    expect(created.put.map((i) => i.id)).toEqual([
      'run-1#t#workflow:w',
      'run-1#t#run-status:running',
      'run-1#t#run-status:w:running',
    ]);
    expect(tagItemChanges(image(v2), image(v1))).toEqual({ put: [], remove: [] });

    const ended = tagItemChanges(image(run(3, 'succeeded', '2026-01-01T00:00:09.000Z')), image(v2))!;
    expect(ended.put.map((i) => i.id)).toEqual([
      'run-1#t#run-status:succeeded',
      'run-1#t#run-status:w:succeeded',
    ]);
    expect(ended.remove.map((k) => k.id)).toEqual([
      'run-1#t#run-status:running',
      'run-1#t#run-status:w:running',
    ]);
  });

  it('rewrites the tag items of a breadcrumb listed by its last write, since their sort keys move', () => {
    const v1 = record({ tags: ['a', 'b'] });
    const v2 = record({ tags: ['a', 'b'], version: 2, updated_at: '2026-01-02T00:00:00.000Z' });
    expect(headItem(v2, 'w').gsi1sk).toBe(gsi.sort(v2.updated_at, v2.id));
    expect(tagItemChanges(image(v2), image(v1))!.put.map((i) => i.gsi1sk)).toEqual([
      gsi.sort(v2.updated_at, 'b1'),
    ]);
  });

  it('writes the tag item a head no longer rides on, whichever rule placed the old head', () => {
    // A run head written when its first tag rode on the head (gsi2): that tag gets its item on the next write.
    const v1 = run(1, 'running', '2026-01-01T00:00:00.000Z');
    const old = { ...image(v1), gsi2pk: gsi.byTag('ws', 'workflow:w'), gsi2sk: 'x' };
    const changes = tagItemChanges(image(run(2, 'running', '2026-01-01T00:00:05.000Z')), old)!;
    expect(changes.put.map((i) => i.id)).toEqual(['run-1#t#workflow:w']);
  });

  it('needs no entry for request:<thread> on a member of that thread (the listing reads the thread)', () => {
    const result = record({
      id: 'run-1.result.1',
      schema_name: 'workflow.result.v1',
      tags: ['request:req', 'workflow:w'],
      causation: { caused_by: 'tool-x@1', thread: 'req', hop: 3 },
    });
    expect(listedTags(result)).toEqual(['workflow:w']);
    // Elsewhere, request:<id> is listed as any tag.
    expect(listedTags({ ...result, causation: { caused_by: 'tool-x@1', thread: 'other', hop: 3 } })).toEqual([
      'request:req',
      'workflow:w',
    ]);
  });

  it('stores inherited tags as their positions, and reads both that and the tags themselves', () => {
    const answer = record({
      tags: ['request:q', 'tool:echo', 'run:r'],
      causation: { caused_by: 'q@1', thread: 't', hop: 2 },
    });
    const stored = image(answer, ['request:q', 'run:r']);
    expect(stored.inherited).toEqual([0, 2]);
    expect(inheritedOf(stored)).toEqual(['request:q', 'run:r']);
    expect(inheritedOf({ ...stored, inherited: ['run:r'] })).toEqual(['run:r']);
  });
});
