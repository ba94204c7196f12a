/**
 * The function bundles as `cdk deploy` ships them (esbuild with `CrumbsFunction`'s options): self-contained, with
 * the AWS SDK and Powertools at the versions package-lock.json pins, nothing that only tests and tools use, and no
 * bigger than a generous ceiling that only catches accidents (a CDK library or a test framework pulled in).
 * The budget that matters is load time, compared within one run by `npm run bench:bundles`; tests assert no times.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, REPO_ROOT } from '#infra/constructs/bundling-options.ts';
import { installedPackagePaths } from '#infra/installed-packages.ts';
import { allFunctions, topology } from '#shared/topology.ts';

/**
 * Room to grow, not to pull in a library by mistake: the largest bundles (the A2A and MCP agent executors, ~2.2 MB)
 * carry undici, re2js and the protocol SDKs, and every function that reads breadcrumbs carries the S3 client since
 * large contexts spill to the blob store (about 180 KB).
 */
const CEILING_BYTES = 2.5 * 1024 * 1024;

const outRoot = join(REPO_ROOT, '.scratch', 'test-bundles');
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

const readJson = <T>(path: string): T => JSON.parse(readFileSync(join(REPO_ROOT, path), 'utf8')) as T;
const manifest = readJson<{ dependencies: Record<string, string>; devDependencies: Record<string, string> }>(
  'package.json',
);
const lock = readJson<{ packages: Record<string, { version?: string }> }>('package-lock.json');
/** Packages only tests and tools use: handlebars, mathjs, jsonpath-plus (differential tests), aws-cdk-lib, … */
const DEV_ONLY = new Set(Object.keys(manifest.devDependencies).filter((n) => !(n in manifest.dependencies)));
const BUILTINS = new Set(builtinModules);

/** `node_modules/a/node_modules/@s/b/dist/x.js` → [`node_modules/a/node_modules/@s/b`, `@s/b`]. */
function packageOf(input: string): [dir: string, name: string] | undefined {
  const match = /^(.*node_modules\/(@[^/]+\/[^/]+|[^/]+))\//.exec(input);
  return match ? [match[1] as string, match[2] as string] : undefined;
}

/** `js-tiktoken/ranks/o200k_base` → `js-tiktoken`; `@scope/pkg/x` → `@scope/pkg`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
}

describe('function bundles', () => {
  for (const fn of [...allFunctions(), topology.functions.dlqHandler, topology.functions.busSweeper]) {
    it(`${fn.name} carries everything it runs, at the locked versions, and nothing only tests use`, async () => {
      const declared = 'bundling' in fn ? fn.bundling : undefined;
      const bundle = await bundleFunction(
        fn.entry,
        join(outRoot, fn.name, 'index.mjs'),
        bundlingOptionsFor(declared),
      );

      // Nothing left for the runtime to provide: not its AWS SDK, not a layer. Only what the declaration installs
      // beside the bundle (`bundling.nodeModules`: WebAssembly, the tokenizer's rank tables) stays an import.
      const installedBeside = new Set(declared?.nodeModules ?? []);
      const notBuiltin = bundle.externalImports.filter(
        (i) => !i.startsWith('node:') && !BUILTINS.has(i) && !installedBeside.has(packageName(i)),
      );
      expect(notBuiltin).toEqual([]);
      for (const file of declared?.copyFiles ?? [])
        expect(existsSync(join(REPO_ROOT, file)), file).toBe(true);

      // What it ships beside the bundle comes with what that imports, at the locked versions.
      for (const dir of installedPackagePaths(declared?.nodeModules ?? [], REPO_ROOT)) {
        const installed = readJson<{ version: string }>(join(dir, 'package.json')).version;
        expect(installed, `${dir} is not the version package-lock.json pins`).toBe(
          lock.packages[dir]?.version,
        );
      }

      const packages = new Map<string, string>();
      for (const input of bundle.inputs) {
        const found = packageOf(input);
        if (found) packages.set(found[0], found[1]);
      }
      expect([...packages.values()]).toEqual(
        expect.arrayContaining([
          ...('table' in fn.uses && fn.uses.table ? ['@aws-sdk/client-dynamodb'] : []),
          '@aws-lambda-powertools/logger',
        ]),
      );
      expect([...new Set(packages.values())].filter((name) => DEV_ONLY.has(name))).toEqual([]);
      // What the declaration replaces (`bundling.alias`) is not in the bundle.
      const replaced = Object.keys(declared?.alias ?? {});
      expect([...new Set(packages.values())].filter((name) => replaced.includes(name))).toEqual([]);
      for (const dir of packages.keys()) {
        const installed = readJson<{ version: string }>(join(dir, 'package.json')).version;
        expect(installed, `${dir} is not the version package-lock.json pins`).toBe(
          lock.packages[dir]?.version,
        );
      }

      const largest = [...bundle.bytesBySource]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([source, bytes]) => `${source} ${(bytes / 1024).toFixed(1)} KB`);
      expect(bundle.bytes, `${fn.name}: largest parts ${largest.join(', ')}`).toBeLessThanOrEqual(
        CEILING_BYTES,
      );
    });
  }

  it('ships the packages a bundle leaves external with their dependencies (QuickJS needs its FFI types)', () => {
    expect(installedPackagePaths(['quickjs-emscripten-core'], REPO_ROOT)).toEqual([
      'node_modules/@jitl/quickjs-ffi-types',
      'node_modules/quickjs-emscripten-core',
    ]);
    expect(() => installedPackagePaths(['no-such-package-here'], REPO_ROOT)).toThrow(/does not list/);
  });
});
