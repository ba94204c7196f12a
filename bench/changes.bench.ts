/**
 * The change stream on the local stack: how long from a write (the API answering 201) until a client following
 * `GET …/changes` (long polls, Last-Event-ID) receives it, and whether every write arrives exactly once.
 *
 *   node bin/run-ts.js bench/changes.bench.ts [--writes 50]
 */
import { parseArgs } from 'node:util';
import { CrumbsClient } from '#cli/api-client.ts';
import { percentile } from './support/counting-proxy.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({ options: { writes: { type: 'string', default: '50' } } });
const writes = Number(values.writes);
const stack = await startBenchStack();
try {
  const client = new CrumbsClient({
    endpoint: stack.endpoints.api,
    token: 'bench',
    workspace: 'bench-changes',
  });
  const written = new Map<string, number>();
  const received = new Map<string, number>();
  let duplicates = 0;
  let { lastEventId } = await client.changes({ wait: 0 });
  let following = true;
  const follower = (async () => {
    while (following || received.size < written.size) {
      const answer = await client.changes({ lastEventId, wait: 2 });
      lastEventId = answer.lastEventId;
      for (const e of answer.events) {
        if (received.has(e.id)) duplicates++;
        received.set(e.id, Date.now());
      }
    }
  })();
  for (let i = 0; i < writes; i++) {
    const b = await client.create({ schema_name: 'bench.note.v1', context: { i } });
    written.set(b.id, Date.now());
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
  }
  following = false;
  await follower;
  const latencies = [...written]
    .map(([id, at]) => (received.get(id) ?? Number.NaN) - at)
    .sort((a, b) => a - b);
  console.log(
    `change stream, local stack: ${writes} writes, ${received.size} received, ${duplicates} duplicates`,
  );
  console.log(
    `write (201) → event received: p50 ${percentile(latencies, 0.5)} ms, p99 ${percentile(latencies, 0.99)} ms, max ${latencies[latencies.length - 1]} ms`,
  );
} finally {
  await stack.stop();
}
