import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoBudgetCounters } from '#shared/adapters/dynamodb/budget-counters.ts';
import { DynamoWorkspaceSlots } from '#shared/adapters/dynamodb/workspace-slots.ts';
import { topology } from '#shared/topology.ts';
import { localDynamoClient, uniqueWorkspace, workspaceItems } from '../support/local.ts';

const doc = () =>
  DynamoDBDocumentClient.from(localDynamoClient(), { marshallOptions: { removeUndefinedValues: true } });

describe('DynamoBudgetCounters on DynamoDB Local', () => {
  it('adds concurrent counts into one total per workspace and key, which expires', async () => {
    const ws = uniqueWorkspace();
    const counters = new DynamoBudgetCounters(topology.table.name, doc());
    const totals = await Promise.all(
      Array.from({ length: 10 }, () => counters.add(ws, 'thread#t1', 5, 2_000_000_000)),
    );
    expect(Math.max(...totals)).toBe(50);
    expect(new Set(totals).size).toBe(10);
    expect(await counters.add(uniqueWorkspace(), 'thread#t1', 1, 2_000_000_000)).toBe(1);
    const items = await workspaceItems(ws);
    expect(items).toEqual([
      expect.objectContaining({
        id: '#budget#thread#t1',
        kind: 'budget',
        count: 50,
        expires_at: 2_000_000_000,
      }),
    ]);
  });
});

describe('DynamoWorkspaceSlots on DynamoDB Local', () => {
  it('lets at most cap live holders in, frees a slot on give, and takes over an expired lease', async () => {
    const ws = uniqueWorkspace();
    const slots = new DynamoWorkspaceSlots(topology.table.name, 'executor-agent-sandbox', doc());
    const now = Date.now();
    const taken = await Promise.all(['a', 'b', 'c', 'd'].map((h) => slots.take(ws, h, now + 60_000, 2, now)));
    expect(taken.filter(Boolean)).toHaveLength(2);
    const holder = ['a', 'b', 'c', 'd'][taken.indexOf(true)] as string;
    await slots.give(ws, holder);
    expect(await slots.take(ws, 'e', now + 60_000, 2, now)).toBe(true);
    expect(await slots.take(ws, 'f', now + 60_000, 2, now)).toBe(false);
    // Later, every lease has run out (the holders crashed): a new holder gets in.
    expect(await slots.take(ws, 'g', now + 200_000, 2, now + 120_000)).toBe(true);
    // Another workspace has slots of its own.
    expect(await slots.take(uniqueWorkspace(), 'h', now + 60_000, 2, now)).toBe(true);
  });
});
