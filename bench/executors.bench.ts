/**
 * Executors on the local stack: tool round-trip latency (tool.request.v1 written → tool.response.v1 stored),
 * function-agent round-trip latency (agent.request.v1 written → agent.response.v1 stored, a trivial
 * `function_code` run in the QuickJS sandbox of executor-agent-sandbox; the first run, which starts the worker
 * and compiles the WebAssembly module, is reported apart),
 * sustained triggers/s, and the DynamoDB / SQS / EventBridge requests each trigger costs end to end (counted by
 * proxies in front of each local service; the bench's own writes and polls go straight to DynamoDB Local and are
 * not counted, except the trigger write itself).
 *
 *   node bin/run-ts.js bench/executors.bench.ts [--roundtrips 50] [--burst 200]
 */
import { parseArgs } from 'node:util';
import { percentile } from './support/counting-proxy.ts';
import { startCountedStack } from './support/stack.ts';

const { values } = parseArgs({
  options: {
    roundtrips: { type: 'string', default: '50' },
    'fn-roundtrips': { type: 'string', default: '30' },
    burst: { type: 'string', default: '200' },
  },
});
const { stack, proxies, store, stop } = await startCountedStack();
try {
  const ws = 'bench';
  const principal = 'user:bench';
  await store.create(
    ws,
    {
      schema_name: 'tool.def.v1',
      title: 'echo',
      tags: [],
      context: { name: 'echo', implementation: 'echo' },
    },
    { principal, id: 'tool-echo' },
  );
  for (;;) {
    const s = (
      await store.list({
        workspace: ws,
        schema_name: 'definition.status.v1',
        tag: 'definition:tool-echo',
        limit: 1,
      })
    ).items[0];
    if (s?.context.state === 'active') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await stack.settle();

  const request = (n: number) =>
    store.create(
      ws,
      {
        schema_name: 'tool.request.v1',
        title: '',
        tags: [],
        context: { tool: 'echo', input: { n }, requestId: `r-${n}`, requestedBy: 'bench' },
      },
      { principal },
    );
  const answered = async (n: number) =>
    (await store.list({ workspace: ws, tag: `request:r-${n}`, limit: 1 })).items.some(
      (b) => b.schema_name === 'tool.response.v1',
    );

  // 1. Round trips, one at a time, with where each one's time went (from the requests the proxies saw; the
  // bench's own writes and polls go straight to DynamoDB Local and are timed here).
  const roundtrips: number[] = [];
  const phases = new Map<string, number[]>();
  const phase = (name: string, ms: number) => phases.set(name, [...(phases.get(name) ?? []), ms]);
  for (let n = 0; n < Number(values.roundtrips); n++) {
    const calls: { service: string; operation: string; startedAt: number; endedAt: number }[] = [];
    const unwatch = Object.entries(proxies).map(([service, proxy]) =>
      proxy.watch((call) => calls.push({ service, ...call, operation: call.operation.replace(/^.*\./, '') })),
    );
    const started = performance.now();
    await request(n);
    const written = performance.now();
    while (!(await answered(n))) await new Promise((r) => setTimeout(r, 5));
    const seen = performance.now();
    for (const stop of unwatch) stop();
    roundtrips.push(seen - started);
    // The executor's requests all start after the request was sent (the previous answer was seen before it);
    // the PutEvents that woke it is the last one before its first request (the previous answer's own event can be
    // published after the bench saw that answer, inside this window).
    // The request's own write ends before `written`; the executor's requests (claim, answer; a trigger read only
    // when its event left the context out) come after it. The answer is the executor's last write.
    const executor = calls.filter(
      (c) =>
        c.service === 'dynamodb' &&
        c.startedAt > written &&
        /^(BatchGetItem|PutItem|TransactWriteItems)$/.test(c.operation),
    );
    const answer = executor.filter((c) => c.operation !== 'BatchGetItem').at(-1);
    const put = calls
      .filter((c) => c.operation === 'PutEvents' && c.startedAt < (executor[0]?.startedAt ?? 0))
      .at(-1);
    if (!put || executor.length === 0 || !answer) continue;
    phase('request write (PutItem)', written - started);
    phase('stream read + publisher, to PutEvents', put.startedAt - written);
    phase('EventBridge → SQS → executor start', executor[0]!.startedAt - put.startedAt);
    phase('executor, first request to answer written', answer.endedAt - executor[0]!.startedAt);
    phase(
      '  of which DynamoDB Local (its reads and writes)',
      executor.reduce((ms, c) => ms + c.endedAt - c.startedAt, 0),
    );
    phase('answer written → seen by the bench (5 ms polls)', seen - answer.endedAt);
  }
  roundtrips.sort((a, b) => a - b);

  // 1b. Function agent round trips, one at a time.
  await store.create(
    ws,
    {
      schema_name: 'agent.def.v1',
      title: 'inc',
      tags: [],
      context: {
        agent_id: 'inc',
        type: 'function',
        function_code: 'async function handler(input) { return { n: input.n + 1 }; }',
      },
    },
    { principal, id: 'agent-inc' },
  );
  for (;;) {
    const s = (
      await store.list({
        workspace: ws,
        schema_name: 'definition.status.v1',
        tag: 'definition:agent-inc',
        limit: 1,
      })
    ).items[0];
    if (s?.context.state === 'active') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await stack.settle();
  const fnRoundtrips: number[] = [];
  for (let n = 0; n < Number(values['fn-roundtrips']); n++) {
    const started = performance.now();
    await store.create(
      ws,
      {
        schema_name: 'agent.request.v1',
        title: '',
        tags: [],
        context: { agent: 'inc', input: { n }, request_id: `f-${n}` },
      },
      { principal },
    );
    for (;;) {
      const done = (await store.list({ workspace: ws, tag: `request:f-${n}`, limit: 2 })).items.some(
        (b) => b.schema_name === 'agent.response.v1',
      );
      if (done) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    fnRoundtrips.push(performance.now() - started);
  }
  const fnFirst = fnRoundtrips.shift() ?? Number.NaN;
  fnRoundtrips.sort((a, b) => a - b);

  // 2. A burst: sustained triggers/s and requests per trigger.
  await stack.settle();
  await new Promise((r) => setTimeout(r, 1500));
  for (const p of Object.values(proxies)) p?.reset();
  const burst = Number(values.burst);
  const first = 100_000;
  const started = performance.now();
  const pending = new Set<number>();
  for (let i = 0; i < burst; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, burst - i) }, (_, j) => request(first + i + j)));
    for (let j = 0; j < Math.min(10, burst - i); j++) pending.add(first + i + j);
  }
  while (pending.size > 0 && performance.now() - started < 180_000) {
    for (const n of [...pending].slice(0, 20)) if (await answered(n)) pending.delete(n);
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - started) / 1000;
  await stack.settle();
  await new Promise((r) => setTimeout(r, 2500)); // let idle pollers' empty receives show as what they are
  const count = (service: 'dynamodb' | 'sqs' | 'eventbridge', filter?: (op: string) => boolean) =>
    (proxies[service]?.total(filter) ?? 0) / burst;
  const isPoll = (op: string) => /GetRecords|GetShardIterator|DescribeStream|ReceiveMessage/.test(op);

  console.log('executor benchmark (local stack; echo tool)');
  console.log(
    `tool round trip (write request → response stored): n=${roundtrips.length} p50=${percentile(roundtrips, 0.5).toFixed(0)} ms p99=${percentile(roundtrips, 0.99).toFixed(0)} ms`,
  );
  console.log('  where a round trip goes (p50 of each part, so they need not add up to the p50 above):');
  for (const [name, values] of phases) {
    const sorted = [...values].sort((a, b) => a - b);
    console.log(`    ${name.padEnd(50)} ${percentile(sorted, 0.5).toFixed(1).padStart(6)} ms`);
  }
  console.log(
    `function agent round trip (write agent.request.v1 → agent.response.v1 stored): first (worker start) ${fnFirst.toFixed(0)} ms; then n=${fnRoundtrips.length} p50=${percentile(fnRoundtrips, 0.5).toFixed(0)} ms p99=${percentile(fnRoundtrips, 0.99).toFixed(0)} ms`,
  );
  console.log(
    `sustained: ${burst - pending.size}/${burst} triggers answered in ${seconds.toFixed(1)} s = ${((burst - pending.size) / seconds).toFixed(1)} triggers/s`,
  );
  console.log(
    'requests per trigger (excluding pollers’ GetRecords/ReceiveMessage, which are per poll, not per trigger):',
  );
  console.log(`  DynamoDB    ${count('dynamodb', (op) => !isPoll(op)).toFixed(1)}`);
  console.log(`  SQS         ${count('sqs', (op) => !isPoll(op)).toFixed(1)}`);
  console.log(`  EventBridge ${count('eventbridge').toFixed(1)}`);
  console.log('by operation (per trigger):');
  for (const [service, proxy] of Object.entries(proxies)) {
    for (const [op, n] of Object.entries(proxy?.counts() ?? {}).sort((a, b) => b[1] - a[1])) {
      console.log(`  ${service.padEnd(12)} ${op.padEnd(48)} ${(n / burst).toFixed(2)}`);
    }
  }
} finally {
  await stop();
}
// The function agent's sandbox keeps one idle worker for reuse (shared/adapters/sandbox/quickjs-sandbox.ts); after a
// burst its stdio port can keep the event loop alive though the stack has stopped, so the bench ends here.
process.exit(0);
