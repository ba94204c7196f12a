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
  vector: number[];
  updated_at: string;
  expires_at?: number;
}

/** Where embeddings live, scoped by workspace and schema. */
export interface EmbeddingIndex {
  /** Writes unless a newer version is stored; returns false when it was stale. */
  put(workspace: string, embedding: StoredEmbedding): Promise<boolean>;
  get(workspace: string, id: string): Promise<StoredEmbedding | undefined>;
  remove(workspace: string, id: string): Promise<void>;
  /** The most recently updated embeddings of a schema (or of the whole workspace), at most `limit`. */
  candidates(workspace: string, schemaName: string | undefined, limit: number): Promise<StoredEmbedding[]>;
}
