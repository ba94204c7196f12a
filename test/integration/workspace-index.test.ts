/**
 * The workspace index (gsi5) on DynamoDB Local: every item a busy workspace holds is in it, whatever its kind (kinds
 * a later change adds included: the item layer adds the key to every write); a workspace's deletion reads only that
 * workspace's items through it, never the table; and a table written before the index existed is swept by a Scan
 * (said so) until `crumbs table backfill-index` completes its index.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { main } from '#cli/main.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { ensureTable } from '#local/provision.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { workspaceIndexKey, workspaceIndexMarker } from '#shared/adapters/dynamodb/workspace-index.ts';
import { DynamoWorkspaceSweeper } from '#shared/adapters/dynamodb/workspace-sweeper.ts';
import { topology } from '#shared/topology.ts';
import {
  api,
  eventually,
  localDynamoClient,
  localStack,
  settledItems,
  uniqueWorkspace,
  workspaceItems,
} from '../support/local.ts';

interface Sent {
  command: string;
  input: Record<string, unknown>;
  /** Items the request read (Query and Scan: ScannedCount). */
  read: number;
}

/** crumbs' client on DynamoDB Local, recording every request and how many items each read. */
function recordingClient(): { client: DynamoDBDocumentClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = crumbsDocumentClient(localDynamoClient());
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const output = out.output as { ScannedCount?: number };
      sent.push({
        command: String(context.commandName),
        input: args.input as Record<string, unknown>,
        read: output.ScannedCount ?? 0,
      });
      return out;
    },
    { step: 'initialize', name: 'recordReads' },
  );
  return { client, sent };
}

/** Sweeps a workspace to its end, as the deletion's sweep phase does. */
async function sweepAll(sweeper: DynamoWorkspaceSweeper, workspace: string) {
  let cursor: string | undefined;
  let deleted = 0;
  let scanned = false;
  do {
    const page = await sweeper.sweep(workspace, cursor);
    deleted += page.deleted;
    scanned ||= page.scanned === true;
    cursor = page.cursor;
  } while (cursor !== undefined);
  return { deleted, scanned };
}

describe('the workspace index', () => {
  it('holds every item a busy workspace has, of every kind, under its workspace', async () => {
    const ws = uniqueWorkspace('wsx');
    const call = api(ws).call;
    // Definitions (status, quota slots), schema settings, an idempotent create, an update, a delete, further tags,
    // an embedded note, a tool round trip (claim, answer) with its budget counters.
    expect(
      (
        await call('PUT', '/echo', {
          schema_name: 'tool.def.v1',
          context: { name: 'echo', implementation: 'echo' },
        })
      ).status,
    ).toBe(201);
    await call('POST', '', {
      schema_name: 'schema.def.v1',
      tags: ['defines:note.v1'],
      context: { ttl_seconds: 3600 },
    });
    const created = await call(
      'POST',
      '',
      { schema_name: 'note.v1', tags: ['a', 'b', 'c'], context: { text: 'zebras' } },
      { 'idempotency-key': 'k1' },
    );
    const id = String(created.body.id);
    await call('PATCH', `/${id}`, { context: { text: 'zebras graze' } }, { 'if-match': '1' });
    const gone = await call('POST', '', { schema_name: 'note.text.v1', context: { n: 1 } });
    await call('DELETE', `/${String(gone.body.id)}`);
    await eventually(async () => {
      const page = await call('GET', '?schema_name=definition.status.v1&tag=definition:echo&view=full');
      const status = (page.body.items as { context: { state?: string } }[] | undefined)?.[0];
      return status?.context.state === 'active' ? true : undefined;
    }, 45_000);
    await call('POST', '', {
      schema_name: 'tool.request.v1',
      context: { tool: 'echo', input: { x: 1 }, requestId: 'r1', requestedBy: 'tester' },
    });
    await eventually(async () => {
      const res = await call('GET', '?schema_name=tool.response.v1&tag=request:r1');
      return (res.body.items as unknown[] | undefined)?.[0];
    }, 30_000);
    const items = await settledItems(ws);
    const kinds = new Set(items.map((i) => String(i.kind)));
    for (const kind of ['breadcrumb', 'version', 'tag', 'tombstone', 'deletion', 'idempotency', 'claim'])
      expect(kinds, kind).toContain(kind);
    expect(kinds).toContain('schema-hints');
    for (const item of items) {
      expect(item.gsi5pk, `${String(item.kind)} ${String(item.id)}`).toBe(
        workspaceIndexKey(ws, String(item.id)),
      );
    }
  });

  it("lets a deletion read only the workspace's items, never the table, and find every kind", async () => {
    const ws = uniqueWorkspace('wsx-del');
    const other = uniqueWorkspace('wsx-big');
    const writer = crumbsDocumentClient(localDynamoClient());
    // Items of kinds crumbs writes, and a kind no code here knows (a counter a later change might add, created by an
    // update as counters are): the item layer indexes them all alike.
    const kinds = ['claim', 'budget', 'usage', 'wait-index', 'version', 'tag', 'quota-slot'];
    for (let i = 0; i < 35; i++) {
      await writer.send(
        new PutCommand({
          TableName: topology.table.name,
          Item: { id: `#${kinds[i % kinds.length]}#${i}`, workspace: ws, kind: kinds[i % kinds.length] },
        }),
      );
    }
    for (let i = 0; i < 5; i++) {
      await writer.send(
        new UpdateCommand({
          TableName: topology.table.name,
          Key: { id: `#future#${i}`, workspace: ws },
          UpdateExpression: 'SET kind = :k ADD n :one',
          ExpressionAttributeValues: { ':k': 'future-counter', ':one': 1 },
        }),
      );
    }
    for (let i = 0; i < 300; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, j) =>
          writer.send(
            new PutCommand({
              TableName: topology.table.name,
              Item: { id: `#claim#${i + j}`, workspace: other, kind: 'claim' },
            }),
          ),
        ),
      );
    }
    const before = await workspaceItems(ws);
    expect(before).toHaveLength(40);
    const otherBefore = await workspaceItems(other);

    const { client, sent } = recordingClient();
    const result = await sweepAll(new DynamoWorkspaceSweeper(topology.table.name, client, 10), ws);
    expect(result).toEqual({ deleted: 40, scanned: false });
    expect(await workspaceItems(ws)).toEqual([]);
    expect(await workspaceItems(other)).toEqual(otherBefore);
    // What it read: the index's partitions of this workspace, and nothing else of the table.
    const reads = sent.filter((s) => ['QueryCommand', 'ScanCommand'].includes(s.command));
    expect(reads.map((s) => s.command)).not.toContain('ScanCommand');
    for (const q of reads) {
      expect(q.input.IndexName).toBe('gsi5');
      expect(String((q.input.ExpressionAttributeValues as Record<string, unknown>)[':pk'])).toMatch(
        new RegExp(`^${ws}#w#[0-7]$`),
      );
    }
    expect(reads.reduce((n, q) => n + q.read, 0)).toBe(40);
    // The table's own partition says the index is complete (the local stack made the table).
    expect((await workspaceIndexMarker(client, topology.table.name))?.complete_at).toEqual(
      expect.any(String),
    );
  });

  it('sweeps a table written before the index by a Scan, and by the index once `crumbs table backfill-index` ran', async () => {
    const table = `crumbs-legacy-${uniqueWorkspace('t')}`;
    const raw = localDynamoClient();
    await ensureTable(raw, { ...topology.table, name: table });
    // An older crumbs wrote without the index key.
    const legacy = DynamoDBDocumentClient.from(localDynamoClient(), translateConfig());
    const write = async (ws: string, n: number) => {
      for (let i = 0; i < n; i++) {
        await legacy.send(
          new PutCommand({ TableName: table, Item: { id: `#claim#${i}`, workspace: ws, kind: 'claim' } }),
        );
      }
    };
    const ws = uniqueWorkspace('legacy');
    await write(ws, 12);
    await write(uniqueWorkspace('legacy-other'), 30);
    const { client, sent } = recordingClient();
    const first = await sweepAll(new DynamoWorkspaceSweeper(table, client), ws);
    expect(first).toEqual({ deleted: 12, scanned: true });
    expect(sent.map((s) => s.command)).toContain('ScanCommand');

    const again = uniqueWorkspace('legacy-again');
    await write(again, 7);
    const env = {
      AWS_ENDPOINT_URL_DYNAMODB: localStack().dynamodb,
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    };
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    let out = '';
    let code: number;
    try {
      code = await main(['table', 'backfill-index', '--table', table, '--segments', '2'], {
        stdout: (s) => {
          out += s;
        },
        stderr: () => {},
        env: {},
      });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(code).toBe(0);
    expect(out).toContain('37 given their workspace index key');
    expect(out).toContain('index complete since');
    sent.length = 0;
    const second = await sweepAll(new DynamoWorkspaceSweeper(table, client), again);
    expect(second).toEqual({ deleted: 7, scanned: false });
    expect(sent.map((s) => s.command)).not.toContain('ScanCommand');
    await raw.send(new DeleteTableCommand({ TableName: table }));
  });
});
