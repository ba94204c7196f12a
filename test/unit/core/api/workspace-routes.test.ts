/**
 * The workspace deletion route on the in-memory store with a sweeper whose pages can fail: only people delete, a
 * caller not allowed the workspace reaches nothing, definitions are deleted through the store (so the rule manager
 * removes their rules), the rules phase waits for their status breadcrumbs to go, and a sweep that dies midway
 * resumes at the page it had not finished.
 */
import { describe, expect, it } from 'vitest';
import { createApi } from '#shared/core/api/api.ts';
import type { Caller, HttpRequest } from '#shared/core/api/http.ts';
import type { ChangeLog } from '#shared/ports/activity.ts';
import type { WorkspaceTimers } from '#shared/ports/timers.ts';
import type { DeletionJob, SecretEraser, WorkspaceSweeper } from '#shared/ports/workspace-deletion.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

/** Items of the workspace as keys; `sweep` deletes one page of two, and fails when told to. */
class FakeSweeper implements WorkspaceSweeper {
  job: DeletionJob | undefined;
  items: string[] = ['i1', 'i2', 'i3', 'i4', 'i5'];
  failNext = false;
  /** The tombstone's end, once the deletion is done. */
  until: Date | undefined;
  sweeps: (string | undefined)[] = [];

  async readJob() {
    return this.job;
  }
  async writeJob(_ws: string, job: DeletionJob, expected: number | undefined) {
    if (this.job?.step !== expected) return false;
    this.job = job;
    return true;
  }
  async finishJob(_ws: string, job: DeletionJob, expected: number, until: Date) {
    if (this.job?.step !== expected) return false;
    this.job = job;
    this.until = until;
    return true;
  }
  async deleteJob() {
    this.job = undefined;
  }
  async sweep(_ws: string, cursor: string | undefined) {
    this.sweeps.push(cursor);
    if (this.failNext) {
      this.failNext = false;
      throw new Error('the process died');
    }
    const from = cursor === undefined ? 0 : Number(cursor);
    const page = this.items.slice(from, from + 2);
    const next = from + 2 < this.items.length ? String(from + 2) : undefined;
    // The first pass deletes every item; the second finds none.
    if (next === undefined) this.items = [];
    return { deleted: page.length, ...(next !== undefined ? { cursor: next } : {}) };
  }
}

function setup(secrets?: SecretEraser, now?: () => number, timers?: WorkspaceTimers) {
  const store = new InMemoryBreadcrumbStore();
  const sweeper = new FakeSweeper();
  const unused = async () => {
    throw new Error('not used by deletion');
  };
  const changes = {
    read: unused,
    latest: unused,
    cursorAt: () => '',
    checkCursor: (c: string) => c,
  } as ChangeLog;
  const api = createApi({
    store,
    workspaces: {
      store,
      changes,
      threads: { versions: unused },
      sweeper,
      rulesWaitMs: 60_000,
      ...(secrets ? { secrets } : {}),
      ...(timers ? { timers } : {}),
      ...(now ? { now, streamSettleMs: 1000, sealWindowMs: 500 } : { streamSettleMs: 0, sealWindowMs: 0 }),
    },
  });
  const call = async (query = '', caller: Caller = { principal: 'user:ann', workspaces: ['ws'] }) => {
    const request: HttpRequest = {
      method: 'DELETE',
      path: '/v1/workspaces/ws',
      headers: {},
      query: Object.fromEntries(new URLSearchParams(query)),
      body: undefined,
      caller,
    };
    const result = await api(request);
    return { status: result.statusCode, body: result.body ? JSON.parse(result.body) : undefined };
  };
  return { store, sweeper, call };
}

describe('DELETE /v1/workspaces/{ws}', () => {
  it('is refused to a writer that is no person and to a caller not allowed the workspace; nothing changes', async () => {
    const { sweeper, call } = setup();
    const plainPut = await call('', { principal: 'user:plain-put', workspaces: '*' });
    expect(plainPut.status).toBe(403);
    expect(plainPut.body.detail).toContain('only a person');
    const elsewhere = await call('', { principal: 'user:bob', workspaces: ['other'] });
    expect(elsewhere.status).toBe(403);
    expect(sweeper.job).toBeUndefined();
    expect(sweeper.sweeps).toEqual([]);
  });

  it('deletes definitions through the store, waits for the rule manager, then sweeps; a crash mid-sweep resumes there', async () => {
    const { store, sweeper, call } = setup();
    await store.create(
      'ws',
      { schema_name: 'tool.def.v1', title: 'echo', context: { name: 'echo' }, tags: [] },
      {
        principal: 'user:ann',
        id: 'tool-echo',
      },
    );
    // Its status breadcrumb, as the rule manager keeps it while the rule exists.
    await store.create(
      'ws',
      { schema_name: 'definition.status.v1', title: 's', context: { definition_id: 'tool-echo' }, tags: [] },
      { principal: 'system:rule-manager', id: 'status-tool-echo' },
    );
    const waiting = await call();
    expect(waiting.status).toBe(202);
    expect(waiting.body).toMatchObject({ done: false, phase: 'rules', deleted: 1 });
    expect(waiting.body.waiting).toContain('tool-echo');
    await expect(store.get('ws', 'tool-echo')).rejects.toThrow();

    // The rule manager removed the rule and the status: the sweep starts; its second page dies.
    await store.delete('ws', 'status-tool-echo');
    // rules → seal → timers → the sweep's first page.
    const oneStep = await call('steps=4');
    expect(oneStep.body).toMatchObject({ done: false, phase: 'sweep' });
    expect(sweeper.job?.sealed_at).toEqual(expect.any(String));
    expect(sweeper.job?.cursor).toBe('2');
    sweeper.failNext = true;
    expect((await call()).status).toBe(500);
    expect(sweeper.job?.cursor).toBe('2');

    const done = await call();
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ done: true, resumed: true, deleted: 1 + 5 });
    // The second pass reads the workspace once more and finds it empty.
    expect(sweeper.sweeps).toEqual([undefined, '2', '2', '4', undefined]);
    expect(sweeper.job?.done_at).toEqual(expect.any(String));
  });

  it('refuses while a run is active, naming it, and leaves no job; force goes on', async () => {
    const { store, sweeper, call } = setup();
    await store.create(
      'ws',
      { schema_name: 'workflow.run.v1', title: 'r', context: { run_id: 'r1', status: 'paused' }, tags: [] },
      { principal: 'workflow:w', id: 'run-1' },
    );
    const refused = await call();
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain('run-1 (paused)');
    expect(sweeper.job).toBeUndefined();
    expect((await call('force=true')).body).toMatchObject({ done: true });
  });

  it("removes the workspace's credentials after its definitions, page by page, and says what it could not remove", async () => {
    const calls: (string | undefined)[] = [];
    const eraser: SecretEraser = {
      erase: async (ws, cursor) => {
        calls.push(`${ws}:${cursor}`);
        return cursor === undefined
          ? { erased: ['a', 'b'], cursor: 'next', notes: [] }
          : { erased: ['c'], notes: ['CRUMBS_SECRETS still maps secrets of ws'] };
      },
    };
    const { sweeper, call } = setup(eraser);
    const done = await call();
    expect(done.body).toMatchObject({ done: true, deleted: 3 + 5 });
    expect(done.body.warnings).toEqual(['CRUMBS_SECRETS still maps secrets of ws']);
    expect(calls).toEqual(['ws:undefined', 'ws:next']);
    expect(sweeper.sweeps[0]).toBeUndefined();
  });

  it('seals, cancels the timers, then after the seal window and the stream cancels and sweeps once more; the record stays as the tombstone', async () => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    const cancels: (string | undefined)[] = [];
    const timers: WorkspaceTimers = {
      cancelAll: async (_ws, cursor) => {
        cancels.push(cursor);
        return cursor === undefined ? { cancelled: 100, cursor: 't' } : { cancelled: 3 };
      },
    };
    const { sweeper, call } = setup(undefined, () => t, timers);
    const first = await call();
    expect(first.body).toMatchObject({ done: false, phase: 'timers', timers_cancelled: 103 });
    expect(first.body.waiting).toContain('seal');
    expect(sweeper.job).toMatchObject({ pass: 2, sealed_at: '2026-01-01T00:00:00.000Z' });
    expect(sweeper.sweeps).toEqual([undefined, '2', '4']);
    expect(cancels).toEqual([undefined, 't']);
    // The stream has settled (1 s) but writers may not all know of the seal yet (twice 500 ms).
    t += 999;
    expect((await call()).body.waiting).toContain('seal');
    t += 1;
    const done = await call();
    expect(done.body).toMatchObject({
      done: true,
      deleted: 5,
      timers_cancelled: 206,
      tombstone_until: '2026-01-03T00:00:01.000Z',
    });
    expect(cancels).toEqual([undefined, 't', undefined, 't']);
    expect(sweeper.sweeps).toEqual([undefined, '2', '4', undefined]);
    expect(sweeper.until?.toISOString()).toBe('2026-01-03T00:00:01.000Z');
    // Called again: done, nothing more read or deleted.
    const again = await call();
    expect(again.body).toMatchObject({ done: true, resumed: true, deleted: 5 });
    expect(sweeper.sweeps).toHaveLength(4);
  });
});
