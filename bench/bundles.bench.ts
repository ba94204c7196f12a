/**
 * Bundle benchmark: the load-time budget of the function bundles. Bundles every function of the topology with
 * esbuild as `CrumbsFunction` does (`infra/bundling.ts`), in the shipped variant and the alternatives to it
 * (`VARIANTS`), and prints each bundle's size and module load time: the median over fresh `node` processes that
 * import it once with the variant's Node options, a local proxy for the init phase of a cold start. Rounds
 * interleave every function and variant, so a busy moment slows all of them alike.
 *
 *   node bin/run-ts.js bench/bundles.bench.ts [--runs 9] [--functions executor-tool,dlq-handler]
 *
 * The budget, compared within one run because absolute times depend on the machine: ship the variant that loads
 * fastest (`CRUMBS_BUNDLING` records the measurement behind it), and no function above 1.5× the api function's
 * load CPU time in the same variant (heavy, rarely used dependencies belong only in the function that needs them).
 * Exits non-zero when a bundle fails to build or load, or a shipped function is over the ratio.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, CRUMBS_BUNDLING, REPO_ROOT } from '#infra/constructs/bundling-options.ts';
import { allFunctions, ENV, EXECUTOR_RUNNERS, topology } from '#shared/topology.ts';

const BASELINE_FUNCTION = 'api';
const { values } = parseArgs({
  options: { runs: { type: 'string', default: '7' }, functions: { type: 'string' } },
});
const RUNS = Math.max(1, Number(values.runs));
/** `--functions api,executor-tool` measures only those (the api function always, as the baseline). */
const ONLY = values.functions ? new Set([BASELINE_FUNCTION, ...values.functions.split(',')]) : undefined;
/** No function may load more than this many times slower than the api function. */
const MAX_RATIO_TO_API = 1.5;

interface Variant {
  readonly name: string;
  readonly options: BundlingOptions;
  readonly nodeOptions: readonly string[];
  readonly shipped?: boolean;
}
/**
 * The SDK (what the runtime provides) or the SDK and Powertools (what a layer would) left out of the bundle. They
 * load from node_modules, so every load time includes all the code the function runs.
 */
const external = (modules: string[]): BundlingOptions => ({
  ...CRUMBS_BUNDLING,
  bundleAwsSDK: false,
  externalModules: modules,
});
/** A source map holding the sources, read by Node (`--enable-source-maps`), for stack traces into the sources. */
const MINIFIED_WITH_MAP = { minify: true, sourceMap: true, sourcesContent: true } as const;
const SOURCE_MAPS = ['--enable-source-maps'];
const VARIANTS: readonly Variant[] = [
  { name: 'bundled (shipped)', options: CRUMBS_BUNDLING, nodeOptions: [], shipped: true },
  { name: 'bundled, not minified', options: { ...CRUMBS_BUNDLING, minify: false }, nodeOptions: [] },
  {
    name: 'bundled, source map',
    options: { ...CRUMBS_BUNDLING, ...MINIFIED_WITH_MAP },
    nodeOptions: SOURCE_MAPS,
  },
  {
    name: 'SDK external, source map',
    options: { ...external(['@aws-sdk/*']), ...MINIFIED_WITH_MAP },
    nodeOptions: SOURCE_MAPS,
  },
  {
    name: 'SDK + Powertools external, source map (layer)',
    options: { ...external(['@aws-sdk/*', '@aws-lambda-powertools/*']), ...MINIFIED_WITH_MAP },
    nodeOptions: SOURCE_MAPS,
  },
];

/** Just enough environment for every handler's cold-start env parsing to succeed. */
const FAKE_ENV: Record<string, string> = {
  [ENV.tableName]: 'bench-table',
  [ENV.defaultLlmProvider]: 'offline',
  [ENV.busName]: 'bench-bus',
  [ENV.ruleNamePrefix]: topology.bus.ruleNamePrefix,
  [ENV.executorQueueArns]: JSON.stringify(
    Object.fromEntries(EXECUTOR_RUNNERS.map((k) => [k, `arn:aws:sqs:us-east-1:000000000000:bench-${k}`])),
  ),
  [ENV.ruleTargetsDlqArn]: 'arn:aws:sqs:us-east-1:000000000000:bench-rule-targets-dlq',
  [ENV.workspacesClaim]: 'crumbs:workspaces',
  [ENV.scheduleGroup]: 'bench-schedules',
  [ENV.timersQueueArn]: 'arn:aws:sqs:us-east-1:000000000000:bench-timers',
  [ENV.schedulerRoleArn]: 'arn:aws:iam::000000000000:role/bench-scheduler',
  [ENV.secretPrefix]: 'crumbs/llm/',
  [ENV.apiUrl]: 'https://bench.execute-api.us-east-1.amazonaws.com/bench',
  [ENV.jwtIssuer]: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_bench',
  [ENV.jwtAudience]: 'bench-client',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_METRICS_NAMESPACE: 'crumbs',
  POWERTOOLS_TRACE_ENABLED: 'false',
  // As shipped: spans to X-Ray's OTLP endpoint, the provider built at cold start (nothing is sent while loading).
  [ENV.otlpEndpoint]: 'xray',
};

/**
 * Two times per import. On a shared machine the wall clock swings with everything else running, while CPU time
 * stays put; CPU time is also what a Lambda function with a fraction of a vCPU (memory below 1,769 MB) waits for.
 */
interface Load {
  /** Wall-clock milliseconds. */
  readonly wall: number;
  /** Milliseconds of CPU time (user + system, every thread of the process). */
  readonly cpu: number;
}

/**
 * What the Lambda runtime sets before it loads a handler (`awslambda`: `streamifyResponse` marks a response-streaming
 * handler, `HttpResponseStream` writes its metadata; `local/lambda-runtime.ts` has the whole of it): the streaming
 * functions call it as they load.
 */
const RUNTIME_GLOBAL =
  'globalThis.awslambda??={};awslambda.streamifyResponse??=(h)=>{h[Symbol.for("aws.lambda.runtime.handler.streaming")]="response";return h};awslambda.HttpResponseStream??={from:(s)=>s};';

/** Imports `file` once in a fresh Node process. */
function loadOnce(file: string, nodeOptions: readonly string[]): Load {
  const script =
    RUNTIME_GLOBAL +
    `const t=performance.now(),c=process.cpuUsage();await import(${JSON.stringify(pathToFileURL(file).href)});` +
    'const u=process.cpuUsage(c);process.stdout.write(JSON.stringify({wall:performance.now()-t,cpu:(u.user+u.system)/1000}));';
  const out = execFileSync(process.execPath, [...nodeOptions, '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', ...FAKE_ENV },
    encoding: 'utf8',
    cwd: REPO_ROOT,
    // The SDK's Node-version notice would drown the table; failures still throw with stderr attached.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out) as Load;
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const errorLine = (error: unknown): string =>
  (error instanceof Error ? error.message.split('\n')[0] : String(error)) ?? 'unknown error';

interface Cell {
  readonly fn: string;
  readonly variant: Variant;
  readonly outfile?: string;
  readonly kb?: number;
  readonly times: Load[];
  error?: string;
}

const outRoot = join(REPO_ROOT, '.scratch', 'bench-bundles');
rmSync(outRoot, { recursive: true, force: true });
const functions = [...allFunctions(), topology.functions.dlqHandler].filter((f) => ONLY?.has(f.name) ?? true);
const cells: Cell[] = [];
for (const fn of functions) {
  for (const [v, variant] of VARIANTS.entries()) {
    if (!existsSync(join(REPO_ROOT, fn.entry))) {
      cells.push({ fn: fn.name, variant, times: [], error: `missing ${fn.entry}` });
      continue;
    }
    try {
      // The function's own externals (packages installed beside its bundle: WebAssembly, the tokenizer's rank
      // tables; they load from node_modules here as from the asset on Lambda) and aliases, on top of the variant.
      const own = bundlingOptionsFor('bundling' in fn ? fn.bundling : undefined);
      const variantExternals = variant.options.externalModules ?? [];
      const bundle = await bundleFunction(fn.entry, join(outRoot, `v${v}`, fn.name, 'index.mjs'), {
        ...variant.options,
        externalModules: [
          ...variantExternals,
          ...(own.externalModules ?? []).filter((m) => !variantExternals.includes(m)),
        ],
        ...(own.esbuildArgs ? { esbuildArgs: own.esbuildArgs } : {}),
      });
      cells.push({ fn: fn.name, variant, outfile: bundle.outfile, kb: bundle.bytes / 1024, times: [] });
    } catch (error) {
      cells.push({ fn: fn.name, variant, times: [], error: errorLine(error) });
    }
  }
}

// Round r imports every bundle once, starting at a different one each round.
const loadable = cells.filter((c) => c.outfile !== undefined);
for (let round = 0; round < RUNS; round++) {
  for (let i = 0; i < loadable.length; i++) {
    const cell = loadable[(i + round * 3) % loadable.length] as Cell;
    if (cell.error) continue;
    try {
      cell.times.push(loadOnce(cell.outfile as string, cell.variant.nodeOptions));
    } catch (error) {
      cell.error = `load failed: ${errorLine(error)}`;
    }
  }
  process.stderr.write(`round ${round + 1}/${RUNS}\r`);
}

const pad = (s: string, n: number): string => s.padEnd(n);
const num = (x: number, n: number, digits = 1): string => x.toFixed(digits).padStart(n);
const out = (line = ''): boolean => process.stdout.write(`${line}\n`);
out(
  `esbuild ${CRUMBS_BUNDLING.format} minified, target ${CRUMBS_BUNDLING.target}, Node ${process.version}, ` +
    `median of ${RUNS} fresh-process imports per bundle, rounds interleaved`,
);
let failed = false;
const summary: { name: string; wall: number; cpu: number; shipped: boolean }[] = [];
for (const variant of VARIANTS) {
  const rows = cells.filter((c) => c.variant === variant);
  const base = rows.find((c) => c.fn === BASELINE_FUNCTION);
  const baseWall = base && !base.error ? median(base.times.map((t) => t.wall)) : Number.NaN;
  const baseCpu = base && !base.error ? median(base.times.map((t) => t.cpu)) : Number.NaN;
  out();
  out(`${variant.name}${variant.nodeOptions.length > 0 ? `  (node ${variant.nodeOptions.join(' ')})` : ''}`);
  out(
    `  ${pad('function', 26)}${'KB'.padStart(8)}${'load ms'.padStart(9)}${'× api'.padStart(7)}` +
      `${'CPU ms'.padStart(9)}${'× api'.padStart(7)}`,
  );
  let wallTotal = 0;
  let cpuTotal = 0;
  for (const row of rows) {
    if (row.error) {
      failed = true;
      out(`  ${pad(row.fn, 26)}FAILED: ${row.error}`);
      continue;
    }
    const wall = median(row.times.map((t) => t.wall));
    const cpu = median(row.times.map((t) => t.cpu));
    wallTotal += wall;
    cpuTotal += cpu;
    const over = cpu / baseCpu > MAX_RATIO_TO_API;
    if (over && variant.shipped) failed = true;
    out(
      `  ${pad(row.fn, 26)}${num(row.kb ?? 0, 8)}${num(wall, 9)}${num(wall / baseWall, 7, 2)}` +
        `${num(cpu, 9)}${num(cpu / baseCpu, 7, 2)}${over ? `  > ${MAX_RATIO_TO_API}× api` : ''}`,
    );
  }
  summary.push({ name: variant.name, wall: wallTotal, cpu: cpuTotal, shipped: variant.shipped === true });
}

out();
out('sum over the functions of the median load times, least CPU first:');
const fastest = [...summary].sort((a, b) => a.cpu - b.cpu);
for (const v of fastest) {
  out(
    `  ${pad(v.name, 32)}${num(v.wall, 7, 0)} ms  CPU ${num(v.cpu, 6, 0)} ms${v.shipped ? '  (shipped)' : ''}`,
  );
}
if (!fastest[0]?.shipped)
  out(`note: "${fastest[0]?.name}" loaded faster than the shipped variant in this run`);
if (failed) {
  process.stderr.write(
    `bundle bench failed: a bundle did not build or load, or a shipped function loads more than ${MAX_RATIO_TO_API}× slower than ${BASELINE_FUNCTION}\n`,
  );
  process.exit(1);
}
