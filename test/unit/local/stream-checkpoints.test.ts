import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileCheckpoints } from '#local/event-sources/dynamodb-stream-poller.ts';

const dir = mkdtempSync(join(tmpdir(), 'crumbs-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fileCheckpoints', () => {
  it('keeps writing after one write failed, and the file then holds every shard', async () => {
    const path = join(dir, 'stream-checkpoints.json');
    const checkpoints = fileCheckpoints(path);
    // A directory where the file goes: the rename fails.
    mkdirSync(path);
    await expect(checkpoints.set('arn:stream', 'shard-1', '100')).rejects.toThrow();
    rmSync(path, { recursive: true });
    await checkpoints.set('arn:stream', 'shard-2', '200');
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
      'arn:stream': { 'shard-1': '100', 'shard-2': '200' },
    });
    expect(fileCheckpoints(path).get('arn:stream', 'shard-1')).toBe('100');
  });
});
