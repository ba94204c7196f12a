/**
 * The per-workspace request rate on the local stack (`crumbs dev`: the api function on DynamoDB Local), in one run:
 *   cost      the added p50/p95 latency of a GET through the API with the limiter and without it (a workspace whose
 *             rate is 0 takes no write), and its price per million requests: one conditional UpdateItem of a
 *             small item per admitted request (1 WRU, measured with ReturnConsumedCapacity), at on-demand prices
 *   flood     team-a's GET p50/p95 alone, then while a workspace without a limit floods the API from many
 *             connections at once, then while team-b floods it the same way over its rate (and how many of each
 *             flood's requests were served, refused with 429, or reset by the overloaded local server)
 *
 *   node bin/run-ts.js bench/throttle.bench.ts [--requests 200] [--flood 600] [--concurrency 40]
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { ENV, topology } from '#shared/topology.ts';
import { percentile } from './support/counting-proxy.ts';
import { PRICES } from './support/prices.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '200' },
    flood: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '40' },
  },
});
const REQUESTS = Number(values.requests);
const FLOOD = Number(values.flood);
const CONCURRENCY = Number(values.concurrency);

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

  // The flood: team-a probes alone, then while a workspace without a limit floods, then while team-b (over its rate)
  // floods the same way. The local API is one process, so a flood that is served takes its CPU from team-a; one that
  // is refused early (no write once an instance has seen the cell full) takes much less.
  const alone: number[] = [];
  for (let i = 0; i < 40; i++) alone.push((await get('team-a')).ms);
  const flood = async (ws: string) => {
    let sent = 0;
    const statuses: number[] = [];
    const flooders = Array.from({ length: CONCURRENCY }, async () => {
      while (sent < FLOOD) {
        sent++;
        statuses.push((await get(ws)).status);
      }
    });
    const during: number[] = [];
    const probing = (async () => {
      while (sent < FLOOD) {
        const r = await get('team-a');
        if (r.status !== 200) throw new Error(`team-a answered ${r.status} during the flood`);
        during.push(r.ms);
      }
    })();
    await Promise.all([...flooders, probing]);
    return { statuses, during };
  };
  const unlimited = await flood('free');
  const limited = await flood('team-b');
  const count = (xs: number[], status: number) => xs.filter((s) => s === status).length;
  const line = (label: string, xs: number[]) => {
    const s = stats(xs);
    console.log(`  ${label.padEnd(40)} p50 ${fmt(s.p50)} ms  p95 ${fmt(s.p95)} ms (${xs.length} probes)`);
  };
  console.log(
    `\nflood: ${FLOOD} GETs over ${CONCURRENCY} connections, team-a probing one at a time meanwhile`,
  );
  console.log(
    `  by free (no limit):              200: ${count(unlimited.statuses, 200)}, 429: ${count(unlimited.statuses, 429)}, reset: ${count(unlimited.statuses, 0)}`,
  );
  console.log(
    `  by team-b (rate ${TEAM_B.requestRate}/s, burst ${TEAM_B.requestBurst}):  200: ${count(limited.statuses, 200)}, 429: ${count(limited.statuses, 429)}, reset: ${count(limited.statuses, 0)}`,
  );
  line('team-a alone', alone);
  line('team-a while free floods (no limit)', unlimited.during);
  line('team-a while team-b floods (limited)', limited.during);
} finally {
  await stack.stop();
}
