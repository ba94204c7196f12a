/**
 * The example app in `docs/examples/client/` compiles against the package's `crumbs/client` export (resolved
 * through package.json `exports`, as an app depending on crumbs would), with TypeScript strict.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

it('type-checks docs/examples/client against crumbs/client', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'crumbs-example-'));
  try {
    const config = join(dir, 'tsconfig.json');
    writeFileSync(
      config,
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.json'),
        compilerOptions: { noEmit: true, typeRoots: [join(ROOT, 'node_modules/@types')] },
        files: [join(ROOT, 'docs/examples/client/notes.ts')],
        include: [],
      }),
    );
    const result = await promisify(execFile)(join(ROOT, 'node_modules/.bin/tsc'), ['-p', config]).then(
      () => 'ok',
      (error: { stdout?: string }) => error.stdout ?? 'failed',
    );
    expect(result).toBe('ok');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
