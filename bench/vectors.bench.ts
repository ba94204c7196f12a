// Benchmark: the local vector engine (usearch HNSW, `shared/adapters/vectors/usearch-engine.ts`) against brute force
// (exact cosine over every stored vector, what vector search did over its newest-2,000 window). Vectors are the local
// embedder's (`local/hashed-v1@256`) over generated sentences from a small vocabulary, so neighbours overlap in words
// as real notes do. For 10k and 100k vectors in one workspace it prints recall@10 (the share of the exact top 10 the
// engine returns), p50 and p95 query time for both, and the build time.
// Run with `npm run bench:vectors` (or `node bin/run-ts.js bench/vectors.bench.ts 10000` for one size).
import { embedText } from '../shared/adapters/embeddings/local-embedder.ts';
import { UsearchVectorEngine } from '../shared/adapters/vectors/usearch-engine.ts';
import { cosine } from '../shared/ports/embeddings.ts';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const r = rng(37);
const VOCABULARY = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}${'aeiou'[i % 5]}`);
const TOPICS = Array.from({ length: 200 }, () =>
  Array.from({ length: 30 }, () => VOCABULARY[Math.floor(r() * VOCABULARY.length)] ?? 'x'),
);

function sentence(): string {
  const topic = TOPICS[Math.floor(r() * TOPICS.length)] ?? [];
  const words: string[] = [];
  const n = 6 + Math.floor(r() * 10);
  for (let i = 0; i < n; i++) {
    words.push(
      r() < 0.7
        ? (topic[Math.floor(r() * topic.length)] ?? 'x')
        : (VOCABULARY[Math.floor(r() * VOCABULARY.length)] ?? 'x'),
    );
  }
  return words.join(' ');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

const MODEL = 'local/hashed-v1@256';
const QUERIES = 200;
const K = 10;

async function run(size: number): Promise<void> {
  const vectors = Array.from({ length: size }, () => embedText(sentence()));
  const engine = new UsearchVectorEngine();
  const built = performance.now();
  for (let i = 0; i < size; i++) {
    await engine.upsert(MODEL, {
      id: `b${i}`,
      workspace: 'bench',
      schema_name: 'note.v1',
      vector: vectors[i] ?? [],
    });
  }
  const buildMs = performance.now() - built;
  const queries = Array.from({ length: QUERIES }, () => embedText(sentence()));
  const exactTimes: number[] = [];
  const engineTimes: number[] = [];
  let found = 0;
  for (const q of queries) {
    const t0 = performance.now();
    const exact = vectors
      .map((v, i) => ({ i, s: cosine(q, v) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, K);
    exactTimes.push(performance.now() - t0);
    const t1 = performance.now();
    const hits = await engine.query(MODEL, { workspace: 'bench', vector: q, k: K });
    engineTimes.push(performance.now() - t1);
    // Ties at the 10th score count as found whichever of the tied ids the engine chose.
    const tenth = exact[K - 1]?.s ?? 0;
    const exactIds = new Set(exact.map((e) => `b${e.i}`));
    for (const h of hits) if (exactIds.has(h.id) || h.score >= tenth - 1e-6) found++;
  }
  exactTimes.sort((a, b) => a - b);
  engineTimes.sort((a, b) => a - b);
  console.log(
    [
      `${size} vectors`,
      `recall@10 ${(found / (QUERIES * K)).toFixed(4)}`,
      `usearch p50 ${percentile(engineTimes, 0.5).toFixed(3)} ms p95 ${percentile(engineTimes, 0.95).toFixed(3)} ms`,
      `brute force p50 ${percentile(exactTimes, 0.5).toFixed(3)} ms p95 ${percentile(exactTimes, 0.95).toFixed(3)} ms`,
      `build ${(buildMs / 1000).toFixed(1)} s`,
    ].join(' | '),
  );
}

const sizes = process.argv[2] ? [Number(process.argv[2])] : [10_000, 100_000];
for (const size of sizes) await run(size);
