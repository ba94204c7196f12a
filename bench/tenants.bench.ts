/**
 * Tenant safety on the local stack: team-a's probe (a trivial function agent, agent.request.v1 written →
 * agent.response.v1 stored) p50/p95 alone, then during each of team-b's attacks, in one run:
 *   hog     ten requests to a function agent that loops until its time limit (15 s)
 *   storm   two function agents that each write two breadcrumbs for every one they read (stopped by the thread
 *           budget, `--budget`, set low so the storm ends within the phase)
 *   regex   a json.transform tool running a catastrophic regular expression (`--regex`; only where expressions
 *           run on a linear-time engine, else it freezes the stack for minutes)
 *
 *   node bin/run-ts.js bench/tenants.bench.ts [--probes 15] [--budget 200] [--regex]
 */
import { parseArgs } from 'node:util';
import type { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { ENV } from '#shared/topology.ts';
import { percentile } from './support/counting-proxy.ts';
import { directStore, startBenchStack } from './support/stack.ts';

const { values } = parseArgs({
  options: {
    probes: { type: 'string', default: '15' },
    budget: { type: 'string', default: '200' },
    regex: { type: 'boolean', default: false },
  },
});
process.env[ENV.threadBudget] = values.budget;
const PROBES = Number(values.probes);
const A = 'team-a';
const B = 'team-b';
const principal = 'user:bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stack = await startBenchStack();
const store = directStore(stack.endpoints.dynamodb);
let seq = 0;

async function define(ws: string, id: string, schema_name: string, context: Record<string, unknown>) {
  await store.create(ws, { schema_name, title: id, tags: [], context }, { principal, id });
  for (;;) {
    const s = (
      await store.list({
        workspace: ws,
        schema_name: 'definition.status.v1',
        tag: `definition:${id}`,
        limit: 1,
      })
    ).items[0];
    if (s?.context.state === 'active') return;
    if (s?.context.state === 'invalid')
      throw new Error(`${id} is invalid: ${JSON.stringify(s.context.errors)}`);
    await sleep(20);
  }
}

async function ask(s: DynamoBreadcrumbStore, ws: string, agent: string, input: unknown): Promise<string> {
  const request_id = `${agent}-${++seq}`;
  await s.create(
    ws,
    { schema_name: 'agent.request.v1', title: '', tags: [], context: { agent, input, request_id } },
    { principal },
  );
  return request_id;
}

async function answered(ws: string, requestId: string): Promise<boolean> {
  return (await store.list({ workspace: ws, tag: `request:${requestId}`, limit: 2 })).items.some(
    (b) => b.schema_name === 'agent.response.v1',
  );
}

/** Team-a's probes, one after the other; their round trips in ms. */
async function probe(n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const id = await ask(store, A, 'probe', { i });
    while (!(await answered(A, id))) {
      if (performance.now() - started > 120_000) throw new Error('a probe went unanswered for 2 minutes');
      await sleep(5);
    }
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

const rows: { phase: string; times: number[]; note: string }[] = [];
try {
  const fn = (code: string, timeout_ms: number, extra: Record<string, unknown> = {}) => ({
    type: 'function',
    function_code: code,
    transport: { kind: 'function', function: { timeout_ms, memory_mb: 16 } },
    ...extra,
  });
  await define(A, 'agent-probe', 'agent.def.v1', {
    agent_id: 'probe',
    ...fn('async function handler(input) { return { ok: true, i: input.i }; }', 1000),
  });
  await probe(3); // worker start and caches, not measured
  rows.push({ phase: 'baseline', times: await probe(PROBES), note: 'team-a alone' });

  // Hog: ten requests to a function agent that loops until its time limit.
  await define(B, 'agent-hog', 'agent.def.v1', {
    agent_id: 'hog',
    ...fn('async function handler() { for (;;) {} }', 15_000),
  });
  for (let i = 0; i < 10; i++) await ask(store, B, 'hog', {});
  rows.push({ phase: 'hog', times: await probe(PROBES), note: '10 requests looping until 15 s' });
  // Stop the hog: its queued messages are skipped (definition deleted), running ones end at their limit.
  await store.delete(B, 'agent-hog', { principal });
  await sleep(16_000);

  // Storm: two doublers in one thread, stopped by the thread budget.
  const doubler = (id: string, reads: string, writes: string) =>
    define(B, `agent-${id}`, 'agent.def.v1', {
      agent_id: id,
      ...fn(
        `async function handler(input, ctx) {
          await ctx.create({ schema_name: '${writes}', title: 'a', context: { n: 1 } });
          await ctx.create({ schema_name: '${writes}', title: 'b', context: { n: 2 } });
          return { wrote: 2 };
        }`,
        2000,
        { subscriptions: { selectors: [{ schema_name: reads, role: 'trigger' }] } },
      ),
    });
  await doubler('pinger', 'storm.pong.v1', 'storm.ping.v1');
  await doubler('ponger', 'storm.ping.v1', 'storm.pong.v1');
  const root = await store.create(
    B,
    { schema_name: 'storm.ping.v1', title: 'start', tags: [], context: { n: 0 } },
    { principal },
  );
  const stormTimes = await probe(PROBES);
  const thread = (
    await store.list({ workspace: B, schema_name: 'system.loop_stopped.v1', limit: 10 })
  ).items.filter((b) => b.causation?.thread === root.breadcrumb.id);
  rows.push({
    phase: 'storm',
    times: stormTimes,
    note: `thread budget ${values.budget}; ${thread.length} loop-stop record(s) by the end of the phase`,
  });

  if (values.regex) {
    await define(B, 'tool-transform', 'tool.def.v1', { name: 'json.transform' });
    for (let i = 0; i < 5; i++)
      await store.create(
        B,
        {
          schema_name: 'tool.request.v1',
          title: '',
          tags: [],
          context: {
            tool: 'json.transform',
            input: { expression: '$match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", /(a+)+$/)', data: {} },
            requestId: `x-${i}`,
          },
        },
        { principal },
      );
    rows.push({ phase: 'regex', times: await probe(PROBES), note: '5 calls of /(a+)+$/ on 30 a and !' });
  } else {
    rows.push({ phase: 'regex', times: [], note: 'skipped (--regex: only with linear-time expressions)' });
  }

  const base = percentile(rows[0]?.times ?? [], 0.5);
  console.log(
    "tenant benchmark (local stack): team-a's probe, a function agent round trip, during team-b's attacks",
  );
  console.log(
    `${'phase'.padEnd(10)} ${'n'.padStart(3)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'p50 vs base'.padStart(12)}  note`,
  );
  for (const r of rows) {
    const has = r.times.length > 0;
    const p50 = has ? percentile(r.times, 0.5) : Number.NaN;
    const p95 = has ? percentile(r.times, 0.95) : Number.NaN;
    console.log(
      `${r.phase.padEnd(10)} ${String(r.times.length).padStart(3)} ${has ? p50.toFixed(0).padStart(8) : '-'.padStart(8)} ${has ? p95.toFixed(0).padStart(8) : '-'.padStart(8)} ${has ? `${(p50 / base).toFixed(2)}x`.padStart(12) : '-'.padStart(12)}  ${r.note}`,
    );
  }
} finally {
  await stack.stop();
}
