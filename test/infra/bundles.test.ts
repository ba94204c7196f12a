/**
 * The function bundles as `cdk deploy` ships them (esbuild with `CrumbsFunction`'s options, the Powertools layer
 * on): each within the 300 KB budget, and none carrying what the Lambda runtime or the Powertools layer provides.
 * Sizes are deterministic for a given lock file, so this is a test; load times are in `bench/bundles.bench.ts`.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLE_LIMIT_BYTES, bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, REPO_ROOT } from '#infra/constructs/crumbs-function.ts';
import { allFunctions, topology } from '#shared/topology.ts';

const outRoot = join(REPO_ROOT, '.scratch', 'test-bundles');
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

/** Provided at run time: the AWS SDK by the Node.js runtime, Powertools (and the X-Ray SDK) by the layer. */
const PROVIDED = /^(@aws-sdk\/|@aws-lambda-powertools\/|aws-xray-sdk-core$)/;

describe('function bundles', () => {
  for (const fn of [...allFunctions(), topology.functions.dlqHandler]) {
    const budget =
      'bundleBudgetKb' in fn && fn.bundleBudgetKb !== undefined
        ? fn.bundleBudgetKb * 1024
        : BUNDLE_LIMIT_BYTES;
    it(`${fn.name} is at most ${budget / 1024} KB minified and leaves the SDK and Powertools to the runtime and layer`, async () => {
      const bundle = await bundleFunction(
        fn.entry,
        join(outRoot, fn.name, 'index.mjs'),
        bundlingOptionsFor('bundling' in fn ? fn.bundling : undefined, true),
      );
      const inlined = [...bundle.bytesBySource.keys()].filter((source) => PROVIDED.test(source));
      expect(inlined).toEqual([]);
      const largest = [...bundle.bytesBySource]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([source, bytes]) => `${source} ${(bytes / 1024).toFixed(1)} KB`);
      expect(bundle.bytes, `${fn.name}: largest parts ${largest.join(', ')}`).toBeLessThanOrEqual(budget);
    });
  }
});
