/**
 * A deleted workspace stays deleted (issue 40.5), on the shared local stack: a workspace whose runs wait on timers
 * (a human step's timeout, a wait_for step's timeout: one-time Scheduler schedules) is deleted with `--force`; the
 * deletion cancels every timer of the workspace, and once every timer's due time has passed the workspace is still
 * empty — nothing fired back into it — and a write to it is refused (410) while its tombstone lasts.
 */
import { ListSchedulesCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { workspaceSchedulePrefix } from '#shared/adapters/scheduler/scheduler-timers.ts';
import { WorkspaceDeletedError } from '#shared/domain/errors.ts';
import { topology } from '#shared/topology.ts';
import {
  api,
  crumbs,
  eventually,
  localDynamoClient,
  localStack,
  uniqueWorkspace,
  workspaceItems,
} from '../support/local.ts';

const TIMEOUT_SECONDS = 12;

/** The names of the workspace's one-time timers in the stack's schedule group. */
async function timersOf(workspace: string): Promise<string[]> {
  const scheduler = new SchedulerClient({
    endpoint: localStack().scheduler,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const out = await scheduler.send(
    new ListSchedulesCommand({
      GroupName: topology.timers.scheduleGroup,
      NamePrefix: workspaceSchedulePrefix('t', workspace),
    }),
  );
  return (out.Schedules ?? []).map((s) => String(s.Name));
}

const held = {
  workflow_id: 'held',
  steps: [{ id: 'ok', human: { prompt: 'ship?' }, timeout_seconds: TIMEOUT_SECONDS }],
};
const waits = {
  workflow_id: 'waits',
  steps: [
    { id: 'ack', wait_for: { selector: { schema_name: 'never.sent.v1' }, timeout_seconds: TIMEOUT_SECONDS } },
  ],
};

describe('a deleted workspace', () => {
  it('has its timers cancelled, stays empty past every due time, and refuses writes', async () => {
    const ws = uniqueWorkspace('deltimers');
    const { call } = api(ws);
    for (const w of [held, waits]) {
      const res = await call('PUT', `/wf-${w.workflow_id}`, { schema_name: 'workflow.def.v1', context: w });
      expect(res.status).toBe(201);
    }
    await eventually(async () => {
      const res = await call('GET', '?schema_name=definition.status.v1&limit=50&view=full');
      const items = (res.body.items as { context: { state: string } }[] | undefined) ?? [];
      return items.length === 2 && items.every((i) => i.context.state === 'active') ? true : undefined;
    }, 45_000);

    const startedAt = Date.now();
    for (const workflow of ['held', 'waits']) {
      const res = await fetch(`${localStack().api}/v1/workspaces/${ws}/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${localStack().token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow, input: {} }),
      });
      expect([201, 202], await res.text()).toContain(res.status);
    }
    // Both runs wait, each with its timeout timer set.
    const set = await eventually(async () => {
      const names = await timersOf(ws);
      return names.length >= 2 ? names : undefined;
    }, 30_000);
    expect(set.length).toBeGreaterThanOrEqual(2);
    expect((await workspaceItems(ws)).some((i) => i.kind === 'wait-index')).toBe(true);

    const res = await crumbs(ws, 'workspace', 'delete', '--yes', '--force', '--json');
    expect(res.code, res.err).toBe(0);
    const done = JSON.parse(res.out) as {
      done: boolean;
      timers_cancelled?: number;
      tombstone_until?: string;
    };
    expect(done.done).toBe(true);
    expect(done.timers_cancelled).toBeGreaterThanOrEqual(2);
    expect(Date.parse(String(done.tombstone_until))).toBeGreaterThan(Date.now() + 24 * 3600 * 1000);
    expect(await timersOf(ws)).toEqual([]);
    expect(await workspaceItems(ws)).toEqual([]);

    // Past every timer's due time (and the local scheduler's tick): nothing came back.
    const due = startedAt + TIMEOUT_SECONDS * 1000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()) + 8000));
    expect(await timersOf(ws)).toEqual([]);
    expect(await workspaceItems(ws)).toEqual([]);

    // A write arriving now is refused, naming when the name is free again, and changes nothing.
    const write = await call('POST', '', { schema_name: 'note.v1', context: { text: 'back?' } });
    expect(write.status).toBe(410);
    expect(JSON.stringify(write.body)).toContain('workspace-deleted');
    // So is a write that comes through no API — an executor's counter, a kind of item added later — since the
    // item layer refuses it for whoever sends it through crumbs' client.
    const counter = crumbsDocumentClient(localDynamoClient()).send(
      new UpdateCommand({
        TableName: topology.table.name,
        Key: { id: '#future#late', workspace: ws },
        UpdateExpression: 'SET kind = :k ADD n :one',
        ExpressionAttributeValues: { ':k': 'future-counter', ':one': 1 },
      }),
    );
    await expect(counter).rejects.toBeInstanceOf(WorkspaceDeletedError);
    expect(await workspaceItems(ws)).toEqual([]);
  });
});
