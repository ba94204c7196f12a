/**
 * The guardrails room end to end on the shared local stack, as a person reaches it: a policy written through the
 * API (a bad pattern refused naming it), tried with `crumbs guardrails test`, a plain put of a policy refused and
 * recorded, and an agent naming the policy asked through `crumbs ask` (and streamed): the offline model quotes
 * what it received, so its answer shows the card masked; no stored breadcrumb but the person's own request holds
 * the number (nor the change stream); the intervention is a `guardrail.event.v1` the thread's route lists.
 */
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { topology } from '#shared/topology.ts';
import {
  api,
  crumbs,
  eventually,
  localDynamoClient,
  localStack,
  settledItems,
  uniqueWorkspace,
} from '../support/local.ts';

const ws = uniqueWorkspace('guardrails');
const CARD = '4111 1111 1111 1111';

async function room(method: string, path: string, body?: unknown) {
  const { api: endpoint, token } = localStack();
  const res = await fetch(`${endpoint}/v1/workspaces/${ws}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function activeDefinition(id: string, schema_name: string, context: Record<string, unknown>) {
  const written = await api(ws).call('PUT', `/${id}`, { schema_name, title: id, context });
  expect(written.status).toBe(201);
  await eventually(async () => {
    const page = await api(ws).call(
      'GET',
      `?schema_name=definition.status.v1&tag=definition:${id}&view=full`,
    );
    const items = (page.body.items ?? []) as { context: { state?: string } }[];
    return items[0]?.context.state === 'active' ? true : undefined;
  }, 30_000);
}

describe('Guardrails on the local stack', () => {
  beforeAll(async () => {
    const policy = await api(ws).call('PUT', '/guardrail-pii', {
      schema_name: 'guardrail.def.v1',
      title: 'pii',
      context: {
        guardrail_id: 'pii',
        pii: [
          { type: 'card', action: 'mask' },
          { type: 'email', action: 'mask' },
          { type: 'aws_access_key', action: 'block' },
        ],
        message: 'Blocked by {policy}.',
      },
    });
    expect(policy.status).toBe(201);
    await activeDefinition('agent-guarded', 'agent.def.v1', {
      agent_id: 'guarded',
      model: 'offline/crumbs',
      guardrails: ['pii'],
      tools: [],
    });
  }, 60_000);

  it('refuses a policy whose pattern has no bound, naming it, and stores nothing', async () => {
    const bad = await api(ws).call('PUT', '/guardrail-bad', {
      schema_name: 'guardrail.def.v1',
      context: {
        guardrail_id: 'bad',
        patterns: [{ name: 'order-number', pattern: 'ORD-\\d+', action: 'mask' }],
      },
    });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('order-number is unbounded');
    expect((await api(ws).call('GET', '/guardrail-bad')).status).toBe(404);
  });

  it('tries a policy on a text with crumbs guardrails test', async () => {
    const masked = await crumbs(
      ws,
      'guardrails',
      'test',
      'pii',
      '--text',
      `card ${CARD} for ann@example.com`,
    );
    expect(masked.code).toBe(0);
    expect(masked.out).toContain('card [CARD_1] for [EMAIL_1]');
    expect(masked.out).not.toContain('4111');
    const blocked = await crumbs(ws, 'guardrails', 'test', 'pii', '--text', 'key AKIAABCDEFGHIJKLMNOP');
    expect(blocked.code).toBe(3);
    expect(blocked.out).toContain('blocked by pii: Blocked by pii.');
    expect(blocked.out).not.toContain('AKIA');
  });

  it('refuses a plain put of a policy and records why on the item', async () => {
    const ddb = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    try {
      await ddb.send(
        new PutCommand({
          TableName: topology.table.name,
          Item: {
            id: 'guardrail-sneaky',
            workspace: ws,
            schema_name: 'guardrail.def.v1',
            context: {
              guardrail_id: 'sneaky',
              applies_to: { agents: ['*'] },
              words: { terms: ['hello'], action: 'block' },
            },
          },
        }),
      );
      const item = await eventually(async () => {
        const out = await ddb.send(
          new GetCommand({ TableName: topology.table.name, Key: { id: 'guardrail-sneaky', workspace: ws } }),
        );
        return out.Item?.ingest_errors !== undefined ? out.Item : undefined;
      }, 20_000);
      expect(JSON.stringify(item.ingest_errors)).toContain('never by a plain put');
      expect(item.kind).toBeUndefined();
    } finally {
      ddb.destroy();
    }
  });

  it('masks a card before the model, keeps it out of every stored breadcrumb, and records the intervention', async () => {
    const asked = await crumbs(ws, 'ask', 'guarded', `Please charge ${CARD} and mail ann@example.com`);
    expect(asked.code).toBe(0);
    // The offline model quotes what it received.
    expect(asked.out).toContain('[CARD_1]');
    expect(asked.out).toContain('[EMAIL_1]');
    expect(asked.out).not.toContain('4111');

    const items = await settledItems(ws);
    const holding = items.filter((i) => JSON.stringify(i).includes('4111'));
    // Only the person's own request (its head) holds what they wrote.
    expect(holding.map((i) => i.schema_name)).toEqual(['agent.request.v1']);
    const vault = items.find((i) => String(i.id).startsWith('#guardrail-vault#'));
    expect(vault?.kind).toBe('guardrail-vault');
    expect(JSON.stringify(vault)).not.toContain('example.com');

    const event = items.find((i) => i.schema_name === 'guardrail.event.v1' && i.kind === 'breadcrumb');
    const context = event?.context as Record<string, unknown>;
    expect(context).toMatchObject({ policy: 'pii', point: 'input', action: 'mask', agent_id: 'guarded' });
    const thread = String(context.thread);
    const listed = await room('GET', `/threads/${encodeURIComponent(thread)}/guardrail-events`);
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain('"type":"card"');
  });

  it('blocks an answer carrying a key the policy blocks, with its message', async () => {
    const asked = await crumbs(ws, 'ask', 'guarded', 'my key is AKIAABCDEFGHIJKLMNOP');
    expect(asked.out).toContain('Blocked by pii.');
    expect(asked.out).not.toContain('AKIA');
  });

  it("lists the workspace's policies with their state", async () => {
    const listed = await room('GET', '/guardrails');
    expect(listed.body.items).toEqual([
      expect.objectContaining({ guardrail_id: 'pii', state: 'active', errors: [] }),
    ]);
  });
});
