import type { VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Embedder } from '#shared/ports/embeddings.ts';
import { ENV } from '#shared/topology.ts';
import { DynamoEmbeddingIndex } from '../../shared/adapters/embeddings/dynamodb-embedding-index.ts';
import { LocalEmbedder } from '../../shared/adapters/embeddings/local-embedder.ts';
import { TitanEmbedder } from '../../shared/adapters/embeddings/titan-embedder.ts';

/**
 * Titan v2 on Bedrock when `CRUMBS_EMBEDDINGS=bedrock` (set by the CDK app), the local hashed embedder otherwise
 * (the default, and what the local stack uses). Indexing and search must use the same one; the stored model name
 * is checked so vectors of different models are never compared.
 */
export function embedderFromEnv(env: NodeJS.ProcessEnv = process.env): Embedder {
  return env[ENV.embeddings] === 'bedrock' ? new TitanEmbedder(512) : new LocalEmbedder();
}

/** What vector search and embedding indexing need, built from one table and the environment. */
export function vectorDepsFor(
  store: BreadcrumbStore,
  tableName: string,
  env: NodeJS.ProcessEnv = process.env,
): VectorSearchDeps {
  return { store, index: new DynamoEmbeddingIndex(tableName), embedder: embedderFromEnv(env) };
}
