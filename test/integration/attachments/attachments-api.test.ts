import { describe, expect, it } from 'vitest';
import { png } from '../../support/attachment-files.ts';
import { localStack, uniqueWorkspace } from '../../support/local.ts';

function client(workspace: string, token = localStack().token) {
  const base = `${localStack().api}/v1/workspaces/${workspace}/attachments`;
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };
}

async function postForm(upload: { url: string; fields: Record<string, string> }, bytes: Uint8Array) {
  const form = new FormData();
  for (const [k, v] of Object.entries(upload.fields)) form.append(k, v);
  form.append('file', new Blob([bytes]));
  const res = await fetch(upload.url, { method: 'POST', body: form });
  return { status: res.status, text: await res.text() };
}

describe('attachments through the API (local stack)', () => {
  it('stores a file sent in the request once, checks its bytes against its type, and hands it back', async () => {
    const call = client(uniqueWorkspace('att'));
    const image = png(3, 3);
    const stored = await call('POST', '', {
      media_type: 'image/png',
      name: '../shot.png',
      data_base64: image.toString('base64'),
    });
    expect(stored.status).toBe(201);
    expect(stored.body).toMatchObject({ media_type: 'image/png', bytes: image.length, name: 'shot.png' });
    expect(stored.body.id).toBe(`att_${stored.body.sha256}`);
    const again = await call('POST', '', {
      media_type: 'image/png',
      name: 'other.png',
      data_base64: image.toString('base64'),
    });
    expect(again.body.id).toBe(stored.body.id);

    const read = await call('GET', `/${stored.body.id}?data=true`);
    expect(read.status).toBe(200);
    expect(Buffer.from(String(read.body.data_base64), 'base64')).toEqual(image);
    const viaUrl = await fetch(String(read.body.download_url));
    expect(Buffer.from(await viaUrl.arrayBuffer())).toEqual(image);

    const lying = await call('POST', '', { media_type: 'image/jpeg', data_base64: image.toString('base64') });
    expect(lying.status).toBe(422);
    expect(JSON.stringify(lying.body)).toContain('they begin like image/png');
    const text = await call('POST', '', { media_type: 'text/csv', data_base64: image.toString('base64') });
    expect(text.status).toBe(422);
  });

  it('stages a presigned POST: the storage refuses a byte over its size; finalize accepts it once', async () => {
    const call = client(uniqueWorkspace('att'));
    const image = png(40, 40, 7);
    const staged = await call('POST', '/uploads', { media_type: 'image/png', bytes: image.length });
    expect(staged.status).toBe(201);
    const upload = staged.body as unknown as {
      upload_id: string;
      url: string;
      fields: Record<string, string>;
    };
    const over = await postForm(upload, Buffer.concat([image, Buffer.from([0])]));
    expect(over.text).toContain('EntityTooLarge');
    expect((await call('POST', `/uploads/${upload.upload_id}`, {})).status).toBe(404);

    expect((await postForm(upload, image)).status).toBe(204);
    const finalized = await call('POST', `/uploads/${upload.upload_id}`, { name: 'big.png' });
    expect(finalized.status).toBe(201);
    expect(finalized.body).toMatchObject({ bytes: image.length, media_type: 'image/png', name: 'big.png' });
    // The presigned POST is still valid: a second file posted with it is never accepted.
    expect((await postForm(upload, png(40, 40, 8))).status).toBe(204);
    const twice = await call('POST', `/uploads/${upload.upload_id}`, {});
    expect(twice.status).toBe(409);

    const listed = await call('GET', '');
    expect((listed.body.items as { id: string }[]).map((i) => i.id)).toEqual([finalized.body.id]);
  });

  it('refuses an upload over the cap before reading it, and an unknown type', async () => {
    const call = client(uniqueWorkspace('att'));
    const tooBig = await call('POST', '/uploads', { media_type: 'image/png', bytes: 60 * 1024 * 1024 });
    expect(tooBig.status).toBe(413);
    expect(JSON.stringify(tooBig.body)).toContain('CRUMBS_ATTACHMENT_MAX_UPLOAD_BYTES');
    expect((await call('POST', '/uploads', { media_type: 'application/x-msdownload' })).status).toBe(422);
  });
});
