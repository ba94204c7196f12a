/**
 * Per-workspace quotas on shared capacity, on a local stack of its own (as `crumbs dev
 * --max-definitions-per-workspace 5 --max-rules-per-workspace 3` runs it): the quota store's slots on DynamoDB
 * Local under concurrent takers, then the rule manager end to end — definitions written at once through the API,
 * exactly as many active as the quota allows, the others invalid naming the setting, a deleted definition's slot
 * free again for `crumbs rules sync`, and another workspace unaffected.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { type LocalStack, startLocalStack } from '#local/stack.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { DynamoWorkspaceQuotas } from '#shared/adapters/dynamodb/workspace-quotas.ts';
import { topology } from '#shared/topology.ts';
import { eventually, uniqueWorkspace } from '../support/local.ts';

const TOKEN = 'quota-token';
const MAX_DEFINITIONS = 5;
const MAX_RULES = 3;

let stack: LocalStack;
let documents: DynamoDBDocumentClient;

beforeAll(async () => {
  stack = await startLocalStack({
    apiPort: 0,
    dynamodbPort: 0,
    sqsPort: 0,
    eventbridgePort: 0,
    schedulerPort: 0,
    token: TOKEN,
    seedDemo: false,
    maxDefinitionsPerWorkspace: MAX_DEFINITIONS,
    maxRulesPerWorkspace: MAX_RULES,
  });
  documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: stack.endpoints.dynamodb,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    }),
    translateConfig(),
  );
}, 120_000);

afterAll(async () => {
  documents?.destroy();
  await stack?.stop();
});

const client = (workspace: string) =>
  new CrumbsClient({ endpoint: stack.endpoints.api, token: TOKEN, workspace });

async function crumbs(workspace: string, ...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await main(
    [...args, '--endpoint', stack.endpoints.api, '--token', TOKEN, '--workspace', workspace],
    {
      stdout: (s) => {
        out += s;
      },
      stderr: () => undefined,
      env: {},
    },
  );
  return { code, out };
}

interface Row {
  id: string;
  state: string;
  errors: { path: string; message: string }[];
}

/** The workspace's definitions as `crumbs rules --json` prints them, once `count` of them are settled. */
async function settled(workspace: string, count: number, ready: (rows: Row[]) => boolean = () => true) {
  return eventually(
    async () => {
      const rows = JSON.parse((await crumbs(workspace, 'rules', '--json')).out) as Row[];
      return rows.length === count &&
        rows.every((r) => r.state === 'active' || r.state === 'invalid') &&
        ready(rows)
        ? rows
        : undefined;
    },
    60_000,
    250,
  );
}

const tool = (name: string) => ({
  schema_name: 'tool.def.v1',
  title: name,
  context: { name, implementation: 'echo' },
});

describe('DynamoWorkspaceQuotas on DynamoDB Local', () => {
  it('gives the last slots to exactly as many concurrent takers as the limit, each counted once', async () => {
    const quotas = new DynamoWorkspaceQuotas(topology.table.name, documents);
    const ws = uniqueWorkspace('slots');
    const members = Array.from({ length: 12 }, (_, i) => `def-${i}`);
    // Every member asks twice at once: a retried message must not take two slots.
    const taken = await Promise.all(
      [...members, ...members].map((m) =>
        quotas.acquire(ws, 'rules', m, 4).then((ok) => (ok ? m : undefined)),
      ),
    );
    const holders = new Set(taken.filter((m) => m !== undefined));
    expect(holders.size).toBe(4);
    expect(await quotas.used(ws, 'rules')).toBe(4);
    // Another quota and another workspace count apart.
    expect(await quotas.used(ws, 'definitions')).toBe(0);
    expect(await quotas.acquire(uniqueWorkspace('other'), 'rules', 'def-0', 4)).toBe(true);

    const [first, second] = [...holders];
    // Giving back twice at once frees one slot, once.
    await Promise.all([quotas.release(ws, 'rules', first!), quotas.release(ws, 'rules', first!)]);
    expect(await quotas.used(ws, 'rules')).toBe(3);
    const outsider = members.find((m) => !holders.has(m))!;
    expect(await quotas.acquire(ws, 'rules', outsider, 4)).toBe(true);
    expect(await quotas.acquire(ws, 'rules', first!, 4)).toBe(false);
    // A holder asking again keeps its slot without taking another.
    expect(await quotas.acquire(ws, 'rules', second!, 4)).toBe(true);
    expect(await quotas.used(ws, 'rules')).toBe(4);
  });
});

describe(`the rule manager with at most ${MAX_DEFINITIONS} definitions and ${MAX_RULES} rules per workspace`, () => {
  it('lets exactly the quota through when definitions are written at once, naming the setting for the rest', async () => {
    const ws = 'quota-b';
    const c = client(ws);
    const names = Array.from({ length: 8 }, (_, i) => `echo-${i}`);
    await Promise.all(names.map((n) => c.put(`tool-${n}`, tool(n))));
    const rows = await settled(ws, names.length);
    const active = rows.filter((r) => r.state === 'active');
    const invalid = rows.filter((r) => r.state === 'invalid');
    expect(active).toHaveLength(MAX_RULES);
    expect(invalid).toHaveLength(names.length - MAX_RULES);
    const paths = invalid.map((r) => r.errors[0]?.path).sort();
    // Five hold a definitions slot (three with a rule); the other three got none.
    expect(paths).toEqual([
      'quota.definitions',
      'quota.definitions',
      'quota.definitions',
      'quota.rules',
      'quota.rules',
    ]);
    for (const row of invalid) {
      expect(row.errors[0]?.message).toMatch(
        row.errors[0]?.path === 'quota.rules'
          ? /is at its quota of 3 rules on the event bus pool \(CRUMBS_MAX_RULES_PER_WORKSPACE/
          : /is at its quota of 5 definitions \(CRUMBS_MAX_DEFINITIONS_PER_WORKSPACE/,
      );
    }
    // Another workspace has quotas of its own.
    const other = client('quota-a');
    await other.put('tool-mine', tool('mine'));
    expect(await settled('quota-a', 1)).toMatchObject([{ state: 'active' }]);

    // Deleting an active definition frees its slots; `crumbs rules sync` then places a refused one.
    await c.delete(active[0]!.id);
    await settled(ws, names.length - 1);
    expect((await crumbs(ws, 'rules', 'sync')).code).toBe(0);
    const after = await settled(
      ws,
      names.length - 1,
      (r) => r.filter((x) => x.state === 'active').length === MAX_RULES,
    );
    expect(after.filter((r) => r.state === 'active')).toHaveLength(MAX_RULES);
    const quotas = new DynamoWorkspaceQuotas(topology.table.name, documents);
    expect(await quotas.used(ws, 'rules')).toBe(MAX_RULES);
    expect(await quotas.used(ws, 'definitions')).toBe(MAX_DEFINITIONS);
  }, 120_000);
});
