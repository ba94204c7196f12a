/**
 * The per-workspace request rate on the local stack (`crumbs dev`: the api function on DynamoDB Local), in one run:
 *   cost      the added p50/p95 latency of a GET through the API with the limiter and without it (a workspace whose
 *             rate is 0 takes no write), and its price per million requests: one conditional UpdateItem of a
 *             small item per admitted request (1 WRU, measured with ReturnConsumedCapacity), at on-demand prices
 *   flood     team-a's GET p50/p95 alone, then while a workspace without a limit floods the API at a fixed rate, then
 *             while team-b floods it at the same rate far over its own limit; for each flood, how many requests were
 *             served, refused with 429 or failed
 *
 * The flood is open-loop (a request every 1/rate seconds whatever the answers, as a client on the internet sends
 * them) and comes from a worker thread, so the flooder's own work is not done on the API's event loop. A closed
 * loop of N connections against the one local process would take all of its CPU however cheap a refusal is (it
 * just sends more); on AWS each concurrent request has a Lambda instance of its own, and what a flood takes from
 * its neighbours is what it makes the shared parts do (the table, the account's concurrency) — which is what the
 * limit cuts down: a refusal writes nothing once an instance knows the cell is full, however many arrive at once
 * (`test/integration/request-rate.test.ts` counts the writes of a concurrent flood on DynamoDB Local).
 *
 *   node bin/run-ts.js bench/throttle.bench.ts [--requests 200] [--rate 300] [--seconds 8]
 */
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { ENV, topology } from '#shared/topology.ts';
import { percentile } from './support/counting-proxy.ts';
import { PRICES } from './support/prices.ts';
import { startBenchStack } from './support/stack.ts';

/**
 * The flooder, run in a worker thread: starts one GET every 1/rate seconds for `seconds` (not waiting for answers),
 * then waits for the answers and posts how many had each status (`failed`: no answer) and how long it all took.
 */
const FLOODER = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, token, rate, seconds } = workerData;
const counts = {};
const started = performance.now();
const total = Math.round(rate * seconds);
const sent = [];
(async () => {
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    sent.push(
      fetch(url, { headers: { authorization: 'Bearer ' + token } })
        .then(async (res) => { await res.arrayBuffer(); counts[res.status] = (counts[res.status] || 0) + 1; })
        .catch(() => { counts.failed = (counts.failed || 0) + 1; }),
    );
  }
  await Promise.all(sent);
  parentPort.postMessage({ ...counts, ms: performance.now() - started });
})();
`;

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '200' },
    rate: { type: 'string', default: '300' },
    seconds: { type: 'string', default: '8' },
  },
});
const REQUESTS = Number(values.requests);
const FLOOD_RATE = Number(values.rate);
const FLOOD_SECONDS = Number(values.seconds);

const TEAM_B = { requestRate: 5, requestBurst: 10 };
// team-b has a low rate of its own; `free` none at all (the baseline without the limiter's write).
process.env[ENV.workspaceRequestRate] = '1000';
process.env[ENV.workspaceRequestBurst] = '2000';
const stack = await startBenchStack({
  workspaceQuotas: { 'team-b': TEAM_B, free: { requestRate: 0 } },
});
const get = async (ws: string): Promise<{ ms: number; status: number }> => {
  const t = performance.now();
  // A connection the overloaded local server resets counts as status 0 (printed), not as a crash of the run.
  try {
    const res = await fetch(
      `${stack.endpoints.api}/v1/workspaces/${ws}/breadcrumbs?schema_name=note.v1&limit=1`,
      { headers: { authorization: `Bearer ${stack.token}` } },
    );
    await res.arrayBuffer();
    return { ms: performance.now() - t, status: res.status };
  } catch {
    return { ms: performance.now() - t, status: 0 };
  }
};
const stats = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) };
};
const fmt = (n: number) => n.toFixed(1);

try {
  // Warm both paths.
  for (let i = 0; i < 20; i++) {
    await get('free');
    await get('team-a');
  }
  const without: number[] = [];
  const withLimit: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    without.push((await get('free')).ms);
    withLimit.push((await get('team-a')).ms);
  }
  const a = stats(without);
  const b = stats(withLimit);

  // What one admitted request writes: the limiter's UpdateItem, asked for its consumed capacity.
  const client = new DynamoDBClient({
    endpoint: stack.endpoints.dynamodb,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const out = await client.send(
    new UpdateItemCommand({
      TableName: topology.table.name,
      Key: { id: { S: '#rate#requests' }, workspace: { S: 'team-a' } },
      UpdateExpression: 'SET tat = tat + :inc',
      ConditionExpression: 'attribute_exists(tat)',
      ExpressionAttributeValues: { ':inc': { N: '1' } },
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  client.destroy();
  const wru = out.ConsumedCapacity?.CapacityUnits ?? 1;
  console.log(`request rate: a GET through the local API, ${REQUESTS} requests each, sequential`);
  console.log(`  without the limiter (rate 0)   p50 ${fmt(a.p50)} ms  p95 ${fmt(a.p95)} ms`);
  console.log(`  with the limiter               p50 ${fmt(b.p50)} ms  p95 ${fmt(b.p95)} ms`);
  console.log(`  added                          p50 ${fmt(b.p50 - a.p50)} ms  p95 ${fmt(b.p95 - a.p95)} ms`);
  console.log(
    `  writes per admitted request    ${wru} WRU → $${(wru * PRICES.dynamodb.writeRequestUnit * 1e6).toFixed(3)} per million requests (on-demand, ${PRICES.region}); refusals after an instance has seen the cell full: none`,
  );

  // The flood: team-a probes one GET at a time, alone, then while `free` (no limit) and then team-b (over its limit)
  // flood the API at the same fixed rate from a worker thread.
  const probe = async (until: () => boolean) => {
    const ms: number[] = [];
    while (!until()) {
      const r = await get('team-a');
      if (r.status !== 200) throw new Error(`team-a answered ${r.status}`);
      ms.push(r.ms);
    }
    return ms;
  };
  const aloneUntil = performance.now() + FLOOD_SECONDS * 1000;
  const alone = await probe(() => performance.now() > aloneUntil);
  const flood = async (ws: string) => {
    const worker = new Worker(FLOODER, {
      eval: true,
      workerData: {
        url: `${stack.endpoints.api}/v1/workspaces/${ws}/breadcrumbs?schema_name=note.v1&limit=1`,
        token: stack.token,
        rate: FLOOD_RATE,
        seconds: FLOOD_SECONDS,
      },
    });
    let done = false;
    const result = new Promise<Record<string, number>>((resolve, reject) => {
      worker.once('message', (m: Record<string, number>) => {
        done = true;
        resolve(m);
      });
      worker.once('error', reject);
    });
    const during = await probe(() => done);
    const statuses = await result;
    await worker.terminate();
    return { statuses, during };
  };
  const unlimited = await flood('free');
  const limited = await flood('team-b');
  const line = (label: string, xs: number[]) => {
    const s = stats(xs);
    console.log(`  ${label.padEnd(40)} p50 ${fmt(s.p50)} ms  p95 ${fmt(s.p95)} ms (${xs.length} probes)`);
  };
  const outcome = (r: Awaited<ReturnType<typeof flood>>) =>
    `200: ${r.statuses['200'] ?? 0}, 429: ${r.statuses['429'] ?? 0}, failed: ${r.statuses.failed ?? 0}, lasted ${((r.statuses.ms ?? 0) / 1000).toFixed(1)} s`;
  console.log(
    `\nflood: ${FLOOD_RATE} GETs per second for ${FLOOD_SECONDS} s from a worker thread (open loop), team-a probing one GET at a time meanwhile`,
  );
  console.log(`  by free (no limit):              ${outcome(unlimited)}`);
  console.log(
    `  by team-b (rate ${TEAM_B.requestRate}/s, burst ${TEAM_B.requestBurst}):  ${outcome(limited)}`,
  );
  line('team-a alone', alone);
  line('team-a while free floods (no limit)', unlimited.during);
  line('team-a while team-b floods (limited)', limited.during);
} finally {
  await stack.stop();
}
