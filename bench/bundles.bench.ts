/**
 * Bundle benchmark: bundles every function entry of the topology with esbuild exactly as `CrumbsFunction` does
 * (its exported `CRUMBS_BUNDLING` options), twice — AWS SDK v3 bundled, and `@aws-sdk/*` left external (provided
 * by the Lambda Node.js runtime) — and prints each bundle's minified size and its module load time in Node (a
 * local proxy for cold-start init: median of fresh `node` processes that import the bundle once).
 *
 *   node bin/run-ts.js bench/bundles.bench.ts [--runs 7]
 *
 * Exits non-zero when a bundle fails, or when the variant the construct chose exceeds 300 KB.
 * Load times are this machine's, with the repository's node_modules standing in for the runtime's SDK copy.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { CRUMBS_BUNDLING, REPO_ROOT, SECRET_PREFIX_ENV } from '#infra/constructs/crumbs-function.ts';
import { allFunctions, ENV, EXECUTOR_KINDS, topology } from '#shared/topology.ts';

const LIMIT_KB = 300;
const SDK_EXTERNAL = ['@aws-sdk/*'];

const { values } = parseArgs({ options: { runs: { type: 'string', default: '7' } } });
const RUNS = Math.max(1, Number(values.runs));

type Variant = 'sdk-bundled' | 'sdk-external';
const VARIANTS: Record<Variant, string[]> = { 'sdk-bundled': [], 'sdk-external': SDK_EXTERNAL };
const chosen: Variant = CRUMBS_BUNDLING.externalModules.some((m) => m.startsWith('@aws-sdk'))
  ? 'sdk-external'
  : 'sdk-bundled';

/** Just enough environment for every handler's cold-start env parsing to succeed. */
const FAKE_ENV: Record<string, string> = {
  [ENV.tableName]: 'bench-table',
  [ENV.busName]: 'bench-bus',
  [ENV.ruleNamePrefix]: topology.bus.ruleNamePrefix,
  [ENV.executorQueueArns]: JSON.stringify(
    Object.fromEntries(EXECUTOR_KINDS.map((k) => [k, `arn:aws:sqs:us-east-1:000000000000:bench-${k}`])),
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

async function bundle(entry: string, outfile: string, external: string[]): Promise<void> {
  await build({
    entryPoints: [join(REPO_ROOT, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: CRUMBS_BUNDLING.format === 'esm' ? 'esm' : 'cjs',
    minify: CRUMBS_BUNDLING.minify,
    sourcemap: CRUMBS_BUNDLING.sourceMap,
    target: CRUMBS_BUNDLING.target,
    mainFields: [...CRUMBS_BUNDLING.mainFields],
    banner: { js: CRUMBS_BUNDLING.banner },
    external,
    logLevel: 'error',
  });
}

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
  loadMs: number;
  loadMsSourceMaps: number;
  error?: string;
}

const rows: Row[] = [];
const declarations = [...allFunctions(), topology.functions.dlqHandler];
for (const fn of declarations) {
  for (const [variant, external] of Object.entries(VARIANTS) as [Variant, string[]][]) {
    const outfile = join(outRoot, variant, fn.name, 'index.mjs');
    mkdirSync(join(outRoot, variant, fn.name), { recursive: true });
    if (!existsSync(join(REPO_ROOT, fn.entry))) {
      rows.push({
        fn: fn.name,
        variant,
        kb: 0,
        loadMs: 0,
        loadMsSourceMaps: 0,
        error: `missing ${fn.entry}`,
      });
      continue;
    }
    try {
      await bundle(fn.entry, outfile, external);
      const kb = statSync(outfile).size / 1024;
      rows.push({
        fn: fn.name,
        variant,
        kb,
        loadMs: loadMs(outfile, false),
        loadMsSourceMaps: loadMs(outfile, true),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      rows.push({ fn: fn.name, variant, kb: 0, loadMs: 0, loadMsSourceMaps: 0, error: message });
    }
  }
}

const pad = (s: string, n: number): string => s.padEnd(n);
const num = (x: number, n: number, digits = 1): string => x.toFixed(digits).padStart(n);
process.stdout.write(
  `esbuild ${CRUMBS_BUNDLING.format} minified, target ${CRUMBS_BUNDLING.target}, Node ${process.version}, ` +
    `median of ${RUNS} fresh imports; chosen: ${chosen}\n\n`,
);
process.stdout.write(
  `${pad('function', 26)}${pad('variant', 14)}${'size KB'.padStart(9)}${'load ms'.padStart(9)}${'+srcmap ms'.padStart(12)}\n`,
);
let failed = false;
for (const row of rows) {
  const mark = row.variant === chosen ? (row.kb > LIMIT_KB ? ' > 300 KB' : ' *') : '';
  if (row.error) {
    failed = true;
    process.stdout.write(`${pad(row.fn, 26)}${pad(row.variant, 14)}  FAILED: ${row.error}\n`);
    continue;
  }
  if (row.variant === chosen && row.kb > LIMIT_KB) failed = true;
  process.stdout.write(
    `${pad(row.fn, 26)}${pad(row.variant, 14)}${num(row.kb, 9)}${num(row.loadMs, 9)}${num(row.loadMsSourceMaps, 12)}${mark}\n`,
  );
}
process.stdout.write(`\n* = the variant CrumbsFunction uses; limit ${LIMIT_KB} KB per chosen bundle\n`);
if (failed) {
  process.stderr.write('bundle bench failed: a bundle did not build or a chosen bundle exceeds the limit\n');
  process.exit(1);
}
