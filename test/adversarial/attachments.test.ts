/**
 * Team-b goes after team-a's attachments: by id (the content address of a file team-a stored), by team-a's staged
 * upload id, with a presigned POST of its own pointed at team-a's keys, and with a presigned GET of its own file
 * edited to name team-a's. Each is refused: ids and upload ids are looked up under the caller's workspace only,
 * and the storage checks every presigned request's policy or signature. Team-a's file is unchanged.
 */
import { describe, expect, it } from 'vitest';
import { png } from '../support/attachment-files.ts';
import { adversary, teamA, teamB } from './support.ts';

async function postForm(url: string, fields: Record<string, string>, bytes: Uint8Array) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([bytes]));
  const res = await fetch(url, { method: 'POST', body: form });
  return { status: res.status, text: await res.text() };
}

describe("a second workspace and team-a's attachments", () => {
  it("finds nothing by team-a's attachment id or upload id, and the storage refuses keys its policy does not name", async () => {
    const a = teamA();
    const b = teamB();
    const secret = png(5, 5, 4242);
    const stored = await a.call('POST', '/attachments', {
      media_type: 'image/png',
      name: 'secret.png',
      data_base64: secret.toString('base64'),
    });
    expect(stored.status).toBe(201);
    const id = String(stored.body.id);
    const stagedA = await a.call('POST', '/attachments/uploads', { media_type: 'image/png' });
    const uploadA = String(stagedA.body.upload_id);

    // By id and by upload id, through team-b's own workspace: not found.
    expect((await b.call('GET', `/attachments/${id}?data=true`)).status).toBe(404);
    expect((await b.call('POST', `/attachments/uploads/${uploadA}`, {})).status).toBe(404);
    // Through team-a's path with team-b's token: forbidden before anything is read.
    const direct = await fetch(`${a.base}/attachments/${id}`, {
      headers: { authorization: `Bearer ${adversary().teamB.token}` },
    });
    expect(direct.status).toBe(403);

    // Team-b's own presigned POST, its key changed to team-a's staging key or blob key: refused by the storage.
    const stagedB = await b.call('POST', '/attachments/uploads', { media_type: 'image/png' });
    const fields = stagedB.body.fields as Record<string, string>;
    const url = String(stagedB.body.url);
    const overwrite = await postForm(
      url,
      { ...fields, key: `ws/${a.workspace}/blobs/${String(stored.body.sha256)}` },
      png(5, 5, 1),
    );
    expect(overwrite.status).toBe(403);
    const intoStaging = await postForm(
      url,
      { ...fields, key: `staging/${a.workspace}/${uploadA}` },
      png(5, 5, 1),
    );
    expect(intoStaging.status).toBe(403);
    expect((await a.call('POST', `/attachments/uploads/${uploadA}`, {})).status).toBe(404);

    // Team-b's presigned GET of its own file, edited to name team-a's blob: the signature no longer holds.
    const own = await b.call('POST', '/attachments', {
      media_type: 'image/png',
      data_base64: png(2, 2, 9).toString('base64'),
    });
    const ownGet = await b.call('GET', `/attachments/${String(own.body.id)}`);
    const edited = String(ownGet.body.download_url).replace(
      `ws/${b.workspace}/blobs/${String(own.body.sha256)}`,
      `ws/${a.workspace}/blobs/${String(stored.body.sha256)}`,
    );
    expect(edited).not.toBe(ownGet.body.download_url);
    expect((await fetch(edited)).status).toBe(403);

    // Team-a's file is as it was.
    const after = await a.call('GET', `/attachments/${id}?data=true`);
    expect(Buffer.from(String(after.body.data_base64), 'base64')).toEqual(secret);
  });
});
