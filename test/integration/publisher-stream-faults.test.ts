/**
 * The publisher's event source mapping when things fail, on the local stack as the CDK app configures it on AWS:
 * - reading the stream fails for a while (DynamoDB Local busy): the shard is read again from where it was, and the
 *   change is published, once;
 * - publishing keeps failing (EventBridge down) past the retries: the batch goes to the on-failure destination,
 *   the `crumbs-publisher-failures` queue, as Lambda's invocation record, whose position in the stream reads back
 *   the change that was not published; the stream moves on and later changes are published.
 */
import {
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { GetQueueUrlCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import type { LocalStack } from '#local/stack.ts';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { topology } from '#shared/topology.ts';
import { type CountingProxy, startCountingProxy } from '../../bench/support/counting-proxy.ts';
import { eventually, startStackWithoutExecutors } from '../support/local.ts';

const ws = 'publisher-faults';
let readFailuresLeft = 0;
let eventBridgeDown = false;
const proxies: CountingProxy[] = [];
let eventBridgeProxy: CountingProxy | undefined;
const stackLog: string[] = [];
let stack: LocalStack;
let store: DynamoBreadcrumbStore;

beforeAll(async () => {
  let documentClient: DynamoDBDocumentClient;
  ({ stack, documentClient } = await startStackWithoutExecutors({
    log: (line) => stackLog.push(line),
    interpose: async (service, endpoint) => {
      if (service === 'sqs') return endpoint;
      const proxy = await startCountingProxy(endpoint, {
        refuse: (operation) => {
          if (service === 'eventbridge') return eventBridgeDown && operation.endsWith('.PutEvents');
          if (operation !== 'DynamoDBStreams_20120810.GetRecords' || readFailuresLeft === 0) return false;
          readFailuresLeft--;
          return true;
        },
      });
      proxies.push(proxy);
      if (service === 'eventbridge') eventBridgeProxy = proxy;
      return proxy.endpoint;
    },
  }));
  store = new DynamoBreadcrumbStore({ tableName: topology.table.name, client: documentClient });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await Promise.all(proxies.map((p) => p.stop()));
});

async function defineTool(id: string): Promise<void> {
  await store.create(
    ws,
    { schema_name: 'tool.def.v1', title: id, tags: [], context: { name: id, implementation: 'echo' } },
    { principal: 'user:test', id },
  );
}

async function statusOf(id: string) {
  return (
    await store.list({
      workspace: ws,
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
    })
  ).items[0];
}

describe('the publisher when the stream or the bus fails', () => {
  it('reads the shard again after failed reads and publishes the change', async () => {
    readFailuresLeft = 3;
    let published = 0;
    const unwatch = eventBridgeProxy?.watch((call) => {
      if (call.operation.endsWith('.PutEvents') && call.status === 200) published++;
    });
    await defineTool('tool-after-read-failures');
    const status = await eventually(() => statusOf('tool-after-read-failures'), 30_000);
    // The status's own change is published too before the next test takes the bus down: left in the stream, it
    // would be the batch the publisher gives up on there (the definition's change and the status's: two puts).
    await eventually(async () => (published >= 2 ? true : undefined), 30_000);
    unwatch?.();
    expect(status.context).toMatchObject({ state: 'active' });
    expect(readFailuresLeft).toBe(0);
    expect(stackLog.filter((line) => /publisher: reading shard .* failed/.test(line))).toHaveLength(3);
  }, 60_000);

  it('sends a batch it gave up on to the on-failure queue, and goes on with the next changes', async () => {
    eventBridgeDown = true;
    await defineTool('tool-not-published');
    const sqs = new SQSClient({
      endpoint: stack.endpoints.sqs,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      useQueueUrlAsEndpoint: false,
    });
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: topology.functions.publisher.trigger.onFailureQueueName }),
    );
    // 1 + retryAttempts invocations with back-offs of up to 2 s between them.
    const message = await eventually(
      async () => (await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }))).Messages?.[0],
      60_000,
    );
    eventBridgeDown = false;
    const record = JSON.parse(message.Body ?? '{}') as {
      requestContext: Record<string, unknown>;
      DDBStreamBatchInfo: Record<string, unknown> & { shardId: string; startSequenceNumber: string };
    };
    expect(record.requestContext).toMatchObject({
      condition: 'RetryAttemptsExhausted',
      functionArn: expect.stringMatching(/:function:publisher$/),
      approximateInvokeCount: topology.functions.publisher.trigger.retryAttempts + 1,
    });
    const info = record.DDBStreamBatchInfo;
    expect(info).toMatchObject({ batchSize: 1, streamArn: expect.stringContaining('/stream/') });
    expect(info.endSequenceNumber).toBe(info.startSequenceNumber);
    // Where it points in the stream is the change that was not published.
    const streams = new DynamoDBStreamsClient({
      endpoint: stack.endpoints.dynamodb,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: String(info.streamArn),
        ShardId: info.shardId,
        ShardIteratorType: 'AT_SEQUENCE_NUMBER',
        SequenceNumber: info.startSequenceNumber,
      }),
    );
    const { Records } = await streams.send(new GetRecordsCommand({ ShardIterator, Limit: 1 }));
    expect(Records?.[0]?.dynamodb?.NewImage?.id).toEqual({ S: 'tool-not-published' });
    expect(await statusOf('tool-not-published')).toBeUndefined();

    // The stream went on: the next change is published.
    await defineTool('tool-after-the-outage');
    const status = await eventually(() => statusOf('tool-after-the-outage'), 30_000);
    expect(status.context).toMatchObject({ state: 'active' });
    streams.destroy();
    sqs.destroy();
  }, 120_000);
});
