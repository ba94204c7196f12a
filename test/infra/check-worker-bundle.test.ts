/**
 * The check pool as an executor ships it: the handler's bundle, and `check-worker.mjs` bundled beside it by the
 * afterBundling hook (`bundling.workers`), where the pool finds it at run time. A check past the slice runs in
 * that worker and comes back with its own error; one within the slice, and an expression, answer as usual.
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, REPO_ROOT } from '#infra/constructs/bundling-options.ts';
import { allFunctions, CHECK_WORKER, topology } from '#shared/topology.ts';

const outRoot = join(REPO_ROOT, '.scratch', 'test-check-worker-bundle');
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

describe('the check pool in a bundled executor', () => {
  it('ships the worker beside every function that runs a pool, and only there', () => {
    for (const fn of allFunctions()) {
      const workers = 'bundling' in fn ? (fn.bundling?.workers ?? []) : [];
      expect(workers.includes(CHECK_WORKER), fn.name).toBe(fn.uses.checks === 'pool');
    }
    expect(Object.values(topology.functions.executors).every((fn) => fn.uses.checks === 'pool')).toBe(true);
    expect(topology.functions.api.uses).not.toHaveProperty('checks');
  });

  it('runs a check past the slice in the worker bundled beside it', async () => {
    const declared = topology.functions.executors.tool.bundling;
    const options = bundlingOptionsFor(declared);
    const bundle = await bundleFunction(
      'test/support/check-pool-bundle-entry.ts',
      join(outRoot, 'index.mjs'),
      options,
    );
    // The worker, built by the very commands `cdk synth` runs after bundling (from the repository as its input).
    const commands = options.commandHooks?.afterBundling(REPO_ROOT, outRoot) ?? [];
    const built = commands.filter((command) => command.includes('check-worker'));
    expect(built).toHaveLength(1);
    for (const command of built) await promisify(execFile)('sh', ['-c', command]);
    expect(existsSync(join(outRoot, 'check-worker.mjs'))).toBe(true);
    const { stdout } = await promisify(execFile)(process.execPath, [bundle.outfile], { encoding: 'utf8' });
    expect(JSON.parse(stdout)).toEqual({
      heavy: {
        error: expect.stringMatching(/more than 6400000 steps of work \(JSON_SCHEMA_LIMITS\.maxWork/),
        limit: 6_400_000,
      },
      light: { value: [{ path: 'input', message: 'must be integer' }] },
      expression: { value: 25_005_000 },
    });
  });
});
