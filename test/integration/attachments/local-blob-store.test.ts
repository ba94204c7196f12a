import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalBlobStore, startLocalBlobStore } from '#local/blobs/s3-store.ts';
import { S3PresigningBlobStore } from '#shared/rooms/attachments/s3-presigning-store.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

async function postForm(
  upload: { url: string; fields: Record<string, string> },
  bytes: Uint8Array,
  extra: Record<string, string> = {},
) {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...upload.fields, ...extra })) form.append(k, v);
  form.append('file', new Blob([bytes]));
  const res = await fetch(upload.url, { method: 'POST', body: form });
  return { status: res.status, text: await res.text() };
}

describe('the local blob store (S3 requests, files under a directory)', () => {
  let dir: string;
  let server: LocalBlobStore;
  let clock = Date.now();
  let blobs: S3PresigningBlobStore;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'crumbs-blobs-'));
    server = await startLocalBlobStore({ dir, region: 'us-east-1', credentials, now: () => clock });
    const client = new S3Client({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials,
      forcePathStyle: true,
    });
    blobs = new S3PresigningBlobStore({ bucket: 'crumbs-blobs', client });
  });
  afterAll(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps bytes, media type and metadata; lists by prefix; writes if absent only once', async () => {
    const bytes = new Uint8Array([1, 2, 3, 4]);
    expect(
      await blobs.put('ws/a/blobs/x', bytes, { mediaType: 'image/png', metadata: { name: 'x.png' } }),
    ).toBe(true);
    expect(await blobs.get('ws/a/blobs/x')).toEqual(bytes);
    expect(await blobs.head('ws/a/blobs/x')).toEqual({
      bytes: 4,
      mediaType: 'image/png',
      metadata: { name: 'x.png' },
    });
    expect(await blobs.put('ws/a/finalized/u', bytes, { mediaType: 'text/plain', ifAbsent: true })).toBe(
      true,
    );
    expect(await blobs.put('ws/a/finalized/u', bytes, { mediaType: 'text/plain', ifAbsent: true })).toBe(
      false,
    );
    const keys: string[] = [];
    for await (const o of blobs.list('ws/a/')) keys.push(o.key);
    expect(keys).toEqual(['ws/a/blobs/x', 'ws/a/finalized/u']);
    await blobs.delete('ws/a/blobs/x');
    expect(await blobs.get('ws/a/blobs/x')).toBeUndefined();
    expect(await blobs.head('ws/a/blobs/x')).toBeUndefined();
  });

  it('takes a presigned POST at its cap and refuses one byte over it, another key, another type, or after expiry', async () => {
    clock = Date.now();
    const upload = await blobs.presignUpload('ws/a/staging/up1', {
      mediaType: 'image/png',
      maxBytes: 100,
      expiresSeconds: 60,
    });
    expect((await postForm(upload, new Uint8Array(101))).text).toContain('EntityTooLarge');
    expect(await blobs.head('ws/a/staging/up1')).toBeUndefined();
    const otherKey = await postForm(upload, new Uint8Array(10), { key: 'ws/b/staging/up1' });
    expect(otherKey.status).toBe(403);
    expect(otherKey.text).toContain('Policy Condition failed');
    expect((await postForm(upload, new Uint8Array(10), { 'Content-Type': 'text/html' })).status).toBe(403);
    expect((await postForm(upload, new Uint8Array(10), { 'x-amz-meta-extra': '1' })).text).toContain(
      'Extra input fields',
    );
    expect(await blobs.head('ws/b/staging/up1')).toBeUndefined();
    expect((await postForm(upload, new Uint8Array(100))).status).toBe(204);
    expect((await blobs.head('ws/a/staging/up1'))?.bytes).toBe(100);
    const tampered = {
      ...upload,
      fields: {
        ...upload.fields,
        Policy: Buffer.from('{"expiration":"2999-01-01T00:00:00Z","conditions":[]}').toString('base64'),
      },
    };
    expect((await postForm(tampered, new Uint8Array(10))).text).toContain('signature');
    clock += 61_000;
    try {
      expect((await postForm(upload, new Uint8Array(10))).text).toContain('Policy expired');
    } finally {
      clock -= 61_000;
    }
  });

  it('serves a presigned GET while it is valid and refuses a changed or expired one', async () => {
    await blobs.put('ws/a/blobs/y', new Uint8Array([9, 9]), { mediaType: 'application/pdf' });
    clock = Date.now();
    const url = await blobs.presignDownload('ws/a/blobs/y', { expiresSeconds: 60, fileName: 'y.pdf' });
    const ok = await fetch(url);
    expect(ok.status).toBe(200);
    expect(new Uint8Array(await ok.arrayBuffer())).toEqual(new Uint8Array([9, 9]));
    expect(ok.headers.get('content-disposition')).toContain('y.pdf');
    const other = url.replace('/ws/a/blobs/y', '/ws/b/blobs/y');
    expect((await fetch(other)).status).toBe(403);
    clock += 61_000;
    try {
      expect(await (await fetch(url)).text()).toContain('expired');
    } finally {
      clock -= 61_000;
    }
  });
});
