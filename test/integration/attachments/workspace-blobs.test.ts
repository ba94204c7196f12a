/** A workspace's export and deletion include its blobs: attachments and spilled contexts. */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { S3BlobStore } from '#shared/rooms/attachments/s3-blob-store.ts';
import { topology } from '#shared/topology.ts';
import { png } from '../../support/attachment-files.ts';
import { crumbs, localStack, uniqueWorkspace } from '../../support/local.ts';

const blobs = () =>
  new S3BlobStore({
    bucket: topology.blobs.bucketName,
    client: new S3Client({
      endpoint: localStack().blobs,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      forcePathStyle: true,
    }),
  });

async function keysOf(ws: string): Promise<string[]> {
  const keys: string[] = [];
  for (const prefix of [`ws/${ws}/`, `staging/${ws}/`, `finalized/${ws}/`]) {
    for await (const o of blobs().list(prefix)) keys.push(o.key);
  }
  return keys;
}

describe("a workspace's blobs", () => {
  it('are exported with --blobs and deleted with the workspace; another workspace keeps the same bytes', async () => {
    const ws = uniqueWorkspace('blobs');
    const other = uniqueWorkspace('blobs-keep');
    const { api, token } = localStack();
    const image = png(5, 5, 4);
    const big = 'y'.repeat(200 * 1024);
    for (const w of [ws, other]) {
      const c = new CrumbsClient({ endpoint: api, token, workspace: w });
      const ref = await c.attach(image, 'image/png', 'a.png');
      await c.create({ schema_name: 'note.v1', context: { shot: { $attachment: ref }, big } });
      await c.attachment(ref.id);
    }
    const staged = await new CrumbsClient({ endpoint: api, token, workspace: ws }).attach(
      Buffer.concat([image, Buffer.alloc(0)]),
      'image/png',
      'same.png',
    );
    expect(staged.id).toMatch(/^att_/);
    expect((await keysOf(ws)).filter((k) => k.includes('/blobs/'))).toHaveLength(2);

    const dir = await mkdtemp(join(tmpdir(), 'crumbs-export-'));
    try {
      const out = await crumbs(
        ws,
        'workspace',
        'export',
        '-o',
        join(dir, 'lines.jsonl'),
        '--blobs',
        join(dir, 'blobs'),
      );
      expect(out.code, out.err).toBe(0);
      const files = await readdir(join(dir, 'blobs'));
      expect(files).toHaveLength(2);
      const contents = await Promise.all(files.map((f) => readFile(join(dir, 'blobs', f))));
      expect(contents.some((b) => b.equals(image))).toBe(true);
      expect(contents.some((b) => b.toString('utf8').includes(big))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const deleted = await crumbs(ws, 'workspace', 'delete', '--yes');
    expect(deleted.code, deleted.err).toBe(0);
    expect(await keysOf(ws)).toEqual([]);
    expect((await keysOf(other)).filter((k) => k.includes('/blobs/'))).toHaveLength(2);
  });
});
