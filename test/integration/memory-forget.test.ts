/**
 * The memory room's routes and CLI on the shared local stack (DynamoDB Local, the API function, the indexer, usearch):
 * a person lists their records, and `crumbs memory forget` leaves nothing of a planted canary — no record, no version,
 * no change-log entry, no source turn — in a scan of the whole table, nor in search.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { topology } from '#shared/topology.ts';
import { eventually, localDynamoClient, localStack, uniqueWorkspace } from '../support/local.ts';

async function cli(args: string[], workspace: string): Promise<{ code: number; out: string }> {
  const { api, token } = localStack();
  let out = '';
  const code = await main([...args, '--endpoint', api, '--token', token, '--workspace', workspace], {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      out += s;
    },
    env: {},
  });
  return { code, out };
}

async function search(workspace: string, q: string): Promise<Array<{ id: string }>> {
  const { api, token } = localStack();
  const res = await fetch(
    `${api}/v1/workspaces/${workspace}/breadcrumbs/search?q=${encodeURIComponent(q)}&nn=5`,
    {
      headers: { authorization: `Bearer ${token}` },
    },
  );
  return ((await res.json()) as { items: Array<{ id: string }> }).items;
}

async function scanFor(text: string): Promise<number> {
  const ddb = localDynamoClient();
  let found = 0;
  let start: Record<string, never> | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({ TableName: topology.table.name, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    for (const item of page.Items ?? []) if (JSON.stringify(item).includes(text)) found++;
    start = page.LastEvaluatedKey as typeof start;
  } while (start);
  return found;
}

describe('memory on the local stack', () => {
  it('lists a person’s records and forgets them: a canary is nowhere in the table or the index afterwards', async () => {
    const workspace = uniqueWorkspace('memory');
    const { api, token } = localStack();
    const c = new CrumbsClient({ endpoint: api, token, workspace });
    const canary = `CANARY${Date.now().toString(36)}`;
    // What the person said (the shared stack's token is sub `local`), and a record derived from it, updated once.
    const turn = await c.create({
      schema_name: 'user.message.v1',
      context: { message: `my locker code is ${canary}` },
    });
    const record = await c.create({
      schema_name: 'memory.record.v1',
      title: 'facts: locker',
      tags: ['actor:local', 'memory:facts'],
      context: {
        memory_id: 'facts',
        strategy: 'facts',
        actor: 'local',
        key: 'locker',
        text: `locker code is ${canary}-old`,
        source_turns: [turn.id],
        session: 's',
      },
    });
    await c.update(
      record.id,
      {
        context: {
          memory_id: 'facts',
          strategy: 'facts',
          actor: 'local',
          key: 'locker',
          text: `locker code is ${canary}`,
          source_turns: [turn.id],
          session: 's',
        },
      },
      { ifMatch: record.version },
    );

    const listed = await cli(['memory', 'ls', '--json'], workspace);
    expect(listed.code).toBe(0);
    expect(
      JSON.parse(listed.out).items.map((i: { id: string; version: number }) => [i.id, i.version]),
    ).toEqual([[record.id, 2]]);
    // Searchable before: the indexer embedded both.
    await eventually(async () => ((await search(workspace, canary)).length >= 2 ? true : undefined), 30_000);
    expect(await scanFor(canary)).toBeGreaterThan(0);

    const forgot = await cli(['memory', 'forget'], workspace);
    expect(forgot.code).toBe(0);
    expect(forgot.out).toContain('forgot 1 records of local and 1 of their turns');

    expect(JSON.parse((await cli(['memory', 'ls', '--json'], workspace)).out).items).toEqual([]);
    expect(await search(workspace, canary)).toEqual([]);
    // The table: nothing holds the canary once the publisher has handled the deletions (tag items, change feed).
    await eventually(async () => ((await scanFor(canary)) === 0 ? true : undefined), 30_000);
  });

  it('answers 404 for a record that is another person’s, as for one that does not exist', async () => {
    const workspace = uniqueWorkspace('memory');
    const { api, token } = localStack();
    const c = new CrumbsClient({ endpoint: api, token, workspace });
    const other = await c.create({
      schema_name: 'memory.record.v1',
      tags: ['actor:someone-else', 'memory:facts'],
      context: {
        memory_id: 'facts',
        strategy: 'facts',
        actor: 'someone-else',
        key: 'k',
        text: 't',
        source_turns: [],
        session: 's',
      },
    });
    const res = await fetch(`${api}/v1/workspaces/${workspace}/memory/${other.id}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(404);
  });
});
