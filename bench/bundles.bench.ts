/**
 * Bundle benchmark: bundles every function entry of the topology with esbuild exactly as `CrumbsFunction` does
 * (`infra/bundling.ts`, the construct's `bundlingOptions`) in three variants — everything bundled; `@aws-sdk/*`
 * external (provided by the Lambda Node.js runtime); and `@aws-sdk/*` plus `@aws-lambda-powertools/*` external
 * (Powertools from its layer, as deployed) — and prints each bundle's minified size and its module load time in
 * Node (a local proxy for cold-start init: median of fresh `node` processes that import the bundle once).
 *
 *   node bin/run-ts.js bench/bundles.bench.ts [--runs 7]
 *
 * Exits non-zero when a bundle fails, or when a deployed variant exceeds 300 KB. Load times are this machine's;
 * external modules load from the repository's node_modules, standing in for the runtime's SDK and the layer, so
 * the load time of every variant includes all the code the function runs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { BUNDLE_LIMIT_BYTES, bundleFunction } from '#infra/bundling.ts';
import {
  bundlingOptions,
  bundlingOptionsFor,
  REPO_ROOT,
  SECRET_PREFIX_ENV,
} from '#infra/constructs/crumbs-function.ts';
import { allFunctions, ENV, EXECUTOR_RUNNERS, topology } from '#shared/topology.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '7' } } });
const RUNS = Math.max(1, Number(values.runs));

type Variant = 'all-bundled' | 'sdk-external' | 'sdk+powertools-ext';
const deployed = bundlingOptions(true);
const VARIANTS: Record<Variant, BundlingOptions> = {
  'all-bundled': { ...deployed, externalModules: [] },
  'sdk-external': bundlingOptions(false),
  'sdk+powertools-ext': deployed,
};
/** What `cdk deploy` ships (with `crumbs:powertools=bundle`, for LocalStack, it is `sdk-external`). */
const chosen: Variant = 'sdk+powertools-ext';

/** Just enough environment for every handler's cold-start env parsing to succeed. */
const FAKE_ENV: Record<string, string> = {
  [ENV.tableName]: 'bench-table',
  [ENV.defaultLlmProvider]: 'offline',
  [ENV.busName]: 'bench-bus',
  [ENV.ruleNamePrefix]: topology.bus.ruleNamePrefix,
  [ENV.executorQueueArns]: JSON.stringify(
    Object.fromEntries(EXECUTOR_RUNNERS.map((k) => [k, `arn:aws:sqs:us-east-1:000000000000:bench-${k}`])),
  ),
  [ENV.workspacesClaim]: 'crumbs:workspaces',
  [SECRET_PREFIX_ENV]: 'crumbs/llm/',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_METRICS_NAMESPACE: 'crumbs',
  POWERTOOLS_TRACE_ENABLED: 'false',
};

const outRoot = join(REPO_ROOT, '.scratch', 'bench-bundles');
rmSync(outRoot, { recursive: true, force: true });

/** Median ms to import the bundle in a fresh Node process (optionally with source maps enabled, as on Lambda). */
function loadMs(file: string, sourceMaps: boolean): number {
  const script = `const t=performance.now();await import(${JSON.stringify(pathToFileURL(file).href)});process.stdout.write(String(performance.now()-t));`;
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const out = execFileSync(
      process.execPath,
      [...(sourceMaps ? ['--enable-source-maps'] : []), '--input-type=module', '-e', script],
      {
        env: { PATH: process.env.PATH ?? '', ...FAKE_ENV },
        encoding: 'utf8',
        cwd: REPO_ROOT,
        // The SDK's Node-version notice would drown the table; failures still throw with stderr attached.
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    times.push(Number(out));
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? Number.NaN;
}

interface Row {
  fn: string;
  variant: Variant;
  kb: number;
  limitKb: number;
  loadMs: number;
  loadMsSourceMaps: number;
  error?: string;
}

const LIMIT_KB = BUNDLE_LIMIT_BYTES / 1024;
const rows: Row[] = [];
const declarations = [...allFunctions(), topology.functions.dlqHandler];
for (const fn of declarations) {
  for (const [variant, options] of Object.entries(VARIANTS) as [Variant, BundlingOptions][]) {
    const limitKb = 'bundleBudgetKb' in fn && fn.bundleBudgetKb !== undefined ? fn.bundleBudgetKb : LIMIT_KB;
    const empty = { fn: fn.name, variant, kb: 0, limitKb, loadMs: 0, loadMsSourceMaps: 0 };
    if (!existsSync(join(REPO_ROOT, fn.entry))) {
      rows.push({ ...empty, error: `missing ${fn.entry}` });
      continue;
    }
    try {
      // The function's own externals (packages installed beside its bundle) on top of the variant's.
      const own = 'bundling' in fn ? bundlingOptionsFor(fn.bundling, true) : undefined;
      const { outfile, bytes } = await bundleFunction(
        fn.entry,
        join(outRoot, variant, fn.name, 'index.mjs'),
        {
          ...options,
          externalModules: [
            ...(options.externalModules ?? []),
            ...(own?.externalModules?.filter((m) => !m.startsWith('@aws')) ?? []),
          ],
        },
      );
      rows.push({
        ...empty,
        kb: bytes / 1024,
        loadMs: loadMs(outfile, false),
        loadMsSourceMaps: loadMs(outfile, true),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      rows.push({ ...empty, error: message });
    }
  }
}

const pad = (s: string, n: number): string => s.padEnd(n);
const num = (x: number, n: number, digits = 1): string => x.toFixed(digits).padStart(n);
process.stdout.write(
  `esbuild ${deployed.format} minified, target ${deployed.target}, Node ${process.version}, ` +
    `median of ${RUNS} fresh imports; deployed: ${chosen}\n\n`,
);
process.stdout.write(
  `${pad('function', 26)}${pad('variant', 20)}${'size KB'.padStart(9)}${'load ms'.padStart(9)}${'+srcmap ms'.padStart(12)}\n`,
);
let failed = false;
for (const row of rows) {
  const mark = row.variant === chosen ? (row.kb > row.limitKb ? ` > ${row.limitKb} KB` : ' *') : '';
  if (row.error) {
    failed = true;
    process.stdout.write(`${pad(row.fn, 26)}${pad(row.variant, 20)}  FAILED: ${row.error}\n`);
    continue;
  }
  if (row.variant === chosen && row.kb > row.limitKb) failed = true;
  process.stdout.write(
    `${pad(row.fn, 26)}${pad(row.variant, 20)}${num(row.kb, 9)}${num(row.loadMs, 9)}${num(row.loadMsSourceMaps, 12)}${mark}\n`,
  );
}
process.stdout.write(
  `\n* = the variant cdk deploy ships; limit ${LIMIT_KB} KB per deployed bundle (agent-remote: its own budget)\n`,
);
if (failed) {
  process.stderr.write(
    'bundle bench failed: a bundle did not build or a deployed bundle exceeds the limit\n',
  );
  process.exit(1);
}
