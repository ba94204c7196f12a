import type { Embedder } from '#shared/ports/embeddings.ts';
import { LocalEmbedder } from './local-embedder.ts';
import { TitanEmbedder } from './titan-embedder.ts';

/**
 * Titan v2 on Bedrock when `CRUMBS_EMBEDDINGS=bedrock` (set by the CDK app), the local hashed embedder otherwise
 * (the default, and what the local stack uses). Indexing and search must use the same one; the stored model name
 * is checked so vectors of different models are never compared.
 */
export function embedderFromEnv(env: NodeJS.ProcessEnv = process.env): Embedder {
  return env.CRUMBS_EMBEDDINGS === 'bedrock' ? new TitanEmbedder(512) : new LocalEmbedder();
}
