/**
 * The executor's half of version pins (`versions.ts`): the version a request names is loaded only for the
 * definition the rule routed (same workspace, same id, the name the request asks for), never another workspace's
 * or another definition's; a version that is not there, or that defines another name, is `gone`.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { DefinitionRef } from '#shared/core/executor/contract.ts';
import { clearDefinitionCache, loadDefinition } from '#shared/core/executor/definition-cache.ts';
import { definitionForTrigger } from '#shared/core/executor/versions.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

const opts = { principal: 'user:ann' };

async function storeWithTools(): Promise<InMemoryBreadcrumbStore> {
  const store = new InMemoryBreadcrumbStore();
  // Workspace a: calc has versions 1 (echo) and 2 (calculator); workspace b: calc has one version.
  await store.create(
    'a',
    { schema_name: 'tool.def.v1', title: '', tags: [], context: { name: 'calc', implementation: 'echo' } },
    { ...opts, id: 'tool-calc' },
  );
  const head = await store.get('a', 'tool-calc');
  await store.update(
    'a',
    'tool-calc',
    { context: { name: 'calc', implementation: 'calculator' } },
    { ...opts, expectedVersion: head.version },
  );
  await store.create(
    'b',
    { schema_name: 'tool.def.v1', title: '', tags: [], context: { name: 'calc', implementation: 'echo' } },
    { ...opts, id: 'tool-calc' },
  );
  await store.create(
    'b',
    { schema_name: 'tool.def.v1', title: '', tags: [], context: { name: 'other', implementation: 'echo' } },
    { ...opts, id: 'tool-other' },
  );
  return store;
}

const ref = (workspace: string, id: string, version: number): DefinitionRef => ({
  workspace,
  id,
  version,
  kind: 'tool',
  schema_name: 'tool.def.v1',
});

const request = (tool: string, version: unknown) => ({
  schema_name: 'tool.request.v1',
  context: { tool, input: {}, requestId: 'r', requestedBy: 'user:ann', definition_version: version },
});

beforeEach(() => {
  clearDefinitionCache();
});

describe('definitionForTrigger', () => {
  it('loads the version the request names, of the routed definition', async () => {
    const store = await storeWithTools();
    const latest = await loadDefinition(ref('a', 'tool-calc', 2), store);
    const chosen = await definitionForTrigger(ref('a', 'tool-calc', 2), latest, request('calc', 1), store);
    expect(chosen).toMatchObject({ ref: { workspace: 'a', id: 'tool-calc', version: 1 } });
    expect('parsed' in chosen && chosen.parsed.definition).toMatchObject({ implementation: 'echo' });
  });

  it("cannot reach another workspace's version: b's calc has no version 2", async () => {
    const store = await storeWithTools();
    const inB = await loadDefinition(ref('b', 'tool-calc', 1), store);
    // A request in b forged to name version 2, which only a's calc has.
    const chosen = await definitionForTrigger(ref('b', 'tool-calc', 1), inB, request('calc', 2), store);
    expect(chosen).toEqual({ gone: 'tool-calc has no version 2' });
  });

  it('leaves a definition the request does not ask for at the version its rule named', async () => {
    const store = await storeWithTools();
    // `other` sees a request for calc (a broad subscription): calc's pin is not for it.
    const other = await loadDefinition(ref('b', 'tool-other', 1), store);
    const chosen = await definitionForTrigger(ref('b', 'tool-other', 1), other, request('calc', 2), store);
    expect(chosen).toMatchObject({ ref: { id: 'tool-other', version: 1 } });
  });

  it('ignores a version that is not a whole number ≥ 1, and refuses one that defines another name', async () => {
    const store = await storeWithTools();
    const latest = await loadDefinition(ref('a', 'tool-calc', 2), store);
    for (const bad of ['1', 0, -1, 1.5, null]) {
      const chosen = await definitionForTrigger(
        ref('a', 'tool-calc', 2),
        latest,
        request('calc', bad),
        store,
      );
      expect(chosen).toMatchObject({ ref: { version: 2 } });
    }
    const head = await store.get('a', 'tool-calc');
    await store.update(
      'a',
      'tool-calc',
      { context: { name: 'renamed', implementation: 'echo' } },
      { ...opts, expectedVersion: head.version },
    );
    const renamed = await loadDefinition(ref('a', 'tool-calc', 3), store);
    // Version 1 defined `calc`: a request for `renamed` pinned to it does not run it under the new name.
    expect(
      await definitionForTrigger(ref('a', 'tool-calc', 3), renamed, request('renamed', 1), store),
    ).toEqual({
      gone: 'version 1 of tool-calc defines another tool',
    });
  });
});
