/**
 * Writing an executor's outputs: in order, one at a time, except neighbours marked `independent` (a run's step
 * requests), which are written at once; an error of one of them goes up once every write of its group has ended.
 */
import { describe, expect, it } from 'vitest';
import { OwnWrites, ownWrites, type WriteContext, writeOutputs } from '#shared/core/executor/outputs.ts';
import { CreateBreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import type { OutputBreadcrumb } from '#shared/domain/protocol.ts';
import type { CreateOptions } from '#shared/ports/breadcrumb-store.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

/** A store whose creates take a turn of the event loop each, recording how many run at once. */
function slowStore(failOn?: string) {
  const inner = new InMemoryBreadcrumbStore();
  const log: string[] = [];
  let running = 0;
  let most = 0;
  const store: WriteContext['store'] = {
    upsert: inner.upsert.bind(inner),
    async create(workspace, input, options: CreateOptions) {
      running++;
      most = Math.max(most, running);
      log.push(`start ${options.id}`);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      log.push(`end ${options.id}`);
      if (options.id === failOn) throw new RetriableError('injected');
      return inner.create(workspace, input, options);
    },
  };
  return { store, inner, log, most: () => most };
}

const ctx = (store: WriteContext['store']): WriteContext => ({
  store,
  workspace: 'ws',
  kind: 'workflow',
  definitionId: 'wf-def',
  trigger: { id: 'trigger', version: 1, tags: ['run:run-1'] },
  principal: 'workflow:wf',
  causation: { caused_by: 'trigger@1', thread: 'trigger', hop: 1 },
});

const output = (id: string, independent = false): OutputBreadcrumb => ({
  schema_name: 'tool.request.v1',
  tags: ['run:run-1'],
  context: { tool: 'echo', input: {} },
  id,
  ...(independent ? { independent: true as const } : {}),
});

describe('writeOutputs', () => {
  it('writes independent neighbours at once and the others one after the other, returning ids in order', async () => {
    const { store, inner, log, most } = slowStore();
    const outputs = [output('a'), output('b', true), output('c', true), output('d', true), output('e')];
    const { ids } = await writeOutputs(outputs, ctx(store));
    expect(ids).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(most()).toBe(3);
    // a ends before the group starts; the group ends before e starts.
    expect(log.indexOf('end a')).toBeLessThan(log.indexOf('start b'));
    expect(Math.max(...['b', 'c', 'd'].map((id) => log.indexOf(`end ${id}`)))).toBeLessThan(
      log.indexOf('start e'),
    );
    for (const id of ids) expect((await inner.get('ws', id)).created_by).toBe('workflow:wf');
  });

  it('writes outputs that are not marked one at a time', async () => {
    const { store, most } = slowStore();
    await writeOutputs([output('a'), output('b'), output('c')], ctx(store));
    expect(most()).toBe(1);
  });

  it('fails once every write of the group has ended, and a retry writes the missing ones under the same ids', async () => {
    const failing = slowStore('c');
    const outputs = [output('b', true), output('c', true), output('d', true)];
    await expect(writeOutputs(outputs, ctx(failing.store))).rejects.toThrow('injected');
    expect(failing.log.filter((l) => l.startsWith('end'))).toHaveLength(3);
    // The redelivery: b and d are replays, c is written.
    const retry = await writeOutputs(outputs, ctx(failing.inner));
    expect(retry.ids).toEqual(['b', 'c', 'd']);
    expect((await failing.inner.get('ws', 'c')).version).toBe(1);
  });
});

describe('ownWrites', () => {
  it('remembers the writer and hop of each version its store created, and nothing it replayed', async () => {
    const store = new InMemoryBreadcrumbStore();
    // Someone else got to one of the ids first: the executor's create replays their breadcrumb.
    await store.create('ws', CreateBreadcrumbSchema.parse({ schema_name: 'tool.request.v1', context: {} }), {
      principal: 'user:squatter',
      id: 'taken',
    });
    await writeOutputs([output('mine'), output('taken')], ctx(store));

    expect(ownWrites(store).recall('ws', 'mine', 1)).toEqual({ created_by: 'workflow:wf', hop: 1 });
    expect(ownWrites(store).recall('ws', 'taken', 1)).toBeUndefined();
    expect(ownWrites(store).recall('ws', 'mine', 2)).toBeUndefined();
    expect(ownWrites(store).recall('other-ws', 'mine', 1)).toBeUndefined();
    expect(ownWrites(new InMemoryBreadcrumbStore()).recall('ws', 'mine', 1)).toBeUndefined();
  });

  it('forgets the oldest versions past its capacity', () => {
    const memory = new OwnWrites(2);
    const version = (id: string) => ({ workspace: 'ws', id, version: 1, created_by: 'tool:t' });
    memory.remember(version('a'));
    memory.remember(version('b'));
    memory.remember(version('c'));
    expect(memory.recall('ws', 'a', 1)).toBeUndefined();
    expect(memory.recall('ws', 'b', 1)).toEqual({ created_by: 'tool:t', hop: undefined });
    expect(memory.recall('ws', 'c', 1)).toBeDefined();
  });
});
