/**
 * What crumbs costs on AWS per unit of work, measured on the local stack: (a) a tool round trip (`tool.request.v1`
 * → the echo tool → `tool.response.v1`), (b) an agent turn with one tool call (offline model: `user.message.v1` →
 * agent → calculator → agent → `agent.response.v1`), (c) a 3-step workflow run (three echo steps).
 *
 * Per unit it prints DynamoDB read and write request units as DynamoDB reports them (a metering proxy in front of
 * DynamoDB Local adds `ReturnConsumedCapacity: INDEXES` to every call, so index writes count and no production
 * module changes), requests by operation, EventBridge entries and 64 KB chunks, SQS requests, Lambda invocations
 * with their durations, and dollars per million units (`support/prices.ts`). Left out on purpose: idle polling
 * (billed per hour, not per unit) and the publisher's stream reads (free). Durations are this machine's. Units run
 * one at a time unless `--concurrency` says otherwise (then batches form and SQS and Lambda costs are shared).
 *
 *   node bin/run-ts.js bench/cost.bench.ts [--roundtrips 30] [--turns 10] [--runs 10] [--concurrency 1] [--list]
 *
 * `--list` prints every DynamoDB request of one extra, unmetered unit per scenario (operation, key, schema, units),
 * to tell what each read and write is for.
 */

import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import type { InvocationRecord } from '#local/event-sources/lambda-context.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { topology } from '#shared/topology.ts';
import { CapacityCalculator, itemSize } from './support/capacity.ts';
import { BEFORE, BEFORE_COMMIT, type CostReading } from './support/cost-before.ts';
import {
  isObject,
  type MeteredCall,
  type MeteringProxy,
  startMeteringProxy,
} from './support/metering-proxy.ts';
import { PRICES } from './support/prices.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({
  options: {
    roundtrips: { type: 'string', default: '30' },
    turns: { type: 'string', default: '10' },
    runs: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '1' },
    list: { type: 'boolean', default: false },
  },
});
const concurrency = Math.max(1, Number(values.concurrency));

// ---------------------------------------------------------------------------------------------------------------
// Meters

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
const SQS_DATA_PLANE =
  /^AmazonSQS\.(SendMessage|SendMessageBatch|ReceiveMessage|DeleteMessage|DeleteMessageBatch|ChangeMessageVisibility|ChangeMessageVisibilityBatch)$/;
const CHUNK = 64 * 1024;

class Meter {
  readonly ddbRequests = new Map<string, number>();
  readonly units = new Map<string, { read: number; write: number }>();
  /** Calls DynamoDB answered without ConsumedCapacity (errors such as failed conditions): listed, not priced. */
  readonly unmetered = new Map<string, number>();
  streamReads = 0;
  eventEntries = 0;
  eventChunks = 0;
  eventBytes = 0;
  putEventsCalls = 0;
  readonly sqsRequests = new Map<string, number>();
  sqsChunks = 0;
  emptyReceives = 0;
  schedulerInvocations = 0;
  /** Multi-item writes: units by the rules vs what DynamoDB Local said. */
  computedMulti = 0;
  reportedByLocal = 0;
  /** Index write units inside transactions (counted once; doubled in the conservative reading). */
  indexUnitsInTransactions = 0;
  /** Single-item writes whose units the calculator computed too, and how many came out different. */
  singleChecked = 0;
  singleDisagreed = 0;
  readonly lambda = new Map<string, { n: number; ms: number; gbSeconds: number; memoryMb: number }>();

  /** With `--list`: one line per DynamoDB request. */
  listing: string[] | undefined;

  ddb(call: MeteredCall): void {
    const op = call.operation.replace(/^DynamoDB_20120810\./, '');
    if (call.operation.startsWith('DynamoDBStreams_')) {
      this.streamReads++;
      return;
    }
    if (!READS.has(op) && !WRITES.has(op)) return;
    try {
      this.listing?.push(describeCall(op, call));
    } catch (e) {
      this.listing?.push(`${op} ?? ${String(e)}`);
    }
    this.ddbRequests.set(op, (this.ddbRequests.get(op) ?? 0) + 1);
    const response = isObject(call.responseBody) ? call.responseBody : {};
    const consumed = response.ConsumedCapacity;
    const entries = Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed];
    if (call.status !== 200 || (entries.length === 0 && !WRITES.has(op))) {
      // A refused call (a failed condition, a cancelled transaction): AWS bills a failed conditional write too,
      // DynamoDB Local reports nothing; listed, not priced.
      const reason =
        call.status === 200
          ? ''
          : ` (${String(response.__type ?? call.status)
              .split('#')
              .pop()})`;
      this.unmetered.set(`${op}${reason}`, (this.unmetered.get(`${op}${reason}`) ?? 0) + 1);
      return;
    }
    const kind = READS.has(op) ? 'read' : 'write';
    if (op === 'TransactWriteItems' || op === 'BatchWriteItem') {
      // DynamoDB Local under-counts multi-item writes: computed by the documented rules (support/capacity.ts).
      const computed = calculator.writeRequest(op, isObject(call.requestBody) ? call.requestBody : {});
      this.add('table', 'write', computed.table);
      for (const [name, n] of Object.entries(computed.indexes)) this.add(name, 'write', n);
      for (const entry of entries.filter(isObject)) this.reportedByLocal += Number(entry.CapacityUnits ?? 0);
      this.computedMulti += computed.table + Object.values(computed.indexes).reduce((a, b) => a + b, 0);
      this.indexUnitsInTransactions += computed.indexUnitsInTransactions ?? 0;
      return;
    }
    if (WRITES.has(op) && isObject(call.requestBody)) {
      // Keeps the calculator's shadow current, and checks it against what DynamoDB Local reports.
      const computed = calculator.observeSingle(op, call.requestBody);
      const mine = computed.table + Object.values(computed.indexes).reduce((a, b) => a + b, 0);
      const theirs = entries.filter(isObject).reduce((n, e) => n + Number(e.CapacityUnits ?? 0), 0);
      this.singleChecked++;
      if (op !== 'UpdateItem' && mine !== theirs) this.singleDisagreed++;
    }
    for (const entry of entries.filter(isObject)) {
      const table = isObject(entry.Table) ? Number(entry.Table.CapacityUnits ?? 0) : undefined;
      const gsis = isObject(entry.GlobalSecondaryIndexes) ? entry.GlobalSecondaryIndexes : {};
      this.add('table', kind, table ?? Number(entry.CapacityUnits ?? 0));
      for (const [name, value] of Object.entries(gsis)) {
        this.add(name, kind, isObject(value) ? Number(value.CapacityUnits ?? 0) : 0);
      }
    }
  }

  private add(where: string, kind: 'read' | 'write', n: number): void {
    const u = this.units.get(where) ?? { read: 0, write: 0 };
    u[kind] += n;
    this.units.set(where, u);
  }

  events(call: MeteredCall): void {
    if (call.operation !== 'AWSEvents.PutEvents' || !isObject(call.requestBody)) return;
    this.putEventsCalls++;
    const entries = Array.isArray(call.requestBody.Entries) ? call.requestBody.Entries : [];
    for (const entry of entries.filter(isObject)) {
      // EventBridge's size of an entry: Time (14 bytes) + Source + DetailType + Detail + Resources, UTF-8.
      const size =
        14 +
        ['Source', 'DetailType', 'Detail'].reduce(
          (n, k) => n + Buffer.byteLength(String(entry[k] ?? ''), 'utf8'),
          0,
        ) +
        (Array.isArray(entry.Resources)
          ? entry.Resources.reduce((n: number, r) => n + Buffer.byteLength(String(r), 'utf8'), 0)
          : 0);
      this.eventEntries++;
      this.eventBytes += size;
      this.eventChunks += Math.max(1, Math.ceil(size / CHUNK));
    }
  }

  sqs(call: MeteredCall): void {
    if (!SQS_DATA_PLANE.test(call.operation)) return;
    const op = call.operation.replace(/^AmazonSQS\./, '');
    if (op === 'ReceiveMessage') {
      const messages = isObject(call.responseBody) ? call.responseBody.Messages : undefined;
      if (!Array.isArray(messages) || messages.length === 0) {
        this.emptyReceives++;
        return;
      }
    }
    if (op === 'SendMessage' && isObject(call.requestBody)) {
      if (String(call.requestBody.QueueUrl ?? '').endsWith(`/${topology.functions.timer.trigger.queue.name}`))
        this.schedulerInvocations++;
    }
    this.sqsRequests.set(op, (this.sqsRequests.get(op) ?? 0) + 1);
    this.sqsChunks += Math.max(1, Math.ceil(call.requestBytes / CHUNK));
  }

  invocation(record: InvocationRecord): void {
    const l = this.lambda.get(record.function) ?? { n: 0, ms: 0, gbSeconds: 0, memoryMb: record.memoryMb };
    l.n++;
    l.ms += record.durationMs;
    // Billed per 1 ms at the configured memory.
    l.gbSeconds += (record.memoryMb / 1024) * (Math.ceil(record.durationMs) / 1000);
    this.lambda.set(record.function, l);
  }
}

const calculator = new CapacityCalculator(topology.table);
let meter = new Meter();
let inFlight = 0;
let lastActivity = Date.now();
const touch = () => {
  lastActivity = Date.now();
};
const proxies: MeteringProxy[] = [];
const proxied: Partial<Record<'dynamodb' | 'sqs' | 'eventbridge', string>> = {};
const real: Partial<Record<'dynamodb' | 'sqs' | 'eventbridge', string>> = {};

const stack = await startBenchStack({
  interpose: async (service, endpoint) => {
    real[service] = endpoint;
    const proxy = await startMeteringProxy(endpoint, {
      rewrite:
        service === 'dynamodb'
          ? (operation, body) => {
              const op = operation.replace(/^DynamoDB_20120810\./, '');
              return READS.has(op) || WRITES.has(op) ? { ...body, ReturnConsumedCapacity: 'INDEXES' } : body;
            }
          : undefined,
      onCall: (call) => {
        if (service === 'dynamodb') {
          meter.ddb(call);
          if (!call.operation.startsWith('DynamoDBStreams_')) touch();
        } else if (service === 'eventbridge') {
          meter.events(call);
          touch();
        } else {
          meter.sqs(call);
          if (call.operation !== 'AmazonSQS.ReceiveMessage') touch();
        }
      },
    });
    proxies.push(proxy);
    proxied[service] = proxy.endpoint;
    return proxy.endpoint;
  },
  onInvocation: {
    started: () => {
      inFlight++;
      touch();
    },
    ended: (record) => {
      inFlight--;
      touch();
      meter.invocation(record);
    },
  },
});

const client = (endpoint: string | undefined) =>
  crumbsDocumentClient(
    new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
  );
try {
  // The writer of each unit's first breadcrumb (what an agent, the API or a person writes) is metered; the bench's
  // own setup and polling are not.
  const metered = new DynamoBreadcrumbStore({
    tableName: topology.table.name,
    client: client(proxied.dynamodb),
  });
  const store = new DynamoBreadcrumbStore({ tableName: topology.table.name, client: client(real.dynamodb) });
  const ws = 'cost';
  const principal = 'user:bench';
  const define = (id: string, schema_name: string, context: Record<string, unknown>) =>
    store.upsert(ws, id, { schema_name, title: id, tags: [], context }, { principal });
  await define('tool-echo', 'tool.def.v1', { name: 'echo', implementation: 'echo' });
  await define('tool-calculator', 'tool.def.v1', { name: 'calculator', implementation: 'calculator' });
  await define('agent-coster', 'agent.def.v1', {
    agent_id: 'coster',
    model: 'offline/crumbs',
    system_prompt: 'Answer briefly; use the calculator for arithmetic.',
    tools: ['calculator'],
    subscriptions: {
      selectors: [
        { schema_name: 'user.message.v1', all_tags: ['to:coster'], role: 'trigger' },
        {
          schema_name: 'tool.response.v1',
          role: 'trigger',
          context_match: [{ path: '$.requestedBy', op: 'eq', value: 'coster' }],
        },
      ],
    },
  });
  await define('wf-three', 'workflow.def.v1', {
    workflow_id: 'three',
    steps: Array.from({ length: 3 }, (_, i) => ({ id: `s${i}`, tool: 'echo', input: { step: i } })),
  });
  for (const id of ['tool-echo', 'tool-calculator', 'agent-coster', 'wf-three']) {
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
      if (s?.context.state === 'invalid') throw new Error(`${id} is invalid: ${JSON.stringify(s.context)}`);
      await sleep(20);
    }
  }
  await quiet();

  // (a) A tool request as an agent writes it: three tags, causation (hop 1 of a thread).
  let sequence = 0;
  const toolRoundTrip = async () => {
    const n = sequence++;
    const requestId = `req-${n}`;
    const thread = `thread-${n}`;
    await metered.create(
      ws,
      {
        schema_name: 'tool.request.v1',
        title: 'requester asks echo',
        tags: ['tool:request', `request:${requestId}`, `thread:${thread}`],
        context: { tool: 'echo', input: { n }, requestId, requestedBy: 'requester', thread, round: 1 },
      },
      { principal: 'agent:requester', causation: { caused_by: `${thread}@1`, thread, hop: 1 } },
    );
    await until(async () =>
      (await store.list({ workspace: ws, tag: `request:${requestId}`, limit: 2 })).items.some(
        (b) => b.schema_name === 'tool.response.v1',
      ),
    );
  };

  // (b) A user message the agent answers after one calculator call.
  const agentTurn = async () => {
    const n = sequence++;
    const { breadcrumb } = await metered.create(
      ws,
      {
        schema_name: 'user.message.v1',
        title: 'question',
        tags: ['user:message', 'to:coster'],
        context: { text: `what is ${17 + n}*23?` },
      },
      { principal: 'user:bench' },
    );
    await until(
      async () =>
        (
          await store.list({
            workspace: ws,
            schema_name: 'agent.response.v1',
            tag: `thread:${breadcrumb.id}`,
            limit: 1,
          })
        ).items.length > 0,
    );
  };

  // (c) A 3-step workflow run, request → succeeded.
  const workflowRun = async () => {
    const { breadcrumb } = await metered.create(
      ws,
      { schema_name: 'workflow.request.v1', title: '', tags: [], context: { workflow: 'three', input: {} } },
      { principal },
    );
    await until(async () => {
      try {
        const run = await store.get(ws, `run-${breadcrumb.id}`);
        if (run.context.status === 'failed') throw new Error(`run failed: ${JSON.stringify(run.context)}`);
        return run.context.status === 'succeeded';
      } catch (error) {
        if (error instanceof NotFoundError) return false;
        throw error;
      }
    });
  };

  const scenarios = [
    {
      name: '(a) tool round trip (echo; the request as an agent writes it)',
      unit: 'tool round trips',
      n: Number(values.roundtrips),
      run: toolRoundTrip,
    },
    {
      name: '(b) agent turn with one tool call (offline model, calculator)',
      unit: 'agent turns',
      n: Number(values.turns),
      run: agentTurn,
    },
    {
      name: '(c) 3-step workflow run (echo steps)',
      unit: 'workflow runs',
      n: Number(values.runs),
      run: workflowRun,
    },
  ];

  console.log(
    `bench:cost — local stack; per unit of work; ${PRICES.region} list prices recorded ${PRICES.recorded} (bench/support/prices.ts); concurrency ${concurrency}`,
  );
  const totals: string[] = [];
  for (const scenario of scenarios) {
    // A warm-up unit (cold starts, definition and schema-settings caches) is left out.
    await scenario.run();
    await quiet();
    if (values.list) {
      // One more unmetered unit, listed request by request.
      meter = new Meter();
      meter.listing = [];
      await scenario.run();
      await quiet();
      console.log(`\n${scenario.name}: the DynamoDB requests of one unit`);
      for (const line of meter.listing) console.log(`  ${line}`);
      console.log(`  ${[...meter.ddbRequests].map(([op, c]) => `${op} ${c}`).join(', ')}`);
    }
    meter = new Meter();
    for (let i = 0; i < scenario.n; i += concurrency) {
      await Promise.all(Array.from({ length: Math.min(concurrency, scenario.n - i) }, () => scenario.run()));
    }
    await quiet();
    const { total, conservative } = report(scenario.name, scenario.unit, meter, scenario.n);
    const before = beforeReading(scenario.unit as keyof typeof BEFORE);
    totals.push(
      `  ${scenario.unit.padEnd(18)} $${total.toFixed(2)} per million ($${conservative.toFixed(2)} if index writes inside transactions count twice); before: $${before.total.toFixed(2)} ($${before.conservative.toFixed(2)})`,
    );
  }
  console.log('summary');
  for (const line of totals) console.log(line);
} finally {
  await stack.stop();
  for (const p of proxies) await p.stop();
}

/**
 * Prints one scenario per unit and returns dollars per million units, and the same with index writes inside
 * transactions counted twice (support/capacity.ts says why both).
 */
function report(name: string, unit: string, m: Meter, n: number): { total: number; conservative: number } {
  const per = (x: number) => (x / n).toFixed(2);
  const table = m.units.get('table') ?? { read: 0, write: 0 };
  const indexes = [...m.units].filter(([k]) => k !== 'table').sort(([a], [b]) => a.localeCompare(b));
  const wru = [...m.units.values()].reduce((s, u) => s + u.write, 0);
  const rru = [...m.units.values()].reduce((s, u) => s + u.read, 0);
  const requests = [...m.ddbRequests.values()].reduce((s, v) => s + v, 0);
  const sqsRequests = [...m.sqsRequests.values()].reduce((s, v) => s + v, 0);
  const invocations = [...m.lambda.values()].reduce((s, l) => s + l.n, 0);
  const gbSeconds = [...m.lambda.values()].reduce((s, l) => s + l.gbSeconds, 0);

  const dollars = {
    'DynamoDB writes': wru * PRICES.dynamodb.writeRequestUnit,
    'DynamoDB reads': rru * PRICES.dynamodb.readRequestUnit,
    'EventBridge events': m.eventChunks * PRICES.eventbridge.customEvent,
    'EventBridge archive': (m.eventBytes / 1024 ** 3) * PRICES.eventbridge.archiveProcessedGb,
    Scheduler: m.schedulerInvocations * PRICES.eventbridge.schedulerInvocation,
    SQS: m.sqsChunks * PRICES.sqs.request,
    'Lambda requests': invocations * PRICES.lambda.request,
    'Lambda duration': gbSeconds * PRICES.lambda.armGbSecond,
  };
  const perMillion = (x: number) => (x / n) * 1e6;
  const total = Object.values(dollars).reduce((s, d) => s + d, 0);

  console.log(`\n${name}: n=${n}`);
  const b = BEFORE[unit as keyof typeof BEFORE];
  if (b !== undefined) {
    const total = Object.values(b.wru).reduce((s, u) => s + u, 0);
    const parts = Object.entries(b.wru)
      .map(([k, u]) => `${k} ${u.toFixed(2)}`)
      .join(', ');
    const reqs = Object.values(b.requests).reduce((s, r) => s + r, 0);
    console.log(
      `  before      ${total.toFixed(2)} WRU (${parts}; ${(total + b.inTransactions).toFixed(2)} with index writes in transactions twice) · ${b.rru.toFixed(2)} RRU · ${reqs.toFixed(2)} requests: ${Object.entries(
        b.requests,
      )
        .map(([op, c]) => `${op} ${c.toFixed(2)}`)
        .join(', ')} (${BEFORE_COMMIT}, support/cost-before.ts)`,
    );
  }
  console.log(
    `  DynamoDB     ${per(wru)} WRU (table ${per(table.write)}${indexes.map(([k, u]) => `, ${k} ${per(u.write)}`).join('')}) · ` +
      `${per(rru)} RRU (table ${per(table.read)}${indexes.map(([k, u]) => `, ${k} ${per(u.read)}`).join('')})`,
  );
  console.log(
    `               ${per(requests)} requests: ${[...m.ddbRequests]
      .sort((a, b) => b[1] - a[1])
      .map(([op, c]) => `${op} ${per(c)}`)
      .join(', ')}`,
  );
  console.log(
    `               of which index writes inside transactions, counted once: ${per(m.indexUnitsInTransactions)} WRU`,
  );
  console.log(
    `               multi-item writes computed by the rules: ${per(m.computedMulti)} WRU (DynamoDB Local reported ${per(m.reportedByLocal)}); ` +
      `single-item Put/Delete where the rules and DynamoDB Local differ: ${m.singleDisagreed} of ${m.singleChecked} writes`,
  );
  if (m.unmetered.size > 0) {
    console.log(
      `               answered without ConsumedCapacity (not priced): ${[...m.unmetered].map(([op, c]) => `${op} ${per(c)}`).join(', ')}`,
    );
  }
  console.log(
    `  EventBridge  ${per(m.eventEntries)} events (${per(m.eventChunks)} billed 64 KB chunks, ${per(m.putEventsCalls)} PutEvents calls, ${(m.eventBytes / Math.max(1, m.eventEntries)).toFixed(0)} B each)${m.schedulerInvocations > 0 ? `; Scheduler ${per(m.schedulerInvocations)} invocations` : ''}`,
  );
  console.log(
    `  SQS          ${per(sqsRequests)} requests: ${[...m.sqsRequests]
      .sort((a, b) => b[1] - a[1])
      .map(([op, c]) => `${op} ${per(c)}`)
      .join(', ')} (idle empty receives left out: ${m.emptyReceives})`,
  );
  console.log(
    `  Lambda       ${per(invocations)} invocations: ${[...m.lambda]
      .sort((a, b) => b[1].n - a[1].n)
      .map(([fn, l]) => `${fn} ${per(l.n)} × ${(l.ms / l.n).toFixed(1)} ms @ ${l.memoryMb} MB`)
      .join(', ')}`,
  );
  console.log(`  stream GetRecords (free for Lambda triggers, per poll): ${m.streamReads}`);
  console.log(
    `  $ per million ${unit}: ${Object.entries(dollars)
      .filter(([, d]) => d > 0)
      .map(([k, d]) => `${k} ${perMillion(d).toFixed(2)}`)
      .join(' + ')} = $${perMillion(total).toFixed(2)}`,
  );
  const doubled = m.indexUnitsInTransactions * PRICES.dynamodb.writeRequestUnit;
  return { total: perMillion(total), conservative: perMillion(total + doubled) };
}

/** The reading before the lean write path (`support/cost-before.ts`), priced as today's: both ways of counting. */
function beforeReading(unit: keyof typeof BEFORE): { total: number; conservative: number } {
  const b: CostReading = BEFORE[unit];
  const wru = Object.values(b.wru).reduce((s, u) => s + u, 0);
  const total =
    wru * PRICES.dynamodb.writeRequestUnit * 1e6 +
    b.rru * PRICES.dynamodb.readRequestUnit * 1e6 +
    b.otherDollars;
  return { total, conservative: total + b.inTransactions * PRICES.dynamodb.writeRequestUnit * 1e6 };
}

/** One request as a line: operation, the keys it touches (schema of what it writes), conditions, units. */
function describeCall(op: string, call: MeteredCall): string {
  const body = isObject(call.requestBody) ? call.requestBody : {};
  const response = isObject(call.responseBody) ? call.responseBody : {};
  const attr = (v: unknown): string => {
    if (!isObject(v)) return '?';
    const inner = v.S ?? v.N ?? v.BOOL;
    return inner === undefined ? JSON.stringify(v).slice(0, 40) : String(inner);
  };
  const key = (k: unknown): string => (isObject(k) ? `${attr(k.workspace)}/${attr(k.id)}` : '?');
  const item = (it: unknown): string => {
    if (!isObject(it)) return '?';
    const kind = isObject(it.kind) ? ` ${attr(it.kind)}` : '';
    const schema = isObject(it.schema_name) ? ` ${attr(it.schema_name)}` : '';
    return `${key(it)}${kind}${schema} (${itemSize(it as Parameters<typeof itemSize>[0])} B)`;
  };
  const parts: string[] = [];
  if (isObject(body.Key)) parts.push(key(body.Key));
  if (isObject(body.Item)) parts.push(item(body.Item));
  if (typeof body.IndexName === 'string') parts.push(`index ${body.IndexName}`);
  if (isObject(body.ExpressionAttributeValues) && op === 'Query') {
    parts.push(
      Object.values(body.ExpressionAttributeValues)
        .map((v) => attr(v))
        .join(' '),
    );
  }
  if (isObject(body.RequestItems)) {
    for (const request of Object.values(body.RequestItems)) {
      if (isObject(request) && Array.isArray(request.Keys)) parts.push(request.Keys.map(key).join(', '));
      if (Array.isArray(request)) {
        parts.push(
          request
            .map((r) => (isObject(r) && isObject(r.PutRequest) ? `put ${item(r.PutRequest.Item)}` : 'delete'))
            .join(', '),
        );
      }
    }
  }
  if (Array.isArray(body.TransactItems)) parts.push(`${body.TransactItems.length} items`);
  if (typeof body.UpdateExpression === 'string') parts.push(`update ${body.UpdateExpression.slice(0, 60)}`);
  if (typeof body.ConditionExpression === 'string') parts.push(`if ${body.ConditionExpression.slice(0, 50)}`);
  const consumed = response.ConsumedCapacity;
  const units = (Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed])
    .filter(isObject)
    .reduce((n, e) => n + Number(e.CapacityUnits ?? 0), 0);
  const failed =
    call.status === 200
      ? ''
      : ` FAILED ${String(response.__type ?? call.status)
          .split('#')
          .pop()}`;
  return `${op.padEnd(15)} ${units.toFixed(1).padStart(5)} CU  ${parts.join(' · ')}${failed}`;
}

/** Waits until nothing runs: the stream is read, no invocation is in flight, and nothing happened for a while. */
async function quiet(): Promise<void> {
  for (;;) {
    await stack.settle();
    if (inFlight === 0 && Date.now() - lastActivity > 600) return;
    await sleep(100);
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the unit of work to finish');
    await sleep(10);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
