/**
 * Store benchmark: create / get / update / list throughput through the API core (no HTTP) and the DynamoDB
 * requests each API call makes, against DynamoDB Local.
 *
 *   node bin/run-ts.js bench/store.bench.ts [--ops 400] [--concurrency 8]
 *
 * Numbers are DynamoDB Local on this machine (a Java process on the same 2 cores): they compare code paths, not
 * what DynamoDB itself would do.
 */

import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { ensureTable } from '#local/provision.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { createApi } from '#shared/core/api/api.ts';
import type { HttpRequest } from '#shared/core/api/http.ts';
import { topology } from '#shared/topology.ts';

const { values } = parseArgs({
  options: { ops: { type: 'string', default: '400' }, concurrency: { type: 'string', default: '8' } },
});
const OPS = Number(values.ops);
const CONCURRENCY = Number(values.concurrency);

const ddb = await startDynamoDbLocal({ port: 0 });
try {
  const raw = new DynamoDBClient({
    endpoint: ddb.endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  await ensureTable(raw);
  const requests: string[] = [];
  const client = crumbsDocumentClient(raw);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      requests.push(String(context.commandName));
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
  const api = createApi({ store: new DynamoBreadcrumbStore({ tableName: topology.table.name, client }) });
  const caller = { principal: 'user:bench', workspaces: '*' as const };
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const request: HttpRequest = {
      method,
      path,
      headers: { 'content-type': 'application/json', ...headers },
      query: {},
      body: body === undefined ? undefined : JSON.stringify(body),
      caller,
    };
    const [p, q] = path.split('?');
    request.path = p ?? path;
    for (const pair of (q ?? '').split('&').filter(Boolean)) {
      const [k, v] = pair.split('=');
      request.query[k ?? ''] = decodeURIComponent(v ?? '');
    }
    return api(request);
  };

  const base = '/v1/workspaces/bench/breadcrumbs';
  const ids: string[] = [];
  const rows: { op: string; opsPerSec: number; requestsPerCall: number; p50: number; p99: number }[] = [];

  async function measure(
    op: string,
    fn: (i: number) => Promise<{ statusCode: number; body?: unknown }>,
  ): Promise<void> {
    requests.length = 0;
    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < OPS) {
          const i = next++;
          const t = performance.now();
          const res = await fn(i);
          latencies.push(performance.now() - t);
          if (res.statusCode >= 300) throw new Error(`${op} answered ${res.statusCode}: ${String(res.body)}`);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    rows.push({
      op,
      opsPerSec: OPS / seconds,
      requestsPerCall: requests.length / OPS,
      p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
      p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    });
  }

  await measure('create (3 tags)', async (i) => {
    const res = await call('POST', base, {
      schema_name: 'bench.note.v1',
      title: `note ${i}`,
      tags: ['bench', `group:${i % 10}`, 'x'],
      context: { text: `hello ${i}`, n: i },
    });
    ids.push(String(JSON.parse(String(res.body)).id));
    return res;
  });
  await measure('get (context view)', (i) => call('GET', `${base}/${ids[i % ids.length]}`));
  await measure('get full', (i) => call('GET', `${base}/${ids[i % ids.length]}/full`));
  await measure('update (If-Match-less PATCH)', (i) =>
    call('PATCH', `${base}/${ids[i % ids.length]}`, { context: { n: -i } }),
  );
  await measure('list by schema (limit 25)', () => call('GET', `${base}?schema_name=bench.note.v1&limit=25`));
  await measure('list by tag (limit 25)', () => call('GET', `${base}?tag=bench&limit=25`));
  await measure('list by schema+tag (limit 25)', (i) =>
    call('GET', `${base}?schema_name=bench.note.v1&tag=group:${i % 10}&limit=25`),
  );

  console.log(`store benchmark: ${OPS} ops each, concurrency ${CONCURRENCY}, DynamoDB Local ${ddb.endpoint}`);
  console.log('operation                        ops/s   DynamoDB req/call   p50 ms   p99 ms');
  for (const r of rows) {
    console.log(
      `${r.op.padEnd(32)} ${r.opsPerSec.toFixed(0).padStart(6)}   ${r.requestsPerCall.toFixed(2).padStart(17)}   ${r.p50.toFixed(1).padStart(6)}   ${r.p99.toFixed(1).padStart(6)}`,
    );
  }
  raw.destroy();
} finally {
  await ddb.stop();
}
