/**
 * What a breadcrumb of 1 MB costs on AWS with the attachments room's spill (claim check), against keeping it in
 * DynamoDB (which cannot: an item holds 400 KB; priced as if it could, at the same write and read units per KB).
 * Measured on the local stack: `--count` breadcrumbs of 1 MB (distinct contents) are written through the store and
 * read back once each; DynamoDB's consumed capacity is what DynamoDB Local reports (`ReturnConsumedCapacity:
 * INDEXES`, through a metering proxy), S3 requests are counted on the client. Prices: `support/prices.ts` and S3
 * Standard's list prices (us-east-1). Printed per 1,000 breadcrumbs, plus a month of storage.
 *
 *   node bin/run-ts.js bench/attachments.bench.ts [--count 40]
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { crumbsDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { DEFAULT_ATTACHMENT_LIMITS } from '#shared/rooms/attachments/reference.ts';
import { S3BlobStore } from '#shared/rooms/attachments/s3-blob-store.ts';
import { ContextSpill } from '#shared/rooms/attachments/spill.ts';
import { topology } from '#shared/topology.ts';
import { isObject, startMeteringProxy } from './support/metering-proxy.ts';
import { PRICES } from './support/prices.ts';
import { startBenchStack } from './support/stack.ts';

const S3_PRICES = {
  source: 'https://aws.amazon.com/s3/pricing/ (S3 Standard, us-east-1)',
  /** PUT, COPY, POST, LIST requests. */
  put: 0.005 / 1000,
  /** GET, SELECT and all other requests (HEAD among them). */
  get: 0.0004 / 1000,
  /** Per GB-month, first 50 TB. */
  storageGbMonth: 0.023,
};
const DYNAMODB_STORAGE_GB_MONTH = 0.25;
const MB = 1024 * 1024;

const { values } = parseArgs({ options: { count: { type: 'string', default: '40' } } });
const count = Math.max(1, Number(values.count));

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const units = { read: 0, write: 0 };
const s3 = new Map<string, number>();
const stack = await startBenchStack({ runExecutors: false });
const proxy = await startMeteringProxy(stack.endpoints.dynamodb, {
  rewrite: (_op, body) => ({ ...body, ReturnConsumedCapacity: 'INDEXES' }),
  onCall: (call) => {
    // On-demand tables report `CapacityUnits` (table and indexes); reads and writes told apart by operation.
    const consumed = isObject(call.responseBody) ? call.responseBody.ConsumedCapacity : undefined;
    const op = call.operation.replace(/^DynamoDB_20120810\./, '');
    for (const c of [consumed].flat()) {
      if (!isObject(c)) continue;
      if (READS.has(op)) units.read += Number(c.CapacityUnits ?? 0);
      else units.write += Number(c.CapacityUnits ?? 0);
    }
  },
});
try {
  const s3Client = new S3Client({
    endpoint: stack.endpoints.blobs,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  });
  s3Client.middlewareStack.add(
    (next, context) => async (args) => {
      s3.set(context.commandName ?? '?', (s3.get(context.commandName ?? '?') ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'countS3Requests' },
  );
  const store = new DynamoBreadcrumbStore({
    tableName: topology.table.name,
    client: crumbsDocumentClient(
      new DynamoDBClient({ endpoint: proxy.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    ),
    spill: new ContextSpill(
      new S3BlobStore({ bucket: topology.blobs.bucketName, client: s3Client }),
      DEFAULT_ATTACHMENT_LIMITS,
    ),
  });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const text = `${i}:`.padEnd(MB - 16, String.fromCharCode(97 + (i % 26)));
    const { breadcrumb } = await store.create(
      'bench-att',
      { schema_name: 'doc.v1', title: `doc ${i}`, tags: [], context: { text } },
      { principal: 'user:bench' },
    );
    ids.push(breadcrumb.id);
  }
  const written = { ...units, s3: new Map(s3) };
  units.read = 0;
  units.write = 0;
  s3.clear();
  for (const id of ids) await store.get('bench-att', id);
  const read = { ...units, s3: new Map(s3) };

  const per1000 = 1000 / count;
  const putLike = (m: Map<string, number>) =>
    (m.get('PutObjectCommand') ?? 0) + (m.get('ListObjectsV2Command') ?? 0);
  const getLike = (m: Map<string, number>) =>
    (m.get('GetObjectCommand') ?? 0) + (m.get('HeadObjectCommand') ?? 0);
  const spillWrite =
    written.write * per1000 * PRICES.dynamodb.writeRequestUnit +
    written.read * per1000 * PRICES.dynamodb.readRequestUnit +
    putLike(written.s3) * per1000 * S3_PRICES.put +
    getLike(written.s3) * per1000 * S3_PRICES.get;
  const spillRead =
    read.read * per1000 * PRICES.dynamodb.readRequestUnit + getLike(read.s3) * per1000 * S3_PRICES.get;
  const spillStorage = (S3_PRICES.storageGbMonth * (1000 * MB)) / 1024 ** 3;
  // DynamoDB alone, if an item could hold 1 MB: 1 WRU per KB written (twice: the head and its version item are
  // written on the next update; counted once here), 1 RRU per 4 KB read strongly consistent.
  const ddbWrite = 1000 * 1024 * PRICES.dynamodb.writeRequestUnit;
  const ddbRead = 1000 * 256 * PRICES.dynamodb.readRequestUnit;
  const ddbStorage = (DYNAMODB_STORAGE_GB_MONTH * (1000 * MB)) / 1024 ** 3;
  const fmt = (n: number) => `$${n.toFixed(4)}`;
  const line = (m: Map<string, number>) =>
    [...m].map(([k, v]) => `${k.replace('Command', '')} ${(v / count).toFixed(2)}`).join(', ');
  process.stdout.write(
    [
      `attachments: ${count} breadcrumbs of 1 MB, written then read once (prices ${PRICES.region}, ${S3_PRICES.source})`,
      `  per breadcrumb written: ${(written.write / count).toFixed(2)} WRU, ${(written.read / count).toFixed(2)} RRU; S3 ${line(written.s3)}`,
      `  per breadcrumb read:    ${(read.read / count).toFixed(2)} RRU; S3 ${line(read.s3)}`,
      '  per 1,000 breadcrumbs of 1 MB         spill (S3 + item)   DynamoDB alone (if an item held 1 MB)',
      `    write                               ${fmt(spillWrite).padEnd(20)}${fmt(ddbWrite)}`,
      `    read once                           ${fmt(spillRead).padEnd(20)}${fmt(ddbRead)}`,
      `    storage, a month                    ${fmt(spillStorage).padEnd(20)}${fmt(ddbStorage)}`,
      `    total                               ${fmt(spillWrite + spillRead + spillStorage).padEnd(20)}${fmt(ddbWrite + ddbRead + ddbStorage)}`,
      '',
    ].join('\n'),
  );
} finally {
  await proxy.stop();
  await stack.stop();
}
