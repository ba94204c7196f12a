/**
 * The DynamoDB wait index against DynamoDB Local: entries added once, read oldest first, bounded per key, removed
 * (the item with its last entry), and kept apart by workspace and correlation value.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { DynamoWaitIndex } from '#shared/adapters/dynamodb/wait-index.ts';
import { type Waiter, WaitIndexFullError } from '#shared/ports/wait-index.ts';
import { topology } from '#shared/topology.ts';
import { localDynamoClient, uniqueWorkspace, workspaceItems } from '../support/local.ts';

const client = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());

function waiter(n: number): Waiter {
  return {
    attempt_id: `run-${n}.w.1`,
    run_id: `run-${n}`,
    step: 'w',
    since: `2026-01-01T00:00:0${n}.000Z`,
    until: '2026-01-02T00:00:00.000Z',
  };
}

describe('DynamoWaitIndex (DynamoDB Local)', () => {
  it('adds once, reads oldest first, refuses past the bound, and removes the item with its last entry', async () => {
    const index = new DynamoWaitIndex(topology.table.name, client, 2);
    const ws = uniqueWorkspace('waitidx');
    const key = { workspace: ws, workflow: 'wf', step: 'w', correlation: 'A-1' };
    await index.add(key, waiter(2));
    await index.add(key, waiter(1));
    await index.add(key, waiter(1));
    expect((await index.waiting(key)).map((w) => w.run_id)).toEqual(['run-1', 'run-2']);
    await expect(index.add(key, waiter(3))).rejects.toBeInstanceOf(WaitIndexFullError);

    // Another workspace, another correlation value (a number that prints alike) and no correlation are other keys.
    const elsewhere = { ...key, workspace: uniqueWorkspace('waitidx') };
    expect(await index.waiting(elsewhere)).toEqual([]);
    expect(await index.waiting({ ...key, correlation: 1 })).toEqual([]);
    expect(await index.waiting({ workspace: ws, workflow: 'wf', step: 'w' })).toEqual([]);

    await index.remove(key, 'run-1.w.1');
    await index.remove(key, 'run-1.w.1');
    expect((await index.waiting(key)).map((w) => w.run_id)).toEqual(['run-2']);
    await index.add(key, waiter(3));
    await index.remove(key, 'run-2.w.1');
    await index.remove(key, 'run-3.w.1');
    expect(await index.waiting(key)).toEqual([]);
    expect(await workspaceItems(ws)).toEqual([]);
  });
});
