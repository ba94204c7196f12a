import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdf, png } from '../../support/attachment-files.ts';
import { crumbs, uniqueWorkspace } from '../../support/local.ts';

describe('crumbs put --attach and crumbs get --save-attachments', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'crumbs-cli-att-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('stores files (a small one in the request, a 5 MB one through a presigned upload) and saves them back', async () => {
    const ws = uniqueWorkspace('cli-att');
    const shot = png(4, 4, 3);
    const report = pdf('quarterly numbers');
    const big = Buffer.concat([Buffer.from('id,value\n'), Buffer.alloc(5 * 1024 * 1024, 'a,1\n')]);
    await writeFile(join(dir, 'shot.png'), shot);
    await writeFile(join(dir, 'report.pdf'), report);
    await writeFile(join(dir, 'rows.csv'), big);
    const put = await crumbs(
      ws,
      'put',
      '--schema',
      'user.message.v1',
      '--context',
      '{"text":"see attached"}',
      '--attach',
      join(dir, 'shot.png'),
      '--attach',
      join(dir, 'report.pdf'),
      '--attach',
      join(dir, 'rows.csv'),
      '--json',
    );
    expect(put.code, put.err).toBe(0);
    const created = JSON.parse(put.out) as {
      id: string;
      context: {
        text: string;
        attachments: { $attachment: { media_type: string; name: string; bytes: number } }[];
      };
    };
    expect(created.context.text).toBe('see attached');
    expect(
      created.context.attachments.map((a) => [
        a.$attachment.media_type,
        a.$attachment.name,
        a.$attachment.bytes,
      ]),
    ).toEqual([
      ['image/png', 'shot.png', shot.length],
      ['application/pdf', 'report.pdf', report.length],
      ['text/csv', 'rows.csv', big.length],
    ]);

    const out = join(dir, 'saved');
    const got = await crumbs(ws, 'get', created.id, '--save-attachments', out);
    expect(got.code, got.err).toBe(0);
    expect(await readFile(join(out, 'shot.png'))).toEqual(shot);
    expect(await readFile(join(out, 'report.pdf'))).toEqual(report);
    expect((await readFile(join(out, 'rows.csv'))).equals(big)).toBe(true);
  });
});
