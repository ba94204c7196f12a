/**
 * The embeddings port: text in, unit-length vectors out. `model` names the embedding space; vectors from
 * different models are never compared (vector search skips stored embeddings of another model).
 */
export interface Embedder {
  /** e.g. `bedrock/amazon.titan-embed-text-v2:0@512` or `local/hashed-v1@256`. */
  readonly model: string;
  readonly dimensions: number;
  embed(texts: readonly string[], signal?: AbortSignal): Promise<number[][]>;
}

/** Cosine similarity of two vectors of the same length (dot product when both are L2-normalized). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** One breadcrumb's embedding, as the index stores it. */
export interface StoredEmbedding {
  /** The breadcrumb id. */
  id: string;
  schema_name: string;
  /** The breadcrumb version it was computed from; an older version never overwrites a newer one. */
  version: number;
  checksum: string;
  model: string;
  updated_at: string;
  expires_at?: number;
  /** The partition inside the workspace (`VectorEntry.scope`), so removal reaches the right one. */
  scope?: string;
}

/**
 * The ledger of embeddings: which version, text checksum and model each breadcrumb's embedding was computed from, so
 * indexing is idempotent and an older version never overwrites a newer one. Search is the `VectorEngine`'s.
 */
export interface EmbeddingIndex {
  /** Writes unless a newer version is stored; returns false when it was stale. */
  put(workspace: string, embedding: StoredEmbedding): Promise<boolean>;
  get(workspace: string, id: string): Promise<StoredEmbedding | undefined>;
  remove(workspace: string, id: string): Promise<void>;
}

/** What a vector engine keeps of one breadcrumb's embedding: its place (workspace, schema, scope) and the vector. */
export interface VectorEntry {
  /** The breadcrumb id. */
  id: string;
  workspace: string;
  schema_name: string;
  /**
   * A narrower partition inside the workspace, applied inside the engine like the workspace: the `actor:` tag's value
   * (a memory record's person), so one person's records are never candidates of another's query.
   */
  scope?: string;
  vector: number[];
}

export interface VectorEngineQuery {
  workspace: string;
  /** One schema; every schema of the workspace when absent. */
  schemaName?: string;
  /** Only entries of this scope (one actor's); entries of any scope when absent. */
  scope?: string;
  vector: number[];
  /** How many nearest entries, at most the engine's `maxK`. */
  k: number;
}

/**
 * Nearest-neighbour search over embeddings, one index per embedding model (`model`: vectors of different models are
 * never compared). The workspace, schema and scope filters are applied inside the engine, before the top k are taken,
 * so a small workspace among many large ones still gets its k nearest.
 */
export interface VectorEngine {
  /** What it is, for logs and the search route's answer (`usearch`, `s3vectors`). */
  readonly name: string;
  /** The largest k one query may ask for. */
  readonly maxK: number;
  upsert(model: string, entry: VectorEntry): Promise<void>;
  remove(model: string, workspace: string, id: string): Promise<void>;
  query(model: string, query: VectorEngineQuery): Promise<Array<{ id: string; score: number }>>;
}
