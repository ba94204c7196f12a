/**
 * The indexer: embeddings follow breadcrumbs through their own rule, queue and function, off the publishing path.
 * On the shared stack: a message is indexed (vector search finds it) and its embedding removed when it is
 * deleted. On a stack of its own whose embedding model is unreachable (as with no Bedrock access): every change
 * event is still published at once, and the embedding work ends in the indexer's DLQ.
 */
import { EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import type { LocalStack } from '#local/stack.ts';
import { embeddingKeys } from '#shared/adapters/embeddings/dynamodb-embedding-index.ts';
import { topology } from '#shared/topology.ts';
import { api, eventually, startStackWithoutExecutors, uniqueWorkspace } from '../support/local.ts';

describe('indexer on the local stack', () => {
  it('indexes a message so search finds it, and removes its embedding when the message is deleted', async () => {
    const ws = uniqueWorkspace('idx');
    const a = api(ws);
    const created = await a.call('POST', '', {
      schema_name: 'user.message.v1',
      context: { content: 'the zebra crossing near the harbour is closed' },
    });
    const id = String(created.body.id);
    const hit = await eventually(async () => {
      const res = await a.call('GET', '/search?q=zebra%20crossing%20harbour&nn=3');
      return (res.body.items as { id: string }[]).find((i) => i.id === id);
    });
    expect(hit).toBeDefined();

    expect((await a.call('DELETE', `/${id}`)).status).toBe(204);
    await eventually(async () => {
      const res = await a.call('GET', '/search?q=zebra%20crossing%20harbour&nn=3');
      return (res.body.items as { id: string }[]).some((i) => i.id === id) ? undefined : true;
    });
  });
});

describe('indexer with an unreachable embedding model', () => {
  let stack: LocalStack;
  let documentClient: DynamoDBDocumentClient;
  let sqs: SQSClient;
  const saved = {
    embeddings: process.env.CRUMBS_EMBEDDINGS,
    endpoint: process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
  };

  beforeAll(async () => {
    // Titan on "Bedrock" at a port nothing listens on: every embedding fails, as without model access.
    process.env.CRUMBS_EMBEDDINGS = 'bedrock';
    process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = 'http://127.0.0.1:9';
    ({ stack, documentClient } = await startStackWithoutExecutors());
    sqs = new SQSClient({
      endpoint: stack.endpoints.sqs,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      useQueueUrlAsEndpoint: false,
    });
  }, 120_000);

  afterAll(async () => {
    sqs?.destroy();
    await stack?.stop();
    for (const [name, value] of [
      ['CRUMBS_EMBEDDINGS', saved.embeddings],
      ['AWS_ENDPOINT_URL_BEDROCK_RUNTIME', saved.endpoint],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('publishes every change event at once and dead-letters the embedding, not the event', async () => {
    const ws = uniqueWorkspace('noembed');
    // A queue of our own behind a rule on the bus: what arrives there was published.
    const watch = await sqs.send(new CreateQueueCommand({ QueueName: `watch-${ws}` }));
    const watchUrl = String(watch.QueueUrl);
    const watchArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: watchUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn;
    const eventbridge = new EventBridgeClient({
      endpoint: stack.endpoints.eventbridge,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    await eventbridge.send(
      new PutRuleCommand({
        Name: `watch-${ws}`,
        EventBusName: topology.bus.name,
        EventPattern: JSON.stringify({ source: ['crumbs'], detail: { workspace: [ws] } }),
      }),
    );
    await eventbridge.send(
      new PutTargetsCommand({
        Rule: `watch-${ws}`,
        EventBusName: topology.bus.name,
        Targets: [{ Id: 'watch', Arn: watchArn }],
      }),
    );
    eventbridge.destroy();

    const base = `${stack.endpoints.api}/v1/workspaces/${ws}/breadcrumbs`;
    const headers = { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' };
    const ids: string[] = [];
    for (const content of ['first message', 'second message']) {
      const res = await fetch(base, {
        method: 'POST',
        headers,
        body: JSON.stringify({ schema_name: 'user.message.v1', context: { content } }),
      });
      expect(res.status).toBe(201);
      ids.push(String(((await res.json()) as { id: string }).id));
    }

    // Both change events arrive, without waiting for any embedding retry.
    const published = new Set<string>();
    await eventually(async () => {
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: watchUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const m of out.Messages ?? [])
        published.add((JSON.parse(String(m.Body)) as { detail: { id: string } }).detail.id);
      return ids.every((id) => published.has(id)) ? true : undefined;
    }, 15_000);

    // The embeddings were tried until the indexer queue gave up on them: they wait in its DLQ (alarmed on AWS).
    const { QueueUrl: dlqUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: topology.functions.indexer.trigger.queue.dlqName }),
    );
    const deadLettered = new Set<string>();
    await eventually(
      async () => {
        const out = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
        );
        for (const m of out.Messages ?? []) {
          deadLettered.add((JSON.parse(String(m.Body)) as { detail: { id: string } }).detail.id);
        }
        return ids.every((id) => deadLettered.has(id)) ? true : undefined;
      },
      60_000,
      200,
    );
    for (const id of ids) {
      const item = await documentClient.send(
        new GetCommand({ TableName: topology.table.name, Key: embeddingKeys.item(ws, id) }),
      );
      expect(item.Item, id).toBeUndefined();
    }
  }, 120_000);
});
