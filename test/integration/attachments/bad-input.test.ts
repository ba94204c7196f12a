/**
 * Bad input to the attachments room, against the local blob store: a workspace's share, empty and mislabelled
 * files, a half-finished upload (staged, never finalized, or finalized after its file failed the check) leaves
 * nothing referenced, and a file is refused by its size before its bytes are read.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalBlobStore, startLocalBlobStore } from '#local/blobs/s3-store.ts';
import { Attachments } from '#shared/rooms/attachments/attachments.ts';
import type { BlobStore } from '#shared/rooms/attachments/blob-store.ts';
import { DEFAULT_ATTACHMENT_LIMITS } from '#shared/rooms/attachments/reference.ts';
import { S3PresigningBlobStore } from '#shared/rooms/attachments/s3-presigning-store.ts';
import { png } from '../../support/attachment-files.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

async function keys(blobs: BlobStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of blobs.list(prefix)) out.push(o.key);
  return out;
}

describe('bad input to attachments', () => {
  let dir: string;
  let server: LocalBlobStore;
  let blobs: S3PresigningBlobStore;
  const reads: string[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'crumbs-bad-'));
    server = await startLocalBlobStore({ dir, region: 'us-east-1', credentials });
    const client = new S3Client({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials,
      forcePathStyle: true,
    });
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetObjectCommand')
          reads.push(String((args.input as { Key?: string }).Key));
        return next(args);
      },
      { step: 'initialize', name: 'recordReads' },
    );
    blobs = new S3PresigningBlobStore({ bucket: 'b', client });
  });
  afterAll(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses a file past the workspace's share, naming it, and writes nothing", async () => {
    const first = png(2, 2, 1);
    const share = first.length + 5;
    const small = new Attachments({ blobs, limits: DEFAULT_ATTACHMENT_LIMITS, maxWorkspaceBytes: share });
    await small.store('w1', first, 'image/png', 'a.png');
    await expect(small.store('w1', png(2, 2, 2), 'image/png', 'b.png')).rejects.toMatchObject({
      status: 413,
      message: expect.stringMatching(new RegExp(`${share}-byte share`)),
    });
    expect(await keys(blobs, 'ws/w1/blobs/')).toHaveLength(1);
    await expect(small.stage('w1', { media_type: 'image/png', bytes: 1000 })).rejects.toMatchObject({
      status: 413,
    });
  });

  it('refuses empty and mislabelled files, and files over the upload cap before reading them', async () => {
    const a = new Attachments({ blobs, limits: { ...DEFAULT_ATTACHMENT_LIMITS, maxUploadBytes: 1000 } });
    await expect(a.store('w2', new Uint8Array(), 'text/plain', 'x')).rejects.toMatchObject({ status: 422 });
    await expect(a.store('w2', Buffer.from('%PDF-1.4 hello'), 'image/png', 'x')).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/begin like application\/pdf/),
    });
    await expect(
      a.store('w2', Buffer.from([0x50, 0x4b, 3, 4, 0, 0]), 'text/csv', 'x.csv'),
    ).rejects.toMatchObject({
      status: 422,
    });
    await expect(a.stage('w2', { media_type: 'image/png', bytes: 1001 })).rejects.toMatchObject({
      status: 413,
    });
    // Staged within the cap, the storage itself holds the file to it; were it larger, finalize refuses it unread.
    await blobs.put('staging/w2/up_aaaaaaaaaaaaaaaaaaaaaaaa', new Uint8Array(5000), {
      mediaType: 'image/png',
    });
    reads.length = 0;
    await expect(a.finalize('w2', 'up_aaaaaaaaaaaaaaaaaaaaaaaa', 'big.png')).rejects.toMatchObject({
      status: 413,
    });
    expect(reads).toEqual([]);
    expect(await keys(blobs, 'ws/w2/')).toEqual([]);
    expect(await keys(blobs, 'staging/w2/')).toEqual([]);
  });

  it('leaves nothing referenced by a half-finished upload, and accepts an upload once', async () => {
    const a = new Attachments({ blobs, limits: DEFAULT_ATTACHMENT_LIMITS });
    const staged = await a.stage('w3', { media_type: 'image/png' });
    // Never posted: nothing to finalize, nothing stored.
    await expect(a.finalize('w3', staged.upload_id, undefined)).rejects.toMatchObject({ status: 404 });
    // Posted, but its bytes are not a PNG: refused, the staged file removed, the upload spent.
    await blobs.put(`staging/w3/${staged.upload_id}`, Buffer.from('not an image'), {
      mediaType: 'image/png',
    });
    await expect(a.finalize('w3', staged.upload_id, undefined)).rejects.toMatchObject({ status: 422 });
    expect(await keys(blobs, 'ws/w3/')).toEqual([]);
    expect(await keys(blobs, `staging/w3/`)).toEqual([]);
    await blobs.put(`staging/w3/${staged.upload_id}`, png(3, 3, 3), { mediaType: 'image/png' });
    await expect(a.finalize('w3', staged.upload_id, undefined)).rejects.toMatchObject({ status: 409 });
    expect(await keys(blobs, 'ws/w3/')).toEqual([]);
    // Another workspace's upload id names nothing here.
    const other = await a.stage('w4', { media_type: 'image/png' });
    await blobs.put(`staging/w4/${other.upload_id}`, png(3, 3, 4), { mediaType: 'image/png' });
    await expect(a.finalize('w3', other.upload_id, undefined)).rejects.toMatchObject({ status: 404 });
  });
});
