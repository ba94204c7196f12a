/**
 * Streaming benchmark at the model port: time to the first text delta and to the whole response of
 * `LlmRouter.generate({ onDelta })`, p50 and p90 over `--runs` requests, for the offline model (its pause between
 * words, `CRUMBS_OFFLINE_STREAM_DELAY_MS`, default 25 ms) and for a scripted OpenAI-compatible server on loopback
 * that streams `--chunks` pieces with `--delay` ms before each. The number of deltas per answer is what a delta
 * channel would have to coalesce. Measures the adapters only: the agent turn, the channel and the clients add their
 * own time on top.
 *
 *   node bin/run-ts.js bench/llm-stream.bench.ts [--runs 20] [--chunks 40] [--delay 50]
 */
import { parseArgs } from 'node:util';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import type { LlmRequest } from '#shared/ports/llm.ts';
import { startScriptedOpenAiServer } from '../test/support/openai-stream-server.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    chunks: { type: 'string', default: '40' },
    delay: { type: 'string', default: '50' },
  },
});
const RUNS = Math.max(1, Number(values.runs));
const CHUNKS = Math.max(1, Number(values.chunks));
const DELAY_MS = Math.max(0, Number(values.delay));

interface Sample {
  firstMs: number;
  totalMs: number;
  deltas: number;
  chars: number;
}

async function measure(llm: LlmRouter, request: LlmRequest): Promise<Sample> {
  const start = performance.now();
  let firstMs: number | undefined;
  let deltas = 0;
  const out = await llm.generate({
    ...request,
    onDelta: (delta) => {
      if (delta.type !== 'text') return;
      firstMs ??= performance.now() - start;
      deltas++;
    },
  });
  return {
    firstMs: firstMs ?? Number.NaN,
    totalMs: performance.now() - start,
    deltas,
    chars: out.text.length,
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function report(name: string, samples: Sample[]): void {
  const row = (label: string, pick: (s: Sample) => number) => {
    const [p50, p90] = [50, 90].map((p) => percentile(samples.map(pick), p).toFixed(1).padStart(8));
    return `${label.padEnd(16)} p50 ${p50}   p90 ${p90}`;
  };
  console.log(`\n${name} (${samples.length} requests)`);
  console.log(row('first delta ms', (s) => s.firstMs));
  console.log(row('whole answer ms', (s) => s.totalMs));
  console.log(row('deltas/answer', (s) => s.deltas));
  console.log(row('chars/answer', (s) => s.chars));
}

const chat: Omit<LlmRequest, 'model'> = {
  system: 'You are the crumbs demo assistant. Answer briefly.\n\n## chat_history\n- earlier message',
  messages: [
    { role: 'user', content: 'Tell me what crumbs does with a message like this one, in a few words.' },
  ],
};

const offline = new LlmRouter({ env: {} });
const offlineSamples: Sample[] = [];
for (let i = 0; i < RUNS; i++)
  offlineSamples.push(await measure(offline, { ...chat, model: 'offline/crumbs' }));
report('offline model, default pause between words', offlineSamples);

const words = Array.from({ length: CHUNKS }, (_, i) => `${i === 0 ? '' : ' '}word${i + 1}`);
const server = await startScriptedOpenAiServer({ chunks: words, delayMs: DELAY_MS });
try {
  const scripted = new LlmRouter({ env: { OPENAI_COMPATIBLE_BASE_URL: server.baseUrl } });
  const samples: Sample[] = [];
  for (let i = 0; i < RUNS; i++)
    samples.push(await measure(scripted, { ...chat, model: 'openai-compatible/bench' }));
  report(`scripted OpenAI-compatible server, ${CHUNKS} chunks, ${DELAY_MS} ms before each`, samples);
} finally {
  await server.close();
}
