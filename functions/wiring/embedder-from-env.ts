import { apiKeysFromEnv } from '#shared/adapters/llm/api-keys.ts';
import type { VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import { parseEmbeddingsSetting } from '#shared/domain/embeddings-setting.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Embedder } from '#shared/ports/embeddings.ts';
import { ENV } from '#shared/topology.ts';
import { DynamoEmbeddingIndex } from '../../shared/adapters/embeddings/dynamodb-embedding-index.ts';
import { LocalEmbedder } from '../../shared/adapters/embeddings/local-embedder.ts';
import { OffEmbedder } from '../../shared/adapters/embeddings/off-embedder.ts';
import { OpenAiCompatibleEmbedder } from '../../shared/adapters/embeddings/openai-compatible-embedder.ts';
import { TitanEmbedder } from '../../shared/adapters/embeddings/titan-embedder.ts';
import { vectorEngineFromEnv } from './vector-engine-from-env.ts';

/**
 * The embedder `CRUMBS_EMBEDDINGS` names (`shared/domain/embeddings-setting.ts`): none, the local hashed embedder
 * (the default off AWS, what `crumbs dev` uses), a Bedrock model (Titan v2 when `bedrock` alone; the CDK app sets
 * it), or an OpenAI-compatible endpoint at `CRUMBS_EMBEDDINGS_BASE_URL` (its key the secret `<secret prefix>embeddings` on AWS, `CRUMBS_EMBEDDINGS_API_KEY` locally).
 * Indexing and search must use the same one; the stored model name is checked so vectors of different models are
 * never compared.
 */
export function embedderFromEnv(env: NodeJS.ProcessEnv = process.env): Embedder {
  const setting = parseEmbeddingsSetting(env[ENV.embeddings], env[ENV.embeddingsBaseUrl], { kind: 'local' });
  switch (setting.kind) {
    case 'none':
      return new OffEmbedder();
    case 'local':
      return new LocalEmbedder();
    case 'bedrock':
      return new TitanEmbedder(512, undefined, setting.model);
    case 'openai-compatible':
      return new OpenAiCompatibleEmbedder({
        baseUrl: setting.baseUrl,
        model: setting.model,
        keys: apiKeysFromEnv(env),
      });
  }
}

/** What vector search and embedding indexing need, built from one table and the environment. */
export function vectorDepsFor(
  store: BreadcrumbStore,
  tableName: string,
  env: NodeJS.ProcessEnv = process.env,
): VectorSearchDeps {
  return {
    store,
    index: new DynamoEmbeddingIndex(tableName),
    engine: vectorEngineFromEnv(env),
    embedder: embedderFromEnv(env),
  };
}
