/**
 * The neighbour's latency while another workspace makes crumbs check heavy data, on the local stack (one process,
 * as `crumbs dev`): team-a's probe is a GET of one of its breadcrumbs through the HTTP API, one after another, for
 * as long as each of team-b's attacks runs; printed as p50 / p95 / max per attack.
 *   enum     4 tool requests of 2,000 objects against an input_schema enum of 9,000 objects
 *   unique   4 tool requests of 2,000 objects under uniqueItems
 *   jsonata  30 json.transform requests whose expression runs until its 1 s limit
 *   views    4 concurrent listings of 100 breadcrumbs whose schema's llm_hints template renders 720,000 steps each
 * Where checks run is `CRUMBS_CHECK_WORKERS` (`--workers N`; 0: on the event loop, absent: the default pool).
 *
 *   node bin/run-ts.js bench/checks.bench.ts [--workers N] [--min-probes 20]
 */
import { parseArgs } from 'node:util';
import { ENV } from '#shared/topology.ts';
import { percentile } from './support/counting-proxy.ts';
import { directStore, startBenchStack } from './support/stack.ts';

const { values } = parseArgs({
  options: {
    workers: { type: 'string' },
    'min-probes': { type: 'string', default: '20' },
  },
});
if (values.workers !== undefined) process.env[ENV.checkWorkers] = values.workers;
const MIN_PROBES = Number(values['min-probes']);
const A = 'team-a';
const B = 'team-b';
const principal = 'user:bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stack = await startBenchStack();
const store = directStore(stack.endpoints.dynamodb);
const api = (path: string) =>
  fetch(`${stack.endpoints.api}${path}`, { headers: { authorization: `Bearer ${stack.token}` } });

async function define(id: string, context: Record<string, unknown>) {
  await store.create(B, { schema_name: 'tool.def.v1', title: id, tags: [], context }, { principal, id });
  for (;;) {
    const s = (
      await store.list({
        workspace: B,
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

let seq = 0;
/** Writes tool requests as team-b; resolves once every one is answered. */
async function toolRequests(tool: string, inputs: readonly unknown[]): Promise<string[]> {
  const ids = await Promise.all(
    inputs.map(async (input) => {
      const requestId = `${tool}-${++seq}`;
      await store.create(
        B,
        {
          schema_name: 'tool.request.v1',
          title: '',
          tags: [`request:${requestId}`],
          context: { tool, input, requestId },
        },
        { principal },
      );
      return requestId;
    }),
  );
  const answers: string[] = [];
  for (const id of ids) {
    for (;;) {
      const found = (
        await store.list({ workspace: B, schema_name: 'tool.response.v1', tag: `request:${id}`, limit: 1 })
      ).items[0];
      if (found !== undefined) {
        answers.push(String(found.context.status === 'success' ? 'success' : found.context.error));
        break;
      }
      await sleep(50);
    }
  }
  return answers;
}

/** Probes that found their connection closed (and asked again), over the whole run. */
let resets = 0;

/** Team-a's GETs, one after the other, while `attack` runs (and at least MIN_PROBES of them); their times. */
async function probeDuring(attack: Promise<unknown>, probeId: string): Promise<number[]> {
  let done = false;
  void attack.finally(() => {
    done = true;
  });
  const times: number[] = [];
  while (!done || times.length < MIN_PROBES) {
    const started = performance.now();
    // A server stalled past its keep-alive timeout closes the idle connection under the next request: the probe
    // asks again on a new one, and the time it waited counts.
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await api(`/v1/workspaces/${A}/breadcrumbs/${probeId}`);
        await res.text();
        if (res.status !== 200) throw new Error(`probe answered ${res.status}`);
        break;
      } catch (error) {
        if (attempt >= 3 || !(error instanceof TypeError)) throw error;
        resets++;
      }
    }
    times.push(performance.now() - started);
    await sleep(20);
  }
  await attack;
  return times.sort((a, b) => a - b);
}

const rows: { phase: string; times: number[]; note: string }[] = [];
try {
  const probe = await store.create(
    A,
    { schema_name: 'note.text.v1', title: 'probe', tags: [], context: { text: 'hello' } },
    { principal },
  );
  const probeId = probe.breadcrumb.id;

  const entries = Array.from({ length: 9_000 }, (_, i) => ({ kind: 'item', id: i }));
  await define('tool-enum', {
    name: 'enum-tool',
    implementation: 'echo',
    input_schema: { type: 'object', properties: { items: { type: 'array', items: { enum: entries } } } },
  });
  await define('tool-unique', {
    name: 'unique-tool',
    implementation: 'echo',
    input_schema: { type: 'object', properties: { items: { type: 'array', uniqueItems: true } } },
  });
  await define('tool-transform', { name: 'json.transform' });
  // Schema defaults of team-b's notes: a template whose render is some 720,000 steps.
  await store.create(
    B,
    {
      schema_name: 'schema.def.v1',
      title: 'heavy views',
      tags: ['defines:bench.heavy.v1'],
      context: {
        llm_hints: {
          transform: { n: { type: 'template', template: '{{#each a}}{{#each ../a}}.{{/each}}{{/each}}' } },
        },
      },
    },
    { principal },
  );
  const heavy = { a: Array.from({ length: 600 }, (_, i) => i) };
  for (let i = 0; i < 100; i++) {
    await store.create(
      B,
      { schema_name: 'bench.heavy.v1', title: `h${i}`, tags: [], context: heavy },
      { principal },
    );
  }
  await stack.settle();
  await probeDuring(sleep(500), probeId); // warm-up: caches, not measured

  rows.push({ phase: 'baseline', times: await probeDuring(sleep(3_000), probeId), note: 'team-a alone' });

  // Each matches an entry near the enum's end (the attack's worst case): past the schema's work budget.
  const objects = Array.from({ length: 2_000 }, (_, i) => ({ kind: 'item', id: 8_999 - i }));
  let answers: string[] = [];
  rows.push({
    phase: 'enum',
    times: await probeDuring(
      toolRequests(
        'enum-tool',
        [1, 2, 3, 4].map(() => ({ items: objects })),
      ).then((a) => {
        answers = a;
      }),
      probeId,
    ),
    note: `4 × 2,000 objects vs a 9,000-object enum → ${summary(answers)}`,
  });

  rows.push({
    phase: 'unique',
    times: await probeDuring(
      toolRequests(
        'unique-tool',
        [1, 2, 3, 4].map(() => ({ items: objects })),
      ).then((a) => {
        answers = a;
      }),
      probeId,
    ),
    note: `4 × uniqueItems over 2,000 objects → ${summary(answers)}`,
  });

  const slow = { expression: '$count([1..900000].($string($)))', data: {} };
  rows.push({
    phase: 'jsonata',
    times: await probeDuring(
      toolRequests(
        'json.transform',
        Array.from({ length: 30 }, () => slow),
      ).then((a) => {
        answers = a;
      }),
      probeId,
    ),
    note: `30 expressions at their 1 s limit → ${summary(answers)}`,
  });

  let viewNote = '';
  const listing = async () => {
    const res = await api(`/v1/workspaces/${B}/breadcrumbs?schema_name=bench.heavy.v1&limit=100`);
    const body = (await res.json()) as { items?: { context: { n?: unknown } }[] };
    const items = body.items ?? [];
    const rendered = items.filter((b) => typeof b.context.n === 'string').length;
    viewNote = `${res.status}, ${rendered} of ${items.length} views rendered, the rest an error`;
  };
  rows.push({
    phase: 'views',
    times: await probeDuring(Promise.all([listing(), listing(), listing(), listing()]), probeId),
    note: `4 listings of 100 heavy views → ${viewNote}`,
  });

  console.log(
    `check benchmark (local stack, CRUMBS_CHECK_WORKERS=${process.env[ENV.checkWorkers] ?? 'default'}): ` +
      "team-a's GET of one breadcrumb during team-b's attacks",
  );
  console.log(
    `${'phase'.padEnd(10)} ${'n'.padStart(4)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'max ms'.padStart(8)}  note`,
  );
  if (resets > 0)
    console.log(`(${resets} probes found their connection closed by the stalled server and asked again)`);
  for (const r of rows) {
    const cell = (p: number) => percentile(r.times, p).toFixed(0).padStart(8);
    console.log(
      `${r.phase.padEnd(10)} ${String(r.times.length).padStart(4)} ${cell(0.5)} ${cell(0.95)} ${(r.times.at(-1) ?? Number.NaN).toFixed(0).padStart(8)}  ${r.note}`,
    );
  }
} finally {
  await stack.stop();
}

/** `4 × "the error"` for answers that are all alike, else each. */
function summary(answers: readonly string[]): string {
  const distinct = [...new Set(answers)];
  const short = (a: string) => (a.length > 110 ? `${a.slice(0, 110)}…` : a);
  return distinct.map((a) => `${answers.filter((x) => x === a).length} × ${short(a)}`).join('; ');
}
