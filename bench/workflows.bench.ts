/**
 * Workflow runs on the local stack: a 10-step sequential workflow of `echo` tools end to end (request written →
 * run succeeded), p50/p99; a `map` over 100 items, wall time; and the DynamoDB requests and EventBridge events
 * each step costs (counted by proxies in front of the local services; the bench's own writes and polls go
 * straight to DynamoDB Local and are not counted, except the request write itself). For the map it prints where
 * its items' time goes, read back from what the run wrote (`mapBreakdown`), and the conditional writes that failed.
 *
 *   node bin/run-ts.js bench/workflows.bench.ts [--runs 20] [--items 100] [--concurrency 10]
 */
import { parseArgs } from 'node:util';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { percentile } from './support/counting-proxy.ts';
import { type Service, startCountedStack } from './support/stack.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    items: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '10' },
  },
});
// Invocations of the executors as they start and end, for the map's breakdown.
const invocations: { fn: string; at: number; ms: number }[] = [];
const { stack, proxies, store, stop } = await startCountedStack({
  onInvocation: {
    ended: (r) => invocations.push({ fn: r.function, at: performance.now(), ms: r.durationMs }),
  },
});
try {
  const ws = 'bench';
  const principal = 'user:bench';
  const define = (id: string, schema_name: string, context: Record<string, unknown>) =>
    store.upsert(ws, id, { schema_name, title: id, tags: [], context }, { principal });
  await define('tool-echo', 'tool.def.v1', { name: 'echo', implementation: 'echo' });
  await define('wf-seq', 'workflow.def.v1', {
    workflow_id: 'seq10',
    steps: Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, tool: 'echo', input: { step: i } })),
  });
  await define('wf-map', 'workflow.def.v1', {
    workflow_id: 'map',
    steps: [
      {
        id: 'each',
        map: {
          items: '=input.items',
          max_concurrency: Number(values.concurrency),
          step: { id: 'one', tool: 'echo', input: { n: '=item' } },
        },
      },
    ],
  });
  for (const id of ['tool-echo', 'wf-seq', 'wf-map']) {
    for (;;) {
      const s = (
        await store.list({
          workspace: ws,
          schema_name: 'definition.status.v1',
          tag: `definition:${id}`,
          limit: 1,
        })
      ).items[0];
      if (s?.context.state === 'active') break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  await stack.settle();

  const start = async (workflow: string, input: unknown) =>
    (
      await store.create(
        ws,
        { schema_name: 'workflow.request.v1', title: '', tags: [], context: { workflow, input } },
        { principal },
      )
    ).breadcrumb.id;
  const ended = async (requestId: string, timeoutMs = 120_000): Promise<string> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      try {
        const run = await store.get(ws, `run-${requestId}`);
        const status = String(run.context.status);
        if (['succeeded', 'failed', 'cancelled'].includes(status)) return status;
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
      if (performance.now() > deadline) return 'timed out';
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  // 1. 10 sequential echo steps, end to end; the first run warms the functions and is left out.
  await ended(await start('seq10', {}));
  await stack.settle();
  await new Promise((r) => setTimeout(r, 1000));
  for (const p of Object.values(proxies)) p?.reset();
  const durations: number[] = [];
  const runs = Number(values.runs);
  const requestIds: string[] = [];
  let failed = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const requestId = await start('seq10', { i });
    requestIds.push(requestId);
    if ((await ended(requestId)) !== 'succeeded') failed++;
    durations.push(performance.now() - t0);
  }
  // Change events = breadcrumb writes (each create or update of a breadcrumb is one event on the bus): the request,
  // every version of the run, its step requests and their responses, and the result.
  let writes = 0;
  for (const requestId of requestIds) {
    const runId = `run-${requestId}`;
    const run = await store.get(ws, runId);
    const tagged = async (schema_name: string, tag: string) =>
      (await store.list({ workspace: ws, schema_name, tag, limit: 100 })).items.length;
    writes +=
      1 +
      run.version +
      (await tagged('tool.request.v1', `run:${runId}`)) +
      (await tagged('tool.response.v1', `run:${runId}`)) +
      (await tagged('workflow.result.v1', `request:${requestId}`));
  }
  await stack.settle();
  await new Promise((r) => setTimeout(r, 2500));
  const steps = runs * 10;
  const isPoll = (op: string) => /GetRecords|GetShardIterator|DescribeStream|ReceiveMessage/.test(op);
  const perStep = (service: Service, filter?: (op: string) => boolean) =>
    ((proxies[service]?.total(filter) ?? 0) / steps).toFixed(1);
  const eventsPut = (proxies.eventbridge?.counts()['AWSEvents.PutEvents'] ?? 0) / steps;
  const byOperation = Object.entries(proxies.dynamodb?.counts() ?? {})
    .filter(([op]) => !isPoll(op))
    .sort((a, b) => b[1] - a[1])
    .map(([op, n]) => `    ${op.padEnd(48)} ${(n / steps).toFixed(2)}`);
  durations.sort((a, b) => a - b);
  const dynamodbPerStep = perStep('dynamodb', (op) => !isPoll(op));
  const sqsPerStep = perStep('sqs', (op) => !isPoll(op));

  // 2. A map over N items, with where its time goes.
  const items = Number(values.items);
  await stack.settle();
  const writesTried = { runs: 0, conditionFailed: 0 };
  const unwatch = proxies.dynamodb.watch((call) => {
    if (!/TransactWriteItems|PutItem|UpdateItem/.test(call.operation)) return;
    writesTried.runs++;
    if (call.status === 400) writesTried.conditionFailed++;
  });
  const invocationsBefore = invocations.length;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const wall0 = Date.now();
  const mapRequest = await start('map', { items: Array.from({ length: items }, (_, i) => i) });
  const mapStatus = await ended(mapRequest, 300_000);
  const mapSeconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  unwatch();
  const mapInvocations = invocations.slice(invocationsBefore);
  const breakdown = await mapBreakdown(`run-${mapRequest}`, wall0);

  console.log('workflow benchmark (local stack; echo tools)');
  console.log(
    `10-step sequential run, request → succeeded: n=${runs} p50=${percentile(durations, 0.5).toFixed(0)} ms ` +
      `p99=${percentile(durations, 0.99).toFixed(0)} ms (${failed} not succeeded)`,
  );
  console.log(
    `map over ${items} items (max_concurrency ${values.concurrency}): ${mapSeconds.toFixed(1)} s wall (${mapStatus})`,
  );
  // The yardstick: the map against ten sequential steps measured in the same process, on the same machine.
  console.log(`map / 10-step run p50: ${(mapSeconds / (percentile(durations, 0.5) / 1000)).toFixed(1)}×`);
  console.log('per step of the sequential runs (excluding pollers’ GetRecords/ReceiveMessage):');
  console.log(`  DynamoDB requests   ${dynamodbPerStep}`);
  console.log(
    `  EventBridge events  ${(writes / steps).toFixed(1)} (breadcrumb writes: request, response, run version)`,
  );
  console.log(
    `  EventBridge PutEvents calls ${eventsPut.toFixed(1)} (the publisher batches up to 10 events a call)`,
  );
  console.log(`  SQS requests        ${sqsPerStep}`);
  console.log('  DynamoDB by operation (per step):');
  for (const line of byOperation) console.log(line);
  console.log(`where the map's time goes (ms from the request write; p50 / p90 / max over ${items} items):`);
  for (const line of breakdown) console.log(`  ${line}`);
  const byFn = new Map<string, number[]>();
  for (const i of mapInvocations) byFn.set(i.fn, [...(byFn.get(i.fn) ?? []), i.ms]);
  for (const [fn, ms] of byFn) {
    ms.sort((a, b) => a - b);
    console.log(
      `  ${fn}: ${ms.length} invocations, duration p50 ${percentile(ms, 0.5).toFixed(0)} ms, ` +
        `p90 ${percentile(ms, 0.9).toFixed(0)} ms, max ${(ms.at(-1) ?? 0).toFixed(0)} ms`,
    );
  }
  // The whole local stack but DynamoDB Local runs in this process: near 100 % it is bound by one core.
  console.log(
    `  this process's CPU during the map: ${(((cpu.user + cpu.system) / 1000 / (mapSeconds * 1000)) * 100).toFixed(0)} % of one core (every function, poller, emulator and proxy but DynamoDB Local)`,
  );
  console.log(
    `  conditional writes during the map: ${writesTried.runs}, of which ${writesTried.conditionFailed} ` +
      'failed their condition (run version conflicts, duplicate claims)',
  );

  /**
   * Where a map's items spend their time, from what the run wrote: per item when its request was written (the run
   * transition that started it), when its answer was written, and the run version that applied the answer; per
   * run transition how many items it started and how many answers it applied (the waves).
   */
  async function mapBreakdown(runId: string, wall0: number): Promise<string[]> {
    const versions: Breadcrumb[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await store.history(ws, runId, { limit: 100, ...(cursor ? { cursor } : {}) });
      versions.push(...page.items);
      if (page.next_cursor === null) break;
      cursor = page.next_cursor;
    }
    versions.sort((a, b) => a.version - b.version);
    type Steps = Record<string, { status: string; attempt_id?: string }>;
    const stepsOf = (v: Breadcrumb) => (v.context.steps ?? {}) as Steps;
    const last = versions.at(-1);
    if (last === undefined) return ['no run'];
    const keys = Object.keys(stepsOf(last)).filter((k) => /^each\[\d+\]$/.test(k));
    const at = (iso: string) => Date.parse(iso) - wall0;
    const requested = new Map<string, number>();
    const applied = new Map<string, number>();
    const startedPer: number[] = [];
    const appliedPer: number[] = [];
    let before: Steps = {};
    for (const v of versions) {
      const steps = stepsOf(v);
      let started = 0;
      let ended = 0;
      for (const k of keys) {
        const now = steps[k]?.status;
        const was = before[k]?.status;
        if (now === 'running' && was !== 'running') {
          started++;
          requested.set(k, at(v.updated_at));
        }
        if (now === 'succeeded' && was !== 'succeeded') {
          ended++;
          applied.set(k, at(v.updated_at));
        }
      }
      if (started > 0) startedPer.push(started);
      if (ended > 0) appliedPer.push(ended);
      before = steps;
    }
    const answered = new Map<string, number>();
    cursor = undefined;
    const responses: Breadcrumb[] = [];
    for (;;) {
      const page = await store.list({
        workspace: ws,
        schema_name: 'tool.response.v1',
        tag: `run:${runId}`,
        limit: 100,
        ...(cursor ? { cursor } : {}),
      });
      responses.push(...page.items);
      if (page.next_cursor === null) break;
      cursor = page.next_cursor;
    }
    const byRequest = new Map(
      responses.map((r) => [r.tags.find((t) => t.startsWith('request:'))?.slice(8), r] as const),
    );
    const written = new Map<string, number>();
    for (const k of keys) {
      const id = stepsOf(last)[k]?.attempt_id;
      const response = id === undefined ? undefined : byRequest.get(id);
      if (response) answered.set(k, at(response.created_at));
      if (id !== undefined) written.set(k, at((await store.get(ws, id)).created_at));
    }
    const stats = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return `${percentile(s, 0.5).toFixed(0)} / ${percentile(s, 0.9).toFixed(0)} / ${(s.at(-1) ?? 0).toFixed(0)}`;
    };
    const gap = (from: Map<string, number>, to: Map<string, number>) =>
      keys.flatMap((k) => (from.has(k) && to.has(k) ? [(to.get(k) ?? 0) - (from.get(k) ?? 0)] : []));
    const histogram = (xs: number[]) => {
      const h = new Map<number, number>();
      for (const x of xs) h.set(x, (h.get(x) ?? 0) + 1);
      return [...h]
        .sort((a, b) => a[0] - b[0])
        .map(([n, c]) => `${n}×${c}`)
        .join(' ');
    };
    return [
      `run versions ${versions.length} (transitions written)`,
      `item started (the run transition that starts it)          ${stats([...requested.values()])}`,
      `run write → its request written (the pipeline's outputs) ${stats(gap(requested, written))}`,
      `request → answer written (publisher, bus, queue, tool)     ${stats(gap(written, answered))}`,
      `answer → applied to the run (bus, queue, workflow driver)   ${stats(gap(answered, applied))}`,
      `items started per transition (items×transitions): ${histogram(startedPer)}`,
      `answers applied per transition (answers×transitions): ${histogram(appliedPer)}`,
    ];
  }
} finally {
  await stop();
}
