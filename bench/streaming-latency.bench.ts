/**
 * Streamed answers end to end on the local stack, as `crumbs ask` sees them: the client subscribes to the request's
 * delta channel, writes an `agent.request.v1` with its `stream_id`, and times the first delta (time to first token)
 * and the final event, which comes once the answer is stored (time to the stored answer); p50 over `--requests`
 * requests, one at a time, and the channel messages per answer. Two models: the offline model (its answer word by
 * word, `CRUMBS_OFFLINE_STREAM_DELAY_MS`, 25 ms by default) and a scripted OpenAI-compatible server streaming 40
 * chunks 50 ms apart (through the real adapter).
 *
 *   node bin/run-ts.js bench/streaming-latency.bench.ts [--requests 20]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { CrumbsClient } from '#cli/api-client.ts';
import type { WebSocketConstructor } from '#shared/core/streaming/subscriber.ts';
import { startScriptedOpenAiServer } from '../test/support/openai-stream-server.ts';
import { percentile } from './support/counting-proxy.ts';
import { startBenchStack } from './support/stack.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '20' } } });
const requests = Number(values.requests);
const words = Array.from({ length: 40 }, (_, i) => `${i === 0 ? '' : ' '}word${i}`);
const scripted = await startScriptedOpenAiServer({ chunks: words, delayMs: 50 });
process.env.OPENAI_COMPATIBLE_BASE_URL = scripted.baseUrl;
const stack = await startBenchStack();
const ws = 'bench-streaming';
try {
  const api = new CrumbsClient({ endpoint: stack.endpoints.api, token: 'bench', workspace: ws });
  const agents = {
    offline: 'offline/crumbs',
    scripted: 'openai-compatible/scripted',
  } as const;
  for (const [agent, model] of Object.entries(agents)) {
    const id = `agent-${agent}`;
    const written = await api.put(id, {
      schema_name: 'agent.def.v1',
      title: id,
      tags: [],
      context: { agent_id: agent, system_prompt: 'Answer.', model, max_tool_rounds: 0 },
    });
    for (;;) {
      const d = (await api.definitions()).items.find((x) => x.id === id);
      if (d?.version === written.version && d.state === 'active') break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  const ask = async (agent: string, i: number) => {
    const streamId = randomUUID();
    const info = await api.streamInfo(streamId);
    if (info === undefined) throw new Error('the stack has no delta channel');
    let first: number | undefined;
    let messages = 0;
    const sub = await api.subscribeToStream(info, {
      onEvent: (event) => {
        messages += 1;
        if (event.type === 'delta' && first === undefined) first = performance.now();
      },
      webSocket: WebSocket as unknown as WebSocketConstructor,
    });
    const started = performance.now();
    await api.create({
      schema_name: 'agent.request.v1',
      context: { agent, message: `question ${i}: tell me about streaming answers`, stream_id: streamId },
    });
    const final = await sub.done;
    const ended = performance.now();
    sub.close();
    if (final?.status !== 'completed' || first === undefined)
      throw new Error(`request ${i}: ${JSON.stringify(final)}`);
    return { firstMs: first - started, storedMs: ended - started, messages };
  };

  for (const agent of Object.keys(agents)) {
    await ask(agent, -1);
    const runs = [];
    for (let i = 0; i < requests; i++) runs.push(await ask(agent, i));
    const first = runs.map((r) => r.firstMs).sort((a, b) => a - b);
    const stored = runs.map((r) => r.storedMs).sort((a, b) => a - b);
    const messages = runs.map((r) => r.messages).sort((a, b) => a - b);
    console.log(
      `${agent.padEnd(8)} (n=${runs.length}): first token p50 ${percentile(first, 0.5).toFixed(0)} ms, ` +
        `stored answer p50 ${percentile(stored, 0.5).toFixed(0)} ms, ` +
        `channel messages per answer p50 ${percentile(messages, 0.5)} (max ${messages.at(-1)})`,
    );
  }
} finally {
  await stack.stop();
  await scripted.close();
}
