/**
 * What one open dashboard tab costs for an hour on AWS — the Live view following every change and the approvals
 * badge in the navigation — pushed over the change channel vs long-polled, at stated write rates.
 *
 * Long-polled (without a change channel): the Live view's `GET …/changes?wait=20` runs the real `readChanges` here
 * with a fake clock over a change log written at the rate, and the client asks again as soon as an answer comes
 * (after one round trip); the badge reads `GET …/approvals` every 5 s. Pushed: the real stream publisher
 * (`publishStreamBatch` with the change feed) runs over the stream batches the writes make (Lambda polls a shard
 * four times a second), and its publishes are counted as AppSync Events operations in 5 KB increments, in (every
 * change is published, subscriber or not) and out (to this tab); the tab holds one connection and one
 * subscription, reads `/changes?wait=0` once for the backlog and once to start its chain, again each `MAX_SEEN`
 * changes (`shared/client/change-feed.ts`), and the badge once.
 *
 * Stated assumptions (printed): a request's handler work besides waiting, the round trip, an index entry's size,
 * and an upper bound for the publisher's time per publish request (AppSync's HTTP latency, not measured here).
 * Prices: `support/prices.ts` (us-east-1; Lambda arm at the API's and the publisher's memory, DynamoDB on-demand,
 * HTTP API requests, AppSync Events operations and connection minutes).
 *
 *   node bin/run-ts.js bench/live-views.bench.ts [--hours 1]
 */

import { parseArgs } from 'node:util';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { CHANGE_LOG_SHARDS, headItem } from '#shared/adapters/dynamodb/items.ts';
import { MAX_SEEN } from '#shared/client/change-feed.ts';
import { readChanges } from '#shared/core/stream/changes.ts';
import { MAX_CHANGES_PER_ANSWER } from '#shared/core/stream/feed-events.ts';
import { publishStreamBatch } from '#shared/core/stream/publisher.ts';
import { ChannelChangeFeed } from '#shared/core/streaming/change-channels.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { ChangeCursor, ChangeEntry, ChangeLog } from '#shared/ports/activity.ts';
import type { DeltaChannel } from '#shared/ports/delta-channel.ts';
import { topology } from '#shared/topology.ts';
import { PRICES } from './support/prices.ts';

const { values } = parseArgs({ options: { hours: { type: 'string', default: '1' } } });
const HOUR_MS = Number(values.hours) * 3_600_000;

const ASSUME = {
  /** Work of a request besides its wait (auth, parse, answer), billed per request. */
  handlerMs: 20,
  /** Browser ↔ API Gateway ↔ Lambda and back, between an answer and the next long poll. */
  roundTripMs: 50,
  /** One change-log index entry (keys, schema, title, tags, causation). */
  entryBytes: 400,
  /** Upper bound on the publisher's added time per publish request (it runs beside routing). */
  publishMs: 20,
  /** The badge's interval today (`COUNT_REFRESH_MS` in ui/src/views/approvals.tsx). */
  badgeEveryMs: 5_000,
  /** How often Lambda reads a DynamoDB stream shard (four times a second). */
  shardPollMs: 250,
};
const STREAM = { waitMs: 20_000, settleMs: 1500, pollMs: 500 };
const API_GB = topology.functions.api.memoryMb / 1024;
const PUBLISHER_GB = topology.functions.publisher.memoryMb / 1024;
const RATES = [
  { label: '1 write a minute', perSecond: 1 / 60 },
  { label: '10 writes a second', perSecond: 10 },
];

interface Bill {
  lambdaGbSeconds: number;
  lambdaRequests: number;
  dynamoReadUnits: number;
  apiRequests: number;
  appsyncOperations: number;
  connectionMinutes: number;
}
const zero = (): Bill => ({
  lambdaGbSeconds: 0,
  lambdaRequests: 0,
  dynamoReadUnits: 0,
  apiRequests: 0,
  appsyncOperations: 0,
  connectionMinutes: 0,
});

function dollars(b: Bill): Record<keyof Bill, number> & { total: number } {
  const d = {
    lambdaGbSeconds: b.lambdaGbSeconds * PRICES.lambda.armGbSecond,
    lambdaRequests: b.lambdaRequests * PRICES.lambda.request,
    dynamoReadUnits: b.dynamoReadUnits * PRICES.dynamodb.readRequestUnit,
    apiRequests: b.apiRequests * PRICES.apiGateway.httpApiRequest,
    appsyncOperations: b.appsyncOperations * PRICES.appsyncEvents.operation,
    connectionMinutes: b.connectionMinutes * PRICES.appsyncEvents.connectionMinute,
  };
  return { ...d, total: Object.values(d).reduce((a, x) => a + x, 0) };
}

/** DynamoDB read units of one `DynamoChangeLog.read`: a Query per shard and index, eventually consistent. */
function changeLogReadUnits(entries: number): number {
  const queries = CHANGE_LOG_SHARDS * 2;
  const perQuery = (entries * ASSUME.entryBytes) / queries;
  return queries * Math.max(1, Math.ceil(perQuery / 4096)) * 0.5;
}

/** One API request that answers at once: handler work, a Lambda and an API Gateway request. */
function quickRequest(bill: Bill, readUnits: number): void {
  bill.lambdaRequests += 1;
  bill.apiRequests += 1;
  bill.lambdaGbSeconds += (ASSUME.handlerMs / 1000) * API_GB;
  bill.dynamoReadUnits += readUnits;
}

const iso = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();

/** Write times over the hour at `perSecond`, evenly spaced. */
function writeTimes(perSecond: number): number[] {
  const every = 1000 / perSecond;
  const times: number[] = [];
  for (let t = every / 2; t < HOUR_MS; t += every) times.push(t);
  return times;
}

/** A change log written at `times`, whose reads are counted. */
function countingLog(times: readonly number[]): ChangeLog & { reads: number; readUnits: number } {
  const entries: ChangeEntry[] = times.map((t, i) => ({
    id: `b${i}`,
    workspace: 'bench',
    kind: 'version',
    schema_name: 'bench.note.v1',
    title: `note ${i}`,
    tags: [],
    version: 1,
    created_at: iso(t),
    created_by: 'user:bench',
    updated_at: iso(t),
    updated_by: 'user:bench',
    cursor: `${iso(t)}#b${String(i).padStart(8, '0')}#0000000001`,
  }));
  const log = {
    reads: 0,
    readUnits: 0,
    cursorAt: (time: Date): ChangeCursor => `${time.toISOString()}~`,
    checkCursor: (c: string) => c,
    async read(_ws: string, after: ChangeCursor, until: ChangeCursor, limit: number) {
      log.reads += 1;
      const found: ChangeEntry[] = [];
      // Entries are in time order: a binary search would do, a scan from the first candidate is enough here.
      let lo = 0;
      let hi = entries.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((entries[mid] as ChangeEntry).cursor <= after) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < entries.length && found.length < limit; i++) {
        const e = entries[i] as ChangeEntry;
        if (e.cursor > until) break;
        found.push(e);
      }
      log.readUnits += changeLogReadUnits(found.length);
      return found;
    },
    async latest() {
      log.reads += 1;
      log.readUnits += changeLogReadUnits(0);
      return [];
    },
  };
  return log;
}

/** The tab without a change channel: the Live view's long polls and the badge's reads. */
async function polledTab(perSecond: number): Promise<{ bill: Bill; requests: number }> {
  const bill = zero();
  const log = countingLog(writeTimes(perSecond));
  let now = 0;
  const clock = { now: () => new Date(Date.UTC(2026, 0, 1) + now) };
  const sleep = async (ms: number) => {
    now += ms;
  };
  let lastEventId: ChangeCursor | undefined;
  let requests = 0;
  while (now < HOUR_MS) {
    const started = now;
    const batch = await readChanges(log, {
      workspace: 'bench',
      ...(lastEventId !== undefined ? { cursor: lastEventId } : {}),
      filters: {},
      waitMs: STREAM.waitMs,
      settleMs: STREAM.settleMs,
      pollMs: STREAM.pollMs,
      clock,
      sleep,
    });
    lastEventId = batch.cursor;
    requests += 1;
    bill.lambdaRequests += 1;
    bill.apiRequests += 1;
    bill.lambdaGbSeconds += ((now - started + ASSUME.handlerMs) / 1000) * API_GB;
    now += ASSUME.handlerMs + ASSUME.roundTripMs;
  }
  bill.dynamoReadUnits += log.readUnits;
  // The approvals badge: a listing of human.request.v1 (one Query, nothing pending) every 5 s.
  const badgeReads = Math.floor(HOUR_MS / ASSUME.badgeEveryMs);
  for (let i = 0; i < badgeReads; i++) quickRequest(bill, 0.5);
  return { bill, requests: requests + badgeReads };
}

/** A channel that counts publishes and the AppSync operations they are metered as (5 KB increments). */
class CountingChannel implements DeltaChannel {
  requests = 0;
  events = 0;
  operations = 0;
  async publish(_channel: string, events: readonly string[]): Promise<void> {
    this.requests += 1;
    this.events += events.length;
    for (const e of events) {
      this.operations += Math.max(1, Math.ceil(Buffer.byteLength(e) / PRICES.appsyncEvents.meteredBytes));
    }
  }
}

function streamRecord(record: Breadcrumb, sequence: number): DynamoDBRecord {
  return {
    eventName: 'INSERT',
    dynamodb: {
      SequenceNumber: String(sequence),
      NewImage: marshall(headItem(record, `w${sequence}`), { removeUndefinedValues: true }) as never,
    },
  };
}

/** The tab with a change channel, and what the publisher pays for every change (subscriber or not). */
async function pushedTab(
  perSecond: number,
): Promise<{ tab: Bill; publishing: Bill; changes: number; events: number; requests: number }> {
  const channel = new CountingChannel();
  const feed = new ChannelChangeFeed(channel);
  const times = writeTimes(perSecond);
  const bus = {
    put: async (entries: readonly unknown[]) => ({ results: entries.map(() => ({ eventId: 'e' })) }),
  };
  const adopter = { adopt: async () => undefined, rejectPlainPut: async () => undefined };
  let next = 0;
  let sequence = 0;
  for (let poll = ASSUME.shardPollMs; poll <= HOUR_MS + ASSUME.shardPollMs; poll += ASSUME.shardPollMs) {
    const records: DynamoDBRecord[] = [];
    for (; next < times.length && (times[next] as number) < poll; next++) {
      const t = times[next] as number;
      sequence += 1;
      records.push(
        streamRecord(
          {
            id: `01JBENCH${String(next).padStart(18, '0')}`,
            workspace: 'bench',
            schema_name: 'bench.note.v1',
            title: `note ${next}`,
            tags: ['bench', `thread:${next % 7}`],
            context: { i: next },
            version: 1,
            checksum: 'c',
            created_at: iso(t),
            updated_at: iso(t),
            created_by: 'user:bench',
            updated_by: 'user:bench',
          },
          sequence,
        ),
      );
    }
    if (records.length > 0) await publishStreamBatch(records, { bus, adopter, changeFeed: feed });
  }

  const publishing = zero();
  publishing.appsyncOperations = channel.operations;
  publishing.lambdaGbSeconds = ((channel.requests * ASSUME.publishMs) / 1000) * PUBLISHER_GB;

  const tab = zero();
  tab.connectionMinutes = HOUR_MS / 60_000;
  tab.appsyncOperations = 2 + channel.operations; // connect, subscribe, and every event delivered to this tab
  // The Live view's backlog (50), the feed's first read (from now), the badge's count.
  quickRequest(tab, changeLogReadUnits(50));
  quickRequest(tab, changeLogReadUnits(0));
  quickRequest(tab, 0.5);
  // Each MAX_SEEN changes the feed reads on (pages of MAX_CHANGES_PER_ANSWER) and forgets what it read past.
  const catchUps = Math.floor(times.length / MAX_SEEN);
  let reads = 3;
  for (let i = 0; i < catchUps; i++) {
    for (let left = MAX_SEEN + 1; left > 0; left -= MAX_CHANGES_PER_ANSWER) {
      quickRequest(tab, changeLogReadUnits(Math.min(left, MAX_CHANGES_PER_ANSWER)));
      reads += 1;
    }
  }
  return { tab, publishing, changes: times.length, events: channel.events, requests: reads };
}

const money = (x: number) => `$${x < 0.01 ? x.toFixed(6) : x.toFixed(4)}`;
const num = (x: number) => (Number.isInteger(x) ? x.toLocaleString('en-US') : x.toFixed(1));

console.log(
  `one open tab (Live view + approvals badge) for ${values.hours} hour(s), prices ${PRICES.region} as of ${PRICES.recorded}`,
);
console.log(
  `assumed: ${ASSUME.handlerMs} ms handler work a request, ${ASSUME.roundTripMs} ms round trip, ${ASSUME.entryBytes} B an index entry, ≤ ${ASSUME.publishMs} ms publisher time a publish request; API ${topology.functions.api.memoryMb} MB, publisher ${topology.functions.publisher.memoryMb} MB`,
);
for (const rate of RATES) {
  const polled = await polledTab(rate.perSecond);
  const pushed = await pushedTab(rate.perSecond);
  const pushedTotal = zero();
  for (const key of Object.keys(pushedTotal) as (keyof Bill)[]) {
    pushedTotal[key] = pushed.tab[key] + pushed.publishing[key];
  }
  const p = dollars(polled.bill);
  const tabCost = dollars(pushed.tab);
  const pubCost = dollars(pushed.publishing);
  const q = dollars(pushedTotal);
  console.log(`\n${rate.label}: ${num(pushed.changes)} changes`);
  console.log('| | long-polled | pushed: the tab | pushed: publishing every change |');
  console.log('| --- | --- | --- | --- |');
  const row = (name: string, key: keyof Bill) =>
    console.log(
      `| ${name} | ${num(polled.bill[key])} (${money(p[key])}) | ${num(pushed.tab[key])} (${money(tabCost[key])}) | ${num(pushed.publishing[key])} (${money(pubCost[key])}) |`,
    );
  row('Lambda GB-s', 'lambdaGbSeconds');
  row('Lambda requests', 'lambdaRequests');
  row('DynamoDB read units', 'dynamoReadUnits');
  row('HTTP API requests', 'apiRequests');
  row('AppSync Events operations', 'appsyncOperations');
  row('AppSync connection minutes', 'connectionMinutes');
  console.log(`| total | ${money(p.total)} | ${money(tabCost.total)} | ${money(pubCost.total)} |`);
  console.log(
    `pushed ${money(q.total)} vs long-polled ${money(p.total)}: ${(p.total / q.total).toFixed(1)}× cheaper pushed (${num(polled.requests)} API requests polled, ${num(pushed.requests)} pushed; ${num(pushed.events)} channel events)`,
  );
}
