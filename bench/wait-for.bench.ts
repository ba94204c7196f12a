/**
 * wait_for steps on the local stack: the latency from the matching write to the step succeeding (the run's
 * `ended_at` is when the step matched: a one-step workflow ends in the transition that resumes it), p50/p90 over
 * `--runs` runs, and the DynamoDB requests one resume costs (counted by the proxy in front of DynamoDB Local,
 * from the matching write's routing to the result: wait index read, run read and write, result, entry removal).
 * Each run waits on its own correlation value, started and seen waiting before its write.
 *
 *   node bin/run-ts.js bench/wait-for.bench.ts [--runs 20]
 */
import { parseArgs } from 'node:util';
import { NotFoundError } from '#shared/domain/errors.ts';
import { percentile } from './support/counting-proxy.ts';
import { startCountedStack } from './support/stack.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' } } });
const { stack, proxies, store, stop } = await startCountedStack();
try {
  const ws = 'bench';
  const principal = 'user:bench';
  await store.upsert(
    ws,
    'wf-ship',
    {
      schema_name: 'workflow.def.v1',
      title: 'ship',
      tags: [],
      context: {
        workflow_id: 'ship',
        steps: [
          {
            id: 'shipped',
            wait_for: {
              selector: { schema_name: 'order.shipped.v1' },
              correlate: { field: '$.order_id', equals: 'input.order_id' },
              timeout_seconds: 3600,
            },
          },
        ],
      },
    },
    { principal },
  );
  for (;;) {
    const s = (
      await store.list({
        workspace: ws,
        schema_name: 'definition.status.v1',
        tag: 'definition:wf-ship',
        limit: 1,
      })
    ).items[0];
    if (s?.context.state === 'active') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await stack.settle();

  const runOf = async (runId: string) => {
    try {
      return (await store.get(ws, runId)).context as {
        status: string;
        ended_at?: string;
        steps: Record<string, { status: string }>;
      };
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  };
  const until = async <T>(check: () => Promise<T | undefined>): Promise<T> => {
    const deadline = performance.now() + 60_000;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (performance.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  /** One run: start it, see it wait, write the match; the match's latency in ms and the requests it cost. */
  const once = async (orderId: string): Promise<{ ms: number; requests: number }> => {
    const request = await store.create(
      ws,
      {
        schema_name: 'workflow.request.v1',
        title: '',
        tags: [],
        context: { workflow: 'ship', input: { order_id: orderId } },
      },
      { principal },
    );
    const runId = `run-${request.breadcrumb.id}`;
    await until(async () => ((await runOf(runId))?.steps.shipped?.status === 'waiting' ? true : undefined));
    await stack.settle();
    proxies.dynamodb?.reset();
    const written = await store.create(
      ws,
      {
        schema_name: 'order.shipped.v1',
        title: '',
        tags: [],
        context: { order_id: orderId, carrier: 'ups' },
      },
      { principal },
    );
    const run = await until(async () => {
      const r = await runOf(runId);
      return r?.status === 'succeeded' ? r : undefined;
    });
    await stack.settle();
    const requests =
      proxies.dynamodb?.total(
        (op) => !/GetRecords|GetShardIterator|DescribeStream|ReceiveMessage/.test(op),
      ) ?? 0;
    return { ms: Date.parse(run.ended_at ?? '') - Date.parse(written.breadcrumb.created_at), requests };
  };

  await once('warm-up');
  const runs = Number(values.runs);
  const latencies: number[] = [];
  const requests: number[] = [];
  for (let i = 0; i < runs; i++) {
    const { ms, requests: n } = await once(`order-${i}`);
    latencies.push(ms);
    requests.push(n);
  }
  latencies.sort((a, b) => a - b);
  requests.sort((a, b) => a - b);
  console.log('wait_for benchmark (local stack; one-step workflow waiting on a correlated write)');
  console.log(
    `matching write → step succeeded: n=${runs} p50=${percentile(latencies, 0.5).toFixed(0)} ms ` +
      `p90=${percentile(latencies, 0.9).toFixed(0)} ms max=${latencies.at(-1)?.toFixed(0)} ms`,
  );
  console.log(
    `DynamoDB requests from the matching write to the result (excluding pollers), p50: ${percentile(requests, 0.5)}`,
  );
} finally {
  await stop();
}
