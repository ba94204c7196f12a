/**
 * The crumbs API on an in-memory store, for unit tests of what calls it in process (the MCP and A2A servers): no
 * change stream or thread index (their routes fail if called), and definitions made active as the rule manager
 * would, by writing their status.
 */
import { createApi } from '#shared/core/api/api.ts';
import type { ChangeLog, ThreadIndex } from '#shared/ports/activity.ts';
import { InMemoryBreadcrumbStore } from './breadcrumb-store.ts';

export function inMemoryApi() {
  const store = new InMemoryBreadcrumbStore();
  const unused = async () => {
    throw new Error('not used');
  };
  const api = createApi({
    store,
    activity: {
      store,
      threads: { versions: unused } as unknown as ThreadIndex,
      changes: {
        read: unused,
        latest: unused,
        cursorAt: () => '',
        checkCursor: (c: string) => c,
      } as ChangeLog,
      stream: { maxWaitMs: 0, settleMs: 0, pollMs: 50 },
    },
  });
  return { store, api };
}

/** Writes a definition (id `id`, version 1) and the rule manager's status saying it is active. */
export async function activeDefinition(
  store: InMemoryBreadcrumbStore,
  workspace: string,
  id: string,
  schemaName: string,
  context: Record<string, unknown>,
): Promise<void> {
  await store.create(
    workspace,
    { schema_name: schemaName, title: id, tags: [], context },
    { principal: 'user:ann', id },
  );
  await store.create(
    workspace,
    {
      schema_name: 'definition.status.v1',
      title: 'status',
      tags: ['definition-status', `definition:${id}`],
      context: { definition_id: id, definition_version: 1, state: 'active' },
    },
    { principal: 'system:rule-manager' },
  );
}
