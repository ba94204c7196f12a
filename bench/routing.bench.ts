/**
 * Routing on the local stack: how long a definition written through the API takes to become an active rule, and
 * routing latency from a breadcrumb write (API) to the message in the executor queue (stream → publisher →
 * EventBridge → rule → SQS). Executors do not run, so the bench reads the queue itself.
 *
 *   node bin/run-ts.js bench/routing.bench.ts [--definitions 10] [--writes 200]
 */
import { parseArgs } from 'node:util';
import {
  DeleteMessageBatchCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { CrumbsClient } from '#cli/api-client.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#local/aws-env.ts';
import { topology } from '#shared/topology.ts';
import { percentile } from './support/counting-proxy.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({
  options: { definitions: { type: 'string', default: '10' }, writes: { type: 'string', default: '200' } },
});
const stack = await startBenchStack({
  runExecutors: false,
});
try {
  const client = new CrumbsClient({ endpoint: stack.endpoints.api, token: 'bench', workspace: 'bench' });
  const tool = (i: number) => ({
    schema_name: 'tool.def.v1',
    context: {
      name: `t${i}`,
      implementation: 'echo',
      subscriptions: { selectors: [{ schema_name: `bench.e${i}.v1`, role: 'trigger' }] },
    },
  });

  const activation: number[] = [];
  for (let i = 0; i < Number(values.definitions); i++) {
    const started = performance.now();
    const written = await client.put(`t${i}`, tool(i));
    for (;;) {
      const s = (
        await client.list({
          schema_name: 'definition.status.v1',
          tag: `definition:t${i}`,
          limit: 1,
          view: 'full',
        })
      ).items[0];
      if (s && Number(s.context.definition_version) >= written.version) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    activation.push(performance.now() - started);
  }
  activation.sort((a, b) => a - b);

  const sqs = new SQSClient({
    endpoint: stack.endpoints.sqs,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
  const queueUrl = (
    await sqs.send(
      new GetQueueUrlCommand({ QueueName: topology.functions.executors.tool.trigger.queue.name }),
    )
  ).QueueUrl;
  const sentAt = new Map<string, number>();
  const latency: number[] = [];
  let receiving = true;
  const consumer = (async () => {
    while (receiving || latency.length < sentAt.size) {
      const out = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      const now = performance.now();
      for (const m of out.Messages ?? []) {
        const id = (JSON.parse(m.Body ?? '{}') as { event: { detail: { id: string } } }).event.detail.id;
        const at = sentAt.get(id);
        if (at !== undefined) latency.push(now - at);
      }
      if (out.Messages?.length) {
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: out.Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
          }),
        );
      }
      if (!receiving && (out.Messages ?? []).length === 0) break;
    }
  })();
  const writes = Number(values.writes);
  const started = performance.now();
  for (let i = 0; i < writes; i++) {
    const t = performance.now();
    const created = await client.create({
      schema_name: `bench.e${i % Number(values.definitions)}.v1`,
      context: { i },
    });
    sentAt.set(created.id, t);
  }
  const writeSeconds = (performance.now() - started) / 1000;
  while (latency.length < writes && performance.now() - started < 120_000)
    await new Promise((r) => setTimeout(r, 50));
  receiving = false;
  await consumer;
  latency.sort((a, b) => a - b);
  sqs.destroy();

  console.log('routing benchmark (local stack; executors off)');
  console.log(
    `definition written → active rule: n=${activation.length} p50=${percentile(activation, 0.5).toFixed(0)} ms p99=${percentile(activation, 0.99).toFixed(0)} ms max=${activation.at(-1)?.toFixed(0)} ms`,
  );
  console.log(
    `write → message in queue:         n=${latency.length}/${writes} p50=${percentile(latency, 0.5).toFixed(0)} ms p99=${percentile(latency, 0.99).toFixed(0)} ms (writes at ${(writes / writeSeconds).toFixed(0)}/s, sequential)`,
  );
} finally {
  await stack.stop();
}
