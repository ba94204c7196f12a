/**
 * How every crumbs function is bundled: one minified ES module with everything in it (the measurement behind that
 * choice is on `CRUMBS_BUNDLING`), plus what a function's topology declaration leaves out or copies beside it.
 * `CrumbsFunction` bundles with these options, and so do the bundle tests and `bench/bundles.bench.ts`, so what
 * they measure is what `cdk synth` ships.
 */
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BundlingDeclaration } from '#shared/topology.ts';
import { copyInstalledPackages } from '../installed-packages.ts';

/** Repository root: topology entries are relative to it, and so are `package-lock.json` and `tsconfig.json`. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * ESM shim: bundled CommonJS dependencies (X-Ray SDK, parts of the AWS SDK) call `require` for Node built-ins,
 * which does not exist in an ES module. esbuild's `__require` falls back to a global `require` when there is one.
 */
export const ESM_REQUIRE_BANNER =
  "import{createRequire as __crumbsCreateRequire}from'node:module';const require=__crumbsCreateRequire(import.meta.url);";

/**
 * Bundling of every crumbs function; `bench/bundles.bench.ts` bundles with exactly these options.
 *
 * Everything goes into one minified file with no source map: the variant that loads fastest. Measured with
 * `npm run bench:bundles -- --runs 9` (esbuild 0.28, Node 20, 2 vCPU shared with other jobs, median of 9
 * fresh-process imports, rounds interleaved), 2026-11-23. CPU ms is the CPU time of the import (user + system),
 * which stays put while the wall clock of a busy machine swings; "× api" is the ratio to the api function, whose
 * budget is 1.5. KB and CPU ms per variant:
 *
 *                          shipped (bundled, minified)   not minified  + source map  SDK external  SDK+Powertools
 *   function                 KB  CPU ms  × api  wall ms     KB  CPU ms        CPU ms    KB  CPU ms    KB  CPU ms
 *   api                     660     131   1.00      294   1605     134           148   272     283   115     346
 *   publisher               674     123   0.93      401   1633     134           165   270     355   113     434
 *   rule-manager            733     149   1.14      426   1814     150           176   376     343   220     428
 *   executor-agent          762     144   1.10      434   1797     158           174   360     343   203     386
 *   executor-tool           856     163   1.24      426   2053     151           193   454     338   297     425
 *   executor-workflow       826     152   1.16      514   1993     158           184   437     315   281     384
 *   executor-context-build  696     127   0.97      308   1668     142           163   307     300   151     372
 *   dlq-handler             614     114   0.87      390   1504     121           159   277     269   121     335
 *   sum of CPU ms                  1103                            1148          1362          2546          3109
 *
 * - The SDK-external and SDK+Powertools-external variants (minified, with a source map read by Node, the SDK from
 *   the runtime and Powertools from its layer) take 2.3× and 2.8× the CPU: one file loads
 *   faster than the hundreds of small modules the SDK and Powertools are made of. Their wall-clock times in the
 *   same run were 6.8 s and 7.5 s summed, against 3.2 s for the shipped variant.
 * - A source map read by Node (`--enable-source-maps`) costs about a fifth more, so none is shipped; the bundle is
 *   reproducible from the commit, which gives the map when a stack trace needs reading (docs/deploy.md).
 * - Not minifying costs about 4% and doubles the size.
 * Re-run the bench when dependencies change; it flags a function over 1.5× the api function.
 */
export const CRUMBS_BUNDLING: Readonly<
  Required<
    Pick<
      BundlingOptions,
      | 'format'
      | 'minify'
      | 'sourceMap'
      | 'target'
      | 'mainFields'
      | 'banner'
      | 'externalModules'
      | 'bundleAwsSDK'
    >
  >
> = {
  format: OutputFormat.ESM,
  minify: true,
  // No source map: Node reading it made every function load more slowly (see the measurement above).
  sourceMap: false,
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: ESM_REQUIRE_BANNER,
  // Everything in the bundle, the AWS SDK at the version in package-lock.json: never the runtime's copy.
  externalModules: [],
  bundleAwsSDK: true,
};

/**
 * Packages replaced in every bundle: `ws` (the delta channel's subscriber, in the api and protocol servers)
 * requires these optional native add-ons inside a try/catch, which esbuild would leave as imports; the module
 * throws as a missing package does, and `ws` uses its JavaScript code.
 */
const WS_NATIVE_ABSENT = 'shared/adapters/events/ws-native-absent.ts';
const ALWAYS_ALIASED: Readonly<Record<string, string>> = {
  bufferutil: WS_NATIVE_ABSENT,
  'utf-8-validate': WS_NATIVE_ABSENT,
};

/** `shared/adapters/checks/check-worker.ts` → `check-worker.mjs`: the name a worker script has beside the bundle. */
export function workerFileName(entry: string): string {
  return `${basename(entry).replace(/\.[cm]?[jt]s$/, '')}.mjs`;
}

/**
 * The esbuild command that bundles a worker script beside the function's bundle with the function's own settings
 * (`CRUMBS_BUNDLING`): the worker is a second entry point, which NodejsFunction does not bundle itself.
 */
function workerBuildCommand(
  entry: string,
  inputDir: string,
  outputDir: string,
  aliases: readonly [string, string][],
): string {
  const b = CRUMBS_BUNDLING;
  const args = [
    join(inputDir, 'node_modules', '.bin', 'esbuild'),
    join(inputDir, entry),
    '--bundle',
    '--platform=node',
    `--format=${b.format}`,
    ...(b.minify ? ['--minify'] : []),
    `--target=${b.target}`,
    `--main-fields=${b.mainFields.join(',')}`,
    `--banner:js=${b.banner}`,
    ...aliases.map(([name, file]) => `--alias:${name}=${join(inputDir, file)}`),
    `--outfile=${join(outputDir, workerFileName(entry))}`,
    '--log-level=error',
  ];
  return args.map((arg) => JSON.stringify(arg)).join(' ');
}

/** A folder copied beside the bundle as `<bundle>/<name>` (the dashboard's files). */
export interface ExtraFiles {
  readonly from: string;
  readonly name: string;
}

/**
 * `CRUMBS_BUNDLING`, plus what the declaration says its bundle leaves out (`bundling` in the topology): modules
 * kept external, the installed packages that provide them copied beside the bundle (`installed-packages.ts`),
 * repository files copied next to it (a worker script) and packages replaced by a module of ours (`alias`); and a
 * folder of files copied beside it (`extraFiles`).
 * The bundle test and benchmark bundle with these same options.
 */
export function bundlingOptionsFor(
  extra: BundlingDeclaration | undefined,
  extraFiles?: ExtraFiles,
): BundlingOptions {
  const packages = extra?.nodeModules ?? [];
  const files = extra?.copyFiles ?? [];
  const workers = extra?.workers ?? [];
  const hooks = packages.length > 0 || files.length > 0 || workers.length > 0 || extraFiles !== undefined;
  const aliases = Object.entries({ ...ALWAYS_ALIASED, ...(extra?.alias ?? {}) });
  return {
    ...CRUMBS_BUNDLING,
    externalModules: [...CRUMBS_BUNDLING.externalModules, ...(extra?.externalModules ?? [])],
    // esbuild resolves an alias path against its working directory: the repository root (local bundling).
    ...(aliases.length > 0
      ? { esbuildArgs: { '--alias': aliases.map(([name, file]) => `${name}=./${file}`) } }
      : {}),
    ...(hooks
      ? {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (inputDir: string, outputDir: string) => [
              ...copyInstalledPackages(packages, REPO_ROOT, inputDir, outputDir),
              ...files.map(
                (file) => `cp ${JSON.stringify(join(inputDir, file))} ${JSON.stringify(`${outputDir}/`)}`,
              ),
              ...workers.map((worker) => workerBuildCommand(worker, inputDir, outputDir, aliases)),
              ...(extraFiles
                ? [
                    `cp -R ${JSON.stringify(extraFiles.from)} ${JSON.stringify(join(outputDir, extraFiles.name))}`,
                  ]
                : []),
            ],
          },
        }
      : {}),
  };
}
