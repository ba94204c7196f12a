/**
 * Large contexts spill: a 2 MB context goes through the API and an executor (the echo tool answers it whole), no
 * table item of the workspace nears 400 KB, the change events carry a reference, and a context past the operator's
 * limit is refused naming it.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { translateConfig } from '#shared/adapters/dynamodb/items.ts';
import { DEFAULT_ATTACHMENT_LIMITS } from '#shared/rooms/attachments/reference.ts';
import { S3BlobStore } from '#shared/rooms/attachments/s3-blob-store.ts';
import { ContextSpill } from '#shared/rooms/attachments/spill.ts';
import { topology } from '#shared/topology.ts';
import {
  api,
  eventually,
  localDynamoClient,
  localStack,
  uniqueWorkspace,
  workspaceItems,
} from '../../support/local.ts';

const MB = 1024 * 1024;

function blobs() {
  const client = new S3Client({
    endpoint: localStack().blobs,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  });
  return new S3BlobStore({ bucket: topology.blobs.bucketName, client });
}

describe('contexts larger than an item', () => {
  it('round-trips a 2 MB context through the API and the echo tool, with no item over 400 KB', async () => {
    const ws = uniqueWorkspace('spill');
    const c = api(ws);
    const def = await c.call('PUT', '/echo-big', {
      schema_name: 'tool.def.v1',
      title: 'echo',
      context: { name: 'echo-big', implementation: 'echo' },
    });
    expect(def.status).toBe(201);
    await eventually(async () => {
      const page = await c.call('GET', '?schema_name=definition.status.v1&tag=definition:echo-big&view=full');
      const s = (page.body.items as { context: { state: string } }[] | undefined)?.[0]?.context;
      return s?.state === 'active' ? true : undefined;
    }, 30_000);

    const blob = 'x'.repeat(2 * MB);
    const request = await c.call('POST', '', {
      schema_name: 'tool.request.v1',
      tags: ['request:big'],
      context: { tool: 'echo-big', input: { blob }, requestId: 'big' },
    });
    expect(request.status, JSON.stringify(request.body).slice(0, 300)).toBe(201);
    expect((request.body.context as { input: { blob: string } }).input.blob.length).toBe(2 * MB);

    const read = await c.call('GET', `/${String(request.body.id)}?view=full`);
    expect((read.body.context as { input: { blob: string } }).input.blob.length).toBe(2 * MB);

    const answer = await eventually(async () => {
      const page = await c.call('GET', '?schema_name=tool.response.v1&tag=request:big&view=full');
      return (page.body.items as { context: Record<string, unknown> }[] | undefined)?.[0];
    }, 30_000);
    expect(JSON.stringify(answer.context)).toContain(blob);

    const items = await workspaceItems(
      ws,
      DynamoDBDocumentClient.from(localDynamoClient(), translateConfig()),
    );
    const largest = Math.max(...items.map((i) => Buffer.byteLength(JSON.stringify(i))));
    expect(largest).toBeLessThan(DEFAULT_ATTACHMENT_LIMITS.inlineContextBytes + 16 * 1024);
    expect(items.some((i) => JSON.stringify(i).includes('"$spilled"'))).toBe(true);
  });

  it('refuses a context past the operator limit, naming it, and a body past what a request carries', async () => {
    const ws = uniqueWorkspace('spill');
    const store = new DynamoBreadcrumbStore({
      tableName: topology.table.name,
      client: DynamoDBDocumentClient.from(localDynamoClient(), translateConfig()),
      spill: new ContextSpill(blobs(), DEFAULT_ATTACHMENT_LIMITS),
    });
    await expect(
      store.create(
        ws,
        { schema_name: 'a.b.v1', title: '', tags: [], context: { blob: 'x'.repeat(60 * MB) } },
        {
          principal: 'tool:test',
        },
      ),
    ).rejects.toThrow(/at most 52428800 bytes \(the operator's limit, CRUMBS_ATTACHMENT_MAX_CONTEXT_BYTES\)/);

    const tooBig = await api(ws).call('POST', '', {
      schema_name: 'a.b.v1',
      context: { blob: 'x'.repeat(6 * MB) },
    });
    expect(tooBig.status).toBe(413);
    expect(JSON.stringify(tooBig.body)).toContain('attachments');
    expect(
      await workspaceItems(ws, DynamoDBDocumentClient.from(localDynamoClient(), translateConfig())),
    ).toEqual([]);
  });
});
