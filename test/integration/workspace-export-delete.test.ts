/**
 * `crumbs workspace export|delete` against the shared local stack, through the API and the CLI as a user runs
 * them: the export holds every version of every breadcrumb; the deletion leaves no item of the workspace in
 * DynamoDB Local (scanned directly) and no rule of it on the local EventBridge, resumes after being stopped
 * midway, refuses while a run is active, and leaves another workspace with the same ids as it was.
 */

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient, ListRulesCommand } from '@aws-sdk/client-eventbridge';
import { GetScheduleCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { deletionRecordKey } from '#shared/adapters/dynamodb/workspace-seal.ts';
import { scheduleNameFor } from '#shared/adapters/scheduler/scheduler-timers.ts';
import { topology } from '#shared/topology.ts';
import {
  crumbs,
  eventually,
  localDynamoClient,
  localStack,
  localStore,
  settledItems,
  uniqueWorkspace,
  workspaceItems,
} from '../support/local.ts';

function client(workspace: string): CrumbsClient {
  return new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace });
}

async function deleteCall(
  workspace: string,
  query = '',
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${localStack().api}/v1/workspaces/${workspace}${query}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${localStack().token}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function definitionsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crumbs-ws-defs-'));
  writeFileSync(
    join(dir, 'echo.json'),
    JSON.stringify({ schema_name: 'tool.def.v1', context: { name: 'echo', implementation: 'echo' } }),
  );
  return dir;
}

async function rulesOf(workspace: string): Promise<string[]> {
  const events = new EventBridgeClient({
    endpoint: localStack().eventbridge,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const out = await events.send(
    new ListRulesCommand({
      EventBusName: topology.bus.name,
      NamePrefix: `${topology.bus.ruleNamePrefix}${workspace}-`,
    }),
  );
  return (out.Rules ?? []).map((r) => String(r.Name));
}

/** Whether the schedule of the workspace's `schedule.def.v1` `id` exists (named as `scheduler-timers.ts` names it). */
async function hasSchedule(workspace: string, id: string): Promise<boolean> {
  const scheduler = new SchedulerClient({
    endpoint: localStack().scheduler,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const name = scheduleNameFor('s', workspace, id);
  try {
    await scheduler.send(new GetScheduleCommand({ Name: name, GroupName: topology.timers.scheduleGroup }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return false;
    throw error;
  }
}

const yearly = {
  schema_name: 'schedule.def.v1',
  title: 'yearly',
  context: {
    schedule_id: 'yearly',
    cron: '0 0 1 1 ? *',
    breadcrumb: { schema_name: 'note.v1', tags: ['scheduled'], context: { n: 0 } },
  },
};

/** Breadcrumbs under the same ids in both workspaces, with history and a deletion. */
async function populate(workspace: string): Promise<void> {
  const c = client(workspace);
  await c.put('shared-a', { schema_name: 'note.v1', title: 'a', context: { n: 1 }, tags: ['t:x', 't:y'] });
  await c.update('shared-a', { context: { n: 2 } });
  await c.update('shared-a', { context: { n: 3 }, tags: ['t:z'] });
  await c.put('shared-b', { schema_name: 'note.v1', title: 'b', context: { n: 1 } });
  await c.put('shared-c', { schema_name: 'note.v1', title: 'c', context: { n: 1 } });
  await c.delete('shared-c');
  await c.create({ schema_name: 'note.v1', title: 'd', context: { n: 1 } }, { idempotencyKey: 'k-1' });
}

describe('crumbs workspace export', () => {
  it('writes every version of every breadcrumb, oldest first, equal to the stored versions', async () => {
    const ws = uniqueWorkspace('export');
    await populate(ws);
    const c = client(ws);
    const expected = [
      'shared-a@1',
      'shared-a@2',
      'shared-a@3',
      'shared-b@1',
      'shared-c@1',
      'shared-c deleted@1',
    ];
    const file = join(mkdtempSync(join(tmpdir(), 'crumbs-export-')), 'ws.jsonl');
    // The change log trails writes by its index's propagation: read until every change is there.
    const lines = await eventually(async () => {
      const res = await crumbs(ws, 'workspace', 'export', '-o', file, '--limit', '2');
      expect(res.code).toBe(0);
      const read = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      return read.length === expected.length + 1 ? read : undefined;
    });
    const refs = lines
      .filter((l) => l.title !== 'd')
      .map((l) => (l.deleted === true ? `${l.id} deleted@${l.version}` : `${l.id}@${l.version}`))
      .sort();
    expect(refs).toEqual(expected.sort());
    // Oldest first per breadcrumb; each line is the stored version as `GET …/versions/{n}?view=full` answers it.
    const a = lines.filter((l) => l.id === 'shared-a');
    expect(a.map((l) => l.version)).toEqual([1, 2, 3]);
    for (const line of lines.filter((l) => l.deleted !== true && l.id !== 'shared-c')) {
      const stored = await c.getVersion(String(line.id), Number(line.version));
      expect(line).toEqual(stored);
    }
    expect(a[2]?.tags).toEqual(['t:z']);
    // Pages with a bad cursor are a 400 naming the cursor.
    const bad = await fetch(`${localStack().api}/v1/workspaces/${ws}/export?cursor=nope`, {
      headers: { authorization: `Bearer ${localStack().token}` },
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('cursor');
  });
});

describe('crumbs workspace delete', () => {
  it('deletes everything of the workspace, its rules too, resumes after a stop, and leaves a workspace with the same ids intact', async () => {
    const ws = uniqueWorkspace('del');
    const other = uniqueWorkspace('keep');
    for (const w of [ws, other]) {
      expect((await crumbs(w, 'apply', '-f', definitionsDir())).code).toBe(0);
      await client(w).put('yearly', yearly);
      await populate(w);
    }
    await eventually(async () => ((await rulesOf(ws)).length === 1 ? true : undefined));
    await eventually(async () => ((await hasSchedule(ws, 'yearly')) ? true : undefined));
    await eventually(async () => ((await hasSchedule(other, 'yearly')) ? true : undefined));
    // note.v1 is embedded (DEFAULT_EMBEDDED_SCHEMAS): its embeddings' ledger items are items of the workspace too.
    const embedded = await eventually(async () => {
      const items = await workspaceItems(ws);
      return items.some((i) => i.kind === 'embedding') ? items : undefined;
    });
    expect(embedded.length).toBeGreaterThan(0);
    const otherBefore = await settledItems(other);
    const otherRules = await rulesOf(other);
    expect(otherRules).toHaveLength(1);
    await settledItems(ws);

    // One step, then the "crash": the job's progress is in the table.
    const first = await deleteCall(ws, '?steps=1');
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ done: false, resumed: false });
    const second = await deleteCall(ws, '?steps=1');
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ done: false, resumed: true });
    // The job's progress is kept beside the workspace, in the table's own partition.
    const record = await crumbsDocumentClient(localDynamoClient()).send(
      new GetCommand({ TableName: topology.table.name, Key: deletionRecordKey(ws), ConsistentRead: true }),
    );
    expect(record.Item).toMatchObject({ kind: 'workspace-deletion', phase: expect.any(String) });

    const res = await crumbs(ws, 'workspace', 'delete', '--yes', '--json');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ workspace: ws, done: true, resumed: true });
    // Nothing of it is left in the table, nor on the bus.
    expect(await settledItems(ws)).toEqual([]);
    expect(await rulesOf(ws)).toEqual([]);
    expect(await hasSchedule(ws, 'yearly')).toBe(false);
    expect((await client(ws).list({ schema_name: 'note.v1' })).items).toEqual([]);
    // The other workspace, with the same ids, is as it was.
    expect(await settledItems(other)).toEqual(otherBefore);
    expect(await rulesOf(other)).toEqual(otherRules);
    expect(await hasSchedule(other, 'yearly')).toBe(true);
    expect((await client(other).get('shared-a')).context).toEqual({ n: 3 });

    // Running it again on an empty workspace is done at once.
    const again = await crumbs(ws, 'workspace', 'delete', '--yes');
    expect(again.code).toBe(0);
    expect(await workspaceItems(ws)).toEqual([]);
  });

  it('refuses while a run is active, naming it, unless forced; refuses without --yes', async () => {
    const ws = uniqueWorkspace('delrun');
    await populate(ws);
    const { breadcrumb: run } = await localStore().create(
      ws,
      {
        schema_name: 'workflow.run.v1',
        title: 'a run',
        context: { run_id: 'r1', workflow: 'w', status: 'waiting', steps: {} },
        tags: [],
      },
      { principal: 'workflow:w' },
    );
    await eventually(async () =>
      (await client(ws).list({ schema_name: 'workflow.run.v1' })).items.length === 1 ? true : undefined,
    );
    // note.v1 is embedded: the indexer writes the three live notes' embeddings behind the writes.
    await eventually(async () =>
      (await workspaceItems(ws)).filter((i) => i.kind === 'embedding').length === 3 ? true : undefined,
    );
    const before = await settledItems(ws);

    const refused = await deleteCall(ws);
    expect(refused.status).toBe(409);
    expect(String(refused.body.detail)).toContain(run.id);
    expect(await workspaceItems(ws)).toEqual(before);

    const noYes = await crumbs(ws, 'workspace', 'delete');
    expect(noYes.code).toBe(2);
    expect(noYes.err).toContain('--yes');

    const cli = await crumbs(ws, 'workspace', 'delete', '--yes');
    expect(cli.code).toBe(1);
    expect(cli.err).toContain(run.id);

    const forced = await crumbs(ws, 'workspace', 'delete', '--yes', '--force');
    expect(forced.code).toBe(0);
    expect(await settledItems(ws)).toEqual([]);
  });

  it('answers a bad parameter with a 400 naming it, and a token of another workspace with a 403; deletes nothing', async () => {
    const ws = uniqueWorkspace('delbad');
    await populate(ws);
    const before = await settledItems(ws);
    const res = await deleteCall(ws, '?force=yes');
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('force');
    expect(await workspaceItems(ws)).toEqual(before);
    // A token scoped to another workspace can neither export nor delete this one.
    const { api, scopedToken } = localStack();
    for (const [method, path] of [
      ['DELETE', `/v1/workspaces/${ws}?force=true`],
      ['GET', `/v1/workspaces/${ws}/export`],
    ] as const) {
      const refused = await fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${scopedToken}` },
      });
      expect(refused.status, `${method} ${path}`).toBe(403);
    }
    expect(await workspaceItems(ws)).toEqual(before);
  });
});
