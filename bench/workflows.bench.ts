/**
 * Workflow runs on the local stack: a 10-step sequential workflow of `echo` tools end to end (request written →
 * run succeeded), p50/p99; a `map` over 100 items, wall time; and the DynamoDB requests and EventBridge events
 * each step costs (counted by proxies in front of the local services; the bench's own writes and polls go
 * straight to DynamoDB Local and are not counted, except the request write itself).
 *
 *   node bin/run-ts.js bench/workflows.bench.ts [--runs 20] [--items 100] [--concurrency 10]
 */
import { parseArgs } from 'node:util';
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
const { stack, proxies, store, stop } = await startCountedStack();
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

  // 2. A map over N items.
  const items = Number(values.items);
  const t0 = performance.now();
  const mapStatus = await ended(
    await start('map', { items: Array.from({ length: items }, (_, i) => i) }),
    300_000,
  );
  const mapSeconds = (performance.now() - t0) / 1000;

  console.log('workflow benchmark (local stack; echo tools)');
  console.log(
    `10-step sequential run, request → succeeded: n=${runs} p50=${percentile(durations, 0.5).toFixed(0)} ms ` +
      `p99=${percentile(durations, 0.99).toFixed(0)} ms (${failed} not succeeded)`,
  );
  console.log(
    `map over ${items} items (max_concurrency ${values.concurrency}): ${mapSeconds.toFixed(1)} s wall (${mapStatus})`,
  );
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
} finally {
  await stop();
}
