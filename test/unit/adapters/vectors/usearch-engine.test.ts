/**
 * The local vector engine (usearch): workspace, schema and scope filters are applied by the partition searched, so a
 * small workspace beside a large one gets its own k nearest; vectors survive a restart under a directory; removing
 * the last vector of a partition leaves no file behind.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UsearchVectorEngine } from '#shared/adapters/vectors/usearch-engine.ts';

const dims = 16;
const model = 'local/test@16';

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

function randomVector(next: () => number): number[] {
  return Array.from({ length: dims }, next);
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('UsearchVectorEngine', () => {
  it('answers a 10-vector workspace its own top k beside a 3,000-vector one', async () => {
    const engine = new UsearchVectorEngine();
    const next = seeded(7);
    for (let i = 0; i < 3000; i++) {
      await engine.upsert(model, {
        id: `big-${i}`,
        workspace: 'big',
        schema_name: 'note.v1',
        vector: randomVector(next),
      });
    }
    for (let i = 0; i < 10; i++) {
      await engine.upsert(model, {
        id: `small-${i}`,
        workspace: 'small',
        schema_name: 'note.v1',
        vector: randomVector(next),
      });
    }
    const hits = await engine.query(model, { workspace: 'small', vector: randomVector(next), k: 5 });
    expect(hits).toHaveLength(5);
    expect(hits.every((h) => h.id.startsWith('small-'))).toBe(true);
    expect(await engine.query(model, { workspace: 'nobody', vector: randomVector(next), k: 5 })).toEqual([]);
  });

  it('filters by schema and by scope inside the workspace, and never across models', async () => {
    const engine = new UsearchVectorEngine();
    const v = [1, ...Array.from({ length: dims - 1 }, () => 0)];
    await engine.upsert(model, {
      id: 'a1',
      workspace: 'w',
      schema_name: 'memory.record.v1',
      scope: 'alice',
      vector: v,
    });
    await engine.upsert(model, {
      id: 'b1',
      workspace: 'w',
      schema_name: 'memory.record.v1',
      scope: 'bob',
      vector: v,
    });
    await engine.upsert(model, { id: 'n1', workspace: 'w', schema_name: 'note.v1', vector: v });
    const alice = await engine.query(model, {
      workspace: 'w',
      schemaName: 'memory.record.v1',
      scope: 'alice',
      vector: v,
      k: 10,
    });
    expect(alice.map((h) => h.id)).toEqual(['a1']);
    expect(alice[0]?.score).toBeCloseTo(1, 5);
    const notes = await engine.query(model, { workspace: 'w', schemaName: 'note.v1', vector: v, k: 10 });
    expect(notes.map((h) => h.id)).toEqual(['n1']);
    const all = await engine.query(model, { workspace: 'w', vector: v, k: 10 });
    expect(all.map((h) => h.id).sort()).toEqual(['a1', 'b1', 'n1']);
    expect(await engine.query('another/model@16', { workspace: 'w', vector: v, k: 10 })).toEqual([]);
  });

  it('moves a vector when its text or scope changes, and forgets it on remove', async () => {
    const engine = new UsearchVectorEngine();
    const x = [1, ...Array.from({ length: dims - 1 }, () => 0)];
    const y = [0, 1, ...Array.from({ length: dims - 2 }, () => 0)];
    await engine.upsert(model, { id: 'r', workspace: 'w', schema_name: 's.v1', scope: 'alice', vector: x });
    await engine.upsert(model, { id: 'r', workspace: 'w', schema_name: 's.v1', scope: 'bob', vector: y });
    expect(await engine.query(model, { workspace: 'w', scope: 'alice', vector: x, k: 3 })).toEqual([]);
    const bob = await engine.query(model, { workspace: 'w', scope: 'bob', vector: y, k: 3 });
    expect(bob.map((h) => h.id)).toEqual(['r']);
    await engine.remove(model, 'w', 'r');
    expect(await engine.query(model, { workspace: 'w', vector: y, k: 3 })).toEqual([]);
    expect(engine.size()).toBe(0);
  });

  it('keeps its vectors under a directory across a restart, and leaves no file for an emptied partition', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crumbs-vectors-'));
    dirs.push(dir);
    const first = new UsearchVectorEngine({ dir });
    const next = seeded(11);
    const kept = randomVector(next);
    await first.upsert(model, { id: 'keep', workspace: 'w', schema_name: 'note.v1', vector: kept });
    await first.upsert(model, {
      id: 'gone',
      workspace: 'w',
      schema_name: 'memory.record.v1',
      scope: 'alice',
      vector: randomVector(next),
    });
    first.flush();
    expect(readdirSync(dir).filter((f) => f.endsWith('.f32'))).toHaveLength(2);
    await first.remove(model, 'w', 'gone');
    first.flush();
    expect(readdirSync(dir).filter((f) => f.endsWith('.f32'))).toHaveLength(1);

    const second = new UsearchVectorEngine({ dir });
    expect(second.size()).toBe(1);
    const hits = await second.query(model, { workspace: 'w', vector: kept, k: 3 });
    expect(hits.map((h) => h.id)).toEqual(['keep']);
    expect(hits[0]?.score).toBeCloseTo(1, 4);
  });
});
