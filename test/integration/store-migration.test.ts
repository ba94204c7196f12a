/**
 * A table written by the earlier layout (a version item for every version, a tag item for every tag, heads listed
 * by tag only through those items and in the change log only through their version items) keeps working under
 * the lean write path: read, listed, traced and logged as before, and rewritten on its next update — the tag
 * items its first listed tag and its thread tag no longer need are deleted by the publisher, the rest moved.
 */
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoChangeLog, DynamoThreadIndex } from '#shared/adapters/dynamodb/activity-index.ts';
import { changeLogShard, gsi, translateConfig } from '#shared/adapters/dynamodb/items.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { topology } from '#shared/topology.ts';
import { eventually, localDynamoClient, localStore, uniqueWorkspace } from '../support/local.ts';

const TABLE = topology.table.name;
const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());

/** The items the earlier layout wrote for `record` (its `items.ts` builders, as they were). */
function legacyItems(record: Breadcrumb): Record<string, unknown>[] {
  const { workspace: ws, id } = record;
  const sort = gsi.sort(record.updated_at, id);
  const status = typeof record.context.status === 'string' ? { ctx_status: record.context.status } : {};
  return [
    {
      ...record,
      kind: 'breadcrumb',
      write_id: `legacy-${id}`,
      gsi1pk: gsi.bySchema(ws, record.schema_name),
      gsi1sk: sort,
      ...status,
      ...(record.causation ? { gsi3pk: gsi.byThread(ws, record.causation.thread), gsi3sk: sort } : {}),
    },
    {
      ...record,
      id: `${id}#v#${String(record.version).padStart(10, '0')}`,
      kind: 'version',
      ref: id,
      write_id: `legacy-${id}`,
      ...status,
      gsi3pk: gsi.changeLog(ws, changeLogShard(id)),
      gsi3sk: gsi.changeSort(record.updated_at, id, record.version),
    },
    ...record.tags.map((tag) => ({
      id: `${id}#t#${tag}`,
      workspace: ws,
      kind: 'tag',
      ref: id,
      gsi1pk: gsi.byTag(ws, tag),
      gsi1sk: sort,
      schema_name: record.schema_name,
    })),
  ];
}

function legacyRecord(ws: string, id: string, thread: string): Breadcrumb {
  const at = '2026-01-02T03:04:05.000Z';
  return {
    id,
    workspace: ws,
    schema_name: 'note.text.v1',
    title: 'written by the earlier layout',
    tags: ['first', 'second', `thread:${thread}`],
    context: { n: 1 },
    version: 1,
    checksum: 'a'.repeat(64),
    created_at: at,
    updated_at: at,
    created_by: 'user:old',
    updated_by: 'user:old',
    causation: { caused_by: `${thread}@1`, thread, hop: 1 },
  } as Breadcrumb;
}

async function exists(ws: string, id: string): Promise<boolean> {
  const { Item } = await ddb.send(new GetCommand({ TableName: TABLE, Key: { id, workspace: ws } }));
  return Item !== undefined;
}

describe('a table written by the earlier layout', () => {
  it('is read, listed, traced and logged by the new code, and rewritten on the next update', async () => {
    const ws = uniqueWorkspace();
    const store = localStore();
    const record = legacyRecord(ws, 'old-note', 'old-thread');
    // Valid as a stored record (checksum and all): build it through the store's own rules, then write it old-style.
    const fresh = await store.create(
      ws,
      { schema_name: record.schema_name, title: record.title, tags: record.tags, context: record.context },
      { principal: 'user:old', id: 'template', causation: record.causation! },
    );
    const legacy: Breadcrumb = { ...fresh.breadcrumb, id: record.id };
    for (const item of legacyItems(legacy)) await ddb.send(new PutCommand({ TableName: TABLE, Item: item }));

    // Read as it was.
    expect(await store.get(ws, 'old-note')).toEqual(legacy);
    expect(await store.getVersion(ws, 'old-note', 1)).toEqual(legacy);
    expect((await store.history(ws, 'old-note', { limit: 10 })).items.map((r) => r.version)).toEqual([1]);
    const listedBy = async (tag: string) =>
      (await store.list({ workspace: ws, tag, limit: 10 })).items.filter((r) => r.id === 'old-note').length;
    for (const tag of legacy.tags) expect(await listedBy(tag)).toBe(1);
    const bySchema = await store.list({ workspace: ws, schema_name: 'note.text.v1', limit: 10 });
    expect(bySchema.items.map((r) => r.id)).toContain('old-note');
    const thread = await new DynamoThreadIndex({ tableName: TABLE }).threadHeads(ws, 'old-thread', 100);
    expect(thread.entries.map((e) => e.id)).toContain('old-note');
    const log = new DynamoChangeLog({ tableName: TABLE });
    const changes = () => log.latest(ws, log.cursorAt(new Date(Date.now() + 60_000)), 50);
    expect((await changes()).filter((c) => c.id === 'old-note').map((c) => c.version)).toEqual([1]);

    // The next update writes the new layout; the publisher deletes the tag items no longer needed.
    await store.update(ws, 'old-note', { title: 'rewritten' }, { principal: 'user:new' });
    await eventually(async () => ((await exists(ws, 'old-note#t#first')) ? undefined : true));
    await eventually(async () => ((await exists(ws, 'old-note#t#thread:old-thread')) ? undefined : true));
    const second = await ddb.send(
      new GetCommand({ TableName: TABLE, Key: { id: 'old-note#t#second', workspace: ws } }),
    );
    expect(second.Item?.gsi1sk).toBe(gsi.sort((await store.get(ws, 'old-note')).updated_at, 'old-note'));

    expect((await store.history(ws, 'old-note', { limit: 10 })).items.map((r) => r.version)).toEqual([2, 1]);
    expect((await store.getVersion(ws, 'old-note', 1)).title).toBe(legacy.title);
    for (const tag of legacy.tags) expect(await listedBy(tag)).toBe(1);
    // Each version once in the change log, the old one from its version item, the new one from the head.
    expect((await changes()).filter((c) => c.id === 'old-note').map((c) => c.version)).toEqual([1, 2]);
  });
});
