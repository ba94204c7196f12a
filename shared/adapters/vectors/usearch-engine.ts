/**
 * The vector engine of `crumbs dev`: approximate nearest neighbours (HNSW) with usearch, one small index per
 * partition — (embedding model, workspace, schema, scope) — so the workspace, schema and scope (actor) filters are
 * applied by choosing which indexes to search, never after the top k were taken: a 10-vector workspace beside a
 * 100k-vector one still gets its k nearest, and one actor's memory is never a candidate of another's query.
 *
 * Why usearch: a maintained HNSW engine (Unum, Apache-2.0) whose npm package ships prebuilt binaries for
 * linux-x64/arm64 and darwin, loaded at run time by node-gyp-build — nothing is compiled when npm skips install
 * scripts — on Node ≥ 20. `npm run bench:vectors` holds it against exact search (recall@10 and p50 query time at
 * 10k and 100k vectors). It is imported only here, and only the local stack loads this module (`vector-engine-from-env`
 * imports it when `CRUMBS_VECTOR_ENGINE` is `local`); on AWS the engine is S3 Vectors.
 *
 * Persistence: with a directory (`crumbs dev --data-dir`, under `<dir>/vectors/`), each partition is two files — its
 * live vectors (Float32, little-endian, in one block) and a JSON list of the breadcrumb ids in the same order —
 * written a moment after a change (and on `flush()`), each through a temporary file renamed into place. The HNSW
 * graph is rebuilt from them at start rather than saved: a saved usearch index keeps the slots of removed vectors,
 * and a forgotten vector must leave nothing on disk. Without a directory the indexes live in memory, like DynamoDB
 * Local without `--data-dir`.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import usearch from 'usearch';
import { z } from 'zod';
import type { VectorEngine, VectorEngineQuery, VectorEntry } from '#shared/ports/embeddings.ts';

/** The same ceiling as S3 Vectors' topK, so a query that works locally works on AWS. */
export const LOCAL_MAX_K = 100;
const FLUSH_DELAY_MS = 200;
/** HNSW build and search breadth: recall@10 ≥ 0.95 at 100k vectors with these (`bench:vectors`). */
const CONNECTIVITY = 16;
const EXPANSION_ADD = 128;
const EXPANSION_SEARCH = 96;

const PartitionFileSchema = z.object({
  model: z.string(),
  workspace: z.string(),
  schema_name: z.string(),
  scope: z.string().optional(),
  dimensions: z.number().int().positive(),
  ids: z.array(z.string()),
});

interface Partition {
  readonly file: string;
  readonly model: string;
  readonly workspace: string;
  readonly schema_name: string;
  readonly scope: string | undefined;
  readonly dimensions: number;
  readonly index: InstanceType<typeof usearch.Index>;
  readonly keyOf: Map<string, bigint>;
  readonly idOf: Map<bigint, string>;
  /** The live vectors by usearch key: what is saved (the index cannot give its vectors back). */
  readonly vectors: Map<bigint, Float32Array>;
  next: bigint;
}

export interface UsearchEngineOptions {
  /** Where the indexes are kept; in memory when absent. */
  dir?: string;
}

export class UsearchVectorEngine implements VectorEngine {
  readonly name = 'usearch';
  readonly maxK = LOCAL_MAX_K;
  private readonly partitions = new Map<string, Partition>();
  /** model + workspace → the partition keys of that workspace. */
  private readonly byWorkspace = new Map<string, Set<string>>();
  /** model + workspace + breadcrumb id → the partition key holding it. */
  private readonly located = new Map<string, string>();
  private readonly dirty = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: UsearchEngineOptions = {}) {
    if (options.dir !== undefined) {
      mkdirSync(options.dir, { recursive: true });
      for (const name of readdirSync(options.dir)) {
        if (name.endsWith('.json')) this.load(join(options.dir, name.slice(0, -'.json'.length)));
      }
    }
  }

  async upsert(model: string, entry: VectorEntry): Promise<void> {
    const where = locationKey(model, entry.workspace, entry.id);
    const previous = this.located.get(where);
    const key = partitionKey(model, entry.workspace, entry.schema_name, entry.scope);
    if (previous !== undefined) this.drop(previous, entry.id);
    const partition = this.partition(key, model, entry, entry.vector.length);
    if (entry.vector.length !== partition.dimensions) {
      throw new Error(
        `vector of ${entry.vector.length} dimensions for an index of ${partition.dimensions} (model ${model})`,
      );
    }
    const usearchKey = partition.next;
    partition.next += 1n;
    const vector = Float32Array.from(entry.vector);
    partition.index.add(usearchKey, vector);
    partition.vectors.set(usearchKey, vector);
    partition.keyOf.set(entry.id, usearchKey);
    partition.idOf.set(usearchKey, entry.id);
    this.located.set(where, key);
    this.touch(key);
  }

  async remove(model: string, workspace: string, id: string): Promise<void> {
    const where = locationKey(model, workspace, id);
    const key = this.located.get(where);
    if (key === undefined) return;
    this.drop(key, id);
    this.located.delete(where);
  }

  async query(model: string, query: VectorEngineQuery): Promise<Array<{ id: string; score: number }>> {
    const k = Math.max(1, Math.min(this.maxK, Math.floor(query.k)));
    const keys = this.byWorkspace.get(workspaceKey(model, query.workspace)) ?? new Set<string>();
    const vector = Float32Array.from(query.vector);
    const hits: Array<{ id: string; score: number }> = [];
    for (const key of keys) {
      const p = this.partitions.get(key);
      if (p === undefined || p.keyOf.size === 0 || p.dimensions !== vector.length) continue;
      if (query.schemaName !== undefined && p.schema_name !== query.schemaName) continue;
      if (query.scope !== undefined && p.scope !== query.scope) continue;
      const found = p.index.search(vector, Math.min(k, p.keyOf.size), 0);
      found.keys.forEach((usearchKey, i) => {
        const id = p.idOf.get(usearchKey);
        // Cosine distance is 1 − similarity.
        if (id !== undefined) hits.push({ id, score: 1 - (found.distances[i] ?? 1) });
      });
    }
    return hits.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, k);
  }

  /** Writes every changed partition now (the stack calls it when it stops). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const key of this.dirty) this.save(key);
    this.dirty.clear();
  }

  /** How many vectors are kept, over every partition (for tests and the bench). */
  size(): number {
    let n = 0;
    for (const p of this.partitions.values()) n += p.keyOf.size;
    return n;
  }

  private drop(key: string, id: string): void {
    const p = this.partitions.get(key);
    const usearchKey = p?.keyOf.get(id);
    if (p === undefined || usearchKey === undefined) return;
    p.index.remove(usearchKey);
    p.keyOf.delete(id);
    p.idOf.delete(usearchKey);
    p.vectors.delete(usearchKey);
    this.touch(key);
  }

  private partition(key: string, model: string, entry: VectorEntry, dimensions: number): Partition {
    const existing = this.partitions.get(key);
    if (existing) return existing;
    const file = this.options.dir
      ? join(this.options.dir, createHash('sha256').update(key).digest('hex').slice(0, 40))
      : '';
    const p: Partition = {
      file,
      model,
      workspace: entry.workspace,
      schema_name: entry.schema_name,
      scope: entry.scope,
      dimensions,
      index: newIndex(dimensions),
      keyOf: new Map(),
      idOf: new Map(),
      vectors: new Map(),
      next: 0n,
    };
    this.register(key, p);
    return p;
  }

  private register(key: string, p: Partition): void {
    this.partitions.set(key, p);
    const ws = workspaceKey(p.model, p.workspace);
    const set = this.byWorkspace.get(ws) ?? new Set<string>();
    set.add(key);
    this.byWorkspace.set(ws, set);
    for (const id of p.keyOf.keys()) this.located.set(locationKey(p.model, p.workspace, id), key);
  }

  private touch(key: string): void {
    if (!this.options.dir) return;
    this.dirty.add(key);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_DELAY_MS).unref();
  }

  private save(key: string): void {
    const p = this.partitions.get(key);
    if (p === undefined || p.file === '') return;
    if (p.keyOf.size === 0) {
      // An emptied partition leaves no file behind: forgotten vectors are gone from disk too.
      rmSync(`${p.file}.f32`, { force: true });
      rmSync(`${p.file}.json`, { force: true });
      return;
    }
    const ids: string[] = [];
    const block = new Float32Array(p.vectors.size * p.dimensions);
    let at = 0;
    for (const [usearchKey, vector] of p.vectors) {
      ids.push(p.idOf.get(usearchKey) ?? '');
      block.set(vector, at);
      at += p.dimensions;
    }
    writeFileSync(`${p.file}.f32.tmp`, Buffer.from(block.buffer, block.byteOffset, block.byteLength));
    renameSync(`${p.file}.f32.tmp`, `${p.file}.f32`);
    const body: z.infer<typeof PartitionFileSchema> = {
      model: p.model,
      workspace: p.workspace,
      schema_name: p.schema_name,
      ...(p.scope !== undefined ? { scope: p.scope } : {}),
      dimensions: p.dimensions,
      ids,
    };
    writeFileSync(`${p.file}.json.tmp`, JSON.stringify(body));
    renameSync(`${p.file}.json.tmp`, `${p.file}.json`);
  }

  private load(file: string): void {
    if (!existsSync(`${file}.f32`)) return;
    const body = PartitionFileSchema.parse(JSON.parse(readFileSync(`${file}.json`, 'utf8')));
    const bytes = readFileSync(`${file}.f32`);
    const block = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    if (block.length !== body.ids.length * body.dimensions) return;
    const p: Partition = {
      file,
      model: body.model,
      workspace: body.workspace,
      schema_name: body.schema_name,
      scope: body.scope,
      dimensions: body.dimensions,
      index: newIndex(body.dimensions),
      keyOf: new Map(),
      idOf: new Map(),
      vectors: new Map(),
      next: BigInt(body.ids.length),
    };
    body.ids.forEach((id, i) => {
      const usearchKey = BigInt(i);
      const vector = block.slice(i * body.dimensions, (i + 1) * body.dimensions);
      p.index.add(usearchKey, vector);
      p.keyOf.set(id, usearchKey);
      p.idOf.set(usearchKey, id);
      p.vectors.set(usearchKey, vector);
    });
    this.register(partitionKey(p.model, p.workspace, p.schema_name, p.scope), p);
  }
}
function newIndex(dimensions: number): InstanceType<typeof usearch.Index> {
  return new usearch.Index({
    dimensions,
    metric: usearch.MetricKind.Cos,
    quantization: usearch.ScalarKind.F32,
    connectivity: CONNECTIVITY,
    expansion_add: EXPANSION_ADD,
    expansion_search: EXPANSION_SEARCH,
    multi: false,
  });
}

function partitionKey(model: string, workspace: string, schema: string, scope: string | undefined): string {
  return JSON.stringify([model, workspace, schema, scope ?? null]);
}

function workspaceKey(model: string, workspace: string): string {
  return JSON.stringify([model, workspace]);
}

function locationKey(model: string, workspace: string, id: string): string {
  return JSON.stringify([model, workspace, id]);
}

/** One engine per directory in a process: the local stack's handlers share it, as they share DynamoDB Local. */
const shared = new Map<string, UsearchVectorEngine>();

export function sharedUsearchEngine(dir: string | undefined): UsearchVectorEngine {
  const key = dir ?? '';
  let engine = shared.get(key);
  if (!engine) {
    engine = new UsearchVectorEngine(dir !== undefined ? { dir } : {});
    shared.set(key, engine);
  }
  return engine;
}
