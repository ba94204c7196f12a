/**
 * Per-schema TTL defaults: a `schema.def.v1` tagged `defines:<schema>` with `ttl_seconds` gives every breadcrumb
 * of that schema written without `expires_at` one — through the API, the store as executors use it, and plain
 * puts alike — while an explicit `expires_at` wins and other schemas keep none.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { topology } from '#shared/topology.ts';
import { api, eventually, localDynamoClient, localStore, uniqueWorkspace } from '../support/local.ts';

const HOUR = 3600;

async function defineTtl(ws: string, schema: string, ttlSeconds: unknown) {
  return api(ws).call('PUT', `/schema-${schema.replaceAll('.', '-')}`, {
    schema_name: 'schema.def.v1',
    tags: [`defines:${schema}`],
    context: { ttl_seconds: ttlSeconds },
  });
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

describe('per-schema TTL defaults', () => {
  it('gives API writes of the schema an expiry, keeps an explicit one, and leaves other schemas alone', async () => {
    const ws = uniqueWorkspace('ttl');
    const a = api(ws);
    expect((await defineTtl(ws, 'temp.note.v1', HOUR)).status).toBe(201);

    const before = nowSeconds();
    const temp = await a.call('POST', '', { schema_name: 'temp.note.v1', context: { text: 'soon gone' } });
    expect(temp.status).toBe(201);
    expect(Number(temp.body.expires_at)).toBeGreaterThanOrEqual(before + HOUR);
    expect(Number(temp.body.expires_at)).toBeLessThanOrEqual(nowSeconds() + HOUR);

    const explicit = await a.call('POST', '', {
      schema_name: 'temp.note.v1',
      context: { text: 'kept longer' },
      expires_at: 4_000_000_000,
    });
    expect(explicit.body.expires_at).toBe(4_000_000_000);

    const other = await a.call('POST', '', { schema_name: 'note.v1', context: { text: 'stays' } });
    expect(other.body.expires_at).toBeUndefined();
  });

  it('gives a PUT that replaces a breadcrumb without expires_at the schema default again, not no expiry', async () => {
    const ws = uniqueWorkspace('ttl');
    const a = api(ws);
    expect((await defineTtl(ws, 'temp.doc.v1', HOUR)).status).toBe(201);
    const body = { schema_name: 'temp.doc.v1', context: { text: 'v1' } };
    const first = await a.call('PUT', '/doc-1', body);
    expect(first.status).toBe(201);
    const firstExpiry = Number(first.body.expires_at);
    expect(firstExpiry).toBeGreaterThanOrEqual(nowSeconds() - 5 + HOUR);

    // The same content again: nothing written (no new version), whatever the clock says now.
    const again = await a.call('PUT', '/doc-1', body);
    expect(again.status).toBe(200);
    expect(again.body.version).toBe(1);

    // New content without expires_at: the schema default, renewed from now (it used to be cleared).
    const before = nowSeconds();
    const replaced = await a.call('PUT', '/doc-1', { ...body, context: { text: 'v2' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.version).toBe(2);
    expect(Number(replaced.body.expires_at)).toBeGreaterThanOrEqual(before + HOUR);

    // An explicit expiry still wins, and a later replace with it unchanged is a no-op.
    const explicit = await a.call('PUT', '/doc-1', {
      ...body,
      context: { text: 'v3' },
      expires_at: 4_000_000_000,
    });
    expect(explicit.body).toMatchObject({ version: 3, expires_at: 4_000_000_000 });
    const same = await a.call('PUT', '/doc-1', {
      ...body,
      context: { text: 'v3' },
      expires_at: 4_000_000_000,
    });
    expect(same.body.version).toBe(3);

    // A schema without a default: a replace without expires_at clears an explicit one, as before.
    const plain = { schema_name: 'plain.doc.v1', context: { text: 'a' }, expires_at: 4_000_000_000 };
    expect((await a.call('PUT', '/doc-2', plain)).status).toBe(201);
    const cleared = await a.call('PUT', '/doc-2', { schema_name: 'plain.doc.v1', context: { text: 'b' } });
    expect(cleared.body.expires_at).toBeUndefined();
  });

  it('gives the schema default to writes through the store (as executors and tools make them) and to plain puts', async () => {
    const ws = uniqueWorkspace('ttl');
    expect((await defineTtl(ws, 'session.event.v1', 2 * HOUR)).status).toBe(201);

    const before = nowSeconds();
    const { breadcrumb } = await localStore().create(
      ws,
      { schema_name: 'session.event.v1', title: '', tags: [], context: { n: 1 } },
      { principal: 'agent:helper', id: 'answer-1' },
    );
    expect(breadcrumb.expires_at).toBeGreaterThanOrEqual(before + 2 * HOUR);

    await localDynamoClient().send(
      new PutItemCommand({
        TableName: topology.table.name,
        Item: {
          id: { S: 'by-hand' },
          workspace: { S: ws },
          schema_name: { S: 'session.event.v1' },
          context: { M: { n: { N: '2' } } },
        },
      }),
    );
    const adopted = await eventually(async () => {
      const res = await api(ws).call('GET', '/by-hand/full');
      return res.status === 200 ? res.body : undefined;
    });
    expect(Number(adopted.expires_at)).toBeGreaterThanOrEqual(before + 2 * HOUR);
  });

  it('refuses a schema definition whose ttl_seconds is not whole seconds up to ten years, naming the field', async () => {
    const ws = uniqueWorkspace('ttl');
    for (const bad of [0, -5, 1.5, '3600', 10 * 366 * 24 * HOUR]) {
      const res = await defineTtl(ws, 'temp.note.v1', bad);
      expect(res.status, String(bad)).toBe(422);
      expect(res.body.errors, String(bad)).toEqual([
        expect.objectContaining({ path: 'context.ttl_seconds' }),
      ]);
    }
  });
});
