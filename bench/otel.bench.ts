/**
 * OpenTelemetry's cost to a function, in milliseconds:
 *
 *   1. cold start: a bundle holding only what a function loads for it (`bench/support/otel-cold-start.ts`, bundled
 *      as the functions are), imported in fresh Node processes with spans off (`none`), to an OTLP URL, and to
 *      X-Ray's endpoint (`xray`, SigV4); and a whole function (executor-agent) with spans off and on, which
 *      `npm run bench:bundles` also measures beside the others;
 *   2. per invocation: the flush at its end — one agent turn's spans (a trigger, a chat, a publish) serialized and
 *      sent to a loopback receiver, unsigned and SigV4-signed. The network to the endpoint comes on top (in region,
 *      X-Ray's OTLP endpoint is one HTTPS request per invocation).
 *
 *   node bin/run-ts.js bench/otel.bench.ts [--runs 9]
 *
 * Medians of CPU time (user + system) and wall time; a shared machine swings the wall clock more than the CPU.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, CRUMBS_BUNDLING, REPO_ROOT } from '#infra/constructs/bundling-options.ts';
import { otelTracing } from '#shared/adapters/tracing/otel.ts';
import { inModelCallSpan } from '#shared/core/model-calls/genai-spans.ts';
import { callRecord } from '#shared/domain/llm-usage.ts';
import { ENV, EXECUTOR_RUNNERS, topology } from '#shared/topology.ts';
import { startOtlpReceiver } from '../test/support/otlp-receiver.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '9' } } });
const RUNS = Math.max(1, Number(values.runs));

const BASE_ENV: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  [ENV.tableName]: 'bench-table',
  [ENV.defaultLlmProvider]: 'offline',
  [ENV.busName]: 'bench-bus',
  [ENV.executorQueueArns]: JSON.stringify(
    Object.fromEntries(EXECUTOR_RUNNERS.map((k) => [k, `arn:aws:sqs:us-east-1:000000000000:bench-${k}`])),
  ),
  [ENV.secretPrefix]: 'crumbs/llm/',
  [ENV.scheduleGroup]: 'bench-schedules',
  [ENV.timersQueueArn]: 'arn:aws:sqs:us-east-1:000000000000:bench-timers',
  [ENV.schedulerRoleArn]: 'arn:aws:iam::000000000000:role/bench-scheduler',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_TRACE_ENABLED: 'false',
};

const median = (xs: readonly number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

function loadOnce(file: string, env: Record<string, string>): { wall: number; cpu: number } {
  const script =
    `const t=performance.now(),c=process.cpuUsage();await import(${JSON.stringify(pathToFileURL(file).href)});` +
    'const u=process.cpuUsage(c);process.stdout.write(JSON.stringify({wall:performance.now()-t,cpu:(u.user+u.system)/1000}));';
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env,
    encoding: 'utf8',
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out) as { wall: number; cpu: number };
}

const outRoot = join(REPO_ROOT, '.scratch', 'bench-otel');
rmSync(outRoot, { recursive: true, force: true });
const otelOnly = await bundleFunction(
  'bench/support/otel-cold-start.ts',
  join(outRoot, 'otel', 'index.mjs'),
  CRUMBS_BUNDLING,
);
const agentDecl = topology.functions.executors.agent;
const own = bundlingOptionsFor('bundling' in agentDecl ? agentDecl.bundling : undefined);
const agent = await bundleFunction(agentDecl.entry, join(outRoot, 'agent', 'index.mjs'), {
  ...CRUMBS_BUNDLING,
  ...(own.externalModules ? { externalModules: own.externalModules } : {}),
  ...(own.esbuildArgs ? { esbuildArgs: own.esbuildArgs } : {}),
});

const cases = [
  { name: 'OpenTelemetry alone, spans off (none)', file: otelOnly.outfile, endpoint: 'none' },
  {
    name: 'OpenTelemetry alone, OTLP URL',
    file: otelOnly.outfile,
    endpoint: 'https://otlp.example.com/v1/traces',
  },
  { name: 'OpenTelemetry alone, xray (SigV4)', file: otelOnly.outfile, endpoint: 'xray' },
  { name: 'executor-agent, spans off (none)', file: agent.outfile, endpoint: 'none' },
  { name: 'executor-agent, xray (shipped default)', file: agent.outfile, endpoint: 'xray' },
];
const times = cases.map(() => [] as { wall: number; cpu: number }[]);
for (let round = 0; round < RUNS; round++) {
  for (const [i, c] of cases.entries()) {
    times[i]!.push(loadOnce(c.file, { ...BASE_ENV, [ENV.otlpEndpoint]: c.endpoint }));
  }
  process.stderr.write(`round ${round + 1}/${RUNS}\r`);
}
const out = (line = '') => process.stdout.write(`${line}\n`);
out(`OpenTelemetry cold start: median of ${RUNS} fresh-process imports, Node ${process.version}`);
out(`  ${'bundle'.padEnd(42)}${'KB'.padStart(7)}${'load ms'.padStart(9)}${'CPU ms'.padStart(9)}`);
for (const [i, c] of cases.entries()) {
  const kb = (c.file === otelOnly.outfile ? otelOnly.bytes : agent.bytes) / 1024;
  const t = times[i]!;
  out(
    `  ${c.name.padEnd(42)}${kb.toFixed(0).padStart(7)}${median(t.map((x) => x.wall))
      .toFixed(1)
      .padStart(9)}` +
      `${median(t.map((x) => x.cpu))
        .toFixed(1)
        .padStart(9)}`,
  );
}
const agentOff = median(times[3]!.map((x) => x.cpu));
const agentOn = median(times[4]!.map((x) => x.cpu));
out(
  `  provider built at cold start (executor-agent, xray − none): ${(agentOn - agentOff).toFixed(1)} ms CPU`,
);

// 2. The flush at the end of an invocation: one turn's spans, serialized and sent.
const receiver = await startOtlpReceiver();
const flushes: Record<string, { wall: number; cpu: number }[]> = { unsigned: [], 'SigV4 (as to xray)': [] };
const REQUEST = { model: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0', system: 's', messages: [] };
const RESPONSE = {
  text: 'done',
  toolCalls: [],
  finishReason: 'stop' as const,
  usage: { inputTokens: 100, outputTokens: 20 },
  model: REQUEST.model,
};
const KEYS = { workspace: 'ws', breadcrumbId: 'b', triggerVersion: 1, thread: 't', definitionId: 'd' };
for (const kind of Object.keys(flushes)) {
  // The X-Ray path signs as it does for xray, aimed at the loopback receiver so nothing leaves the machine.
  const tracing = otelTracing({
    serviceName: 'crumbs-bench',
    exporter: {
      url: receiver.url,
      ...(kind === 'unsigned'
        ? {}
        : {
            sigv4: {
              service: 'xray',
              region: 'us-east-1',
              credentials: async () => ({ accessKeyId: 'a', secretAccessKey: 'b', sessionToken: 'c' }),
            },
          }),
    },
  });
  for (let i = 0; i < RUNS + 1; i++) {
    const publish = tracing.start('publish agent.response.v1');
    await tracing.span('agent trigger', KEYS, () =>
      inModelCallSpan(REQUEST, undefined, async () => ({
        response: RESPONSE,
        record: callRecord(RESPONSE.model, RESPONSE.usage, {}),
      })),
    );
    publish.end();
    const t = performance.now();
    const c = process.cpuUsage();
    await tracing.flush();
    const u = process.cpuUsage(c);
    if (i > 0) flushes[kind]!.push({ wall: performance.now() - t, cpu: (u.user + u.system) / 1000 });
  }
}
await receiver.close();
out();
out(`Flush at the end of an invocation (3 spans, loopback receiver), median of ${RUNS}:`);
for (const [kind, t] of Object.entries(flushes)) {
  out(
    `  ${kind.padEnd(24)}${median(t.map((x) => x.wall))
      .toFixed(2)
      .padStart(8)} ms${median(t.map((x) => x.cpu))
      .toFixed(2)
      .padStart(8)} ms CPU`,
  );
}
