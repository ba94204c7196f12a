/**
 * The embedder of a stack whose embeddings are off (`CRUMBS_EMBEDDINGS=none`; CDK `crumbs:embeddings=none`): it
 * computes nothing and says so. The indexer embeds nothing on such a stack (`embeddingPolicyFromEnv` embeds no
 * schema), so no call reaches it from there; vector search and `vector` context sources are answered with a clear
 * refusal naming the setting, never a failed model call.
 */
import { BadRequestError } from '#shared/domain/errors.ts';
import type { Embedder } from '#shared/ports/embeddings.ts';
import { ENV } from '#shared/topology.ts';

export const EMBEDDINGS_OFF_MESSAGE = `embeddings are off on this stack (${ENV.embeddings}=none; on AWS the CDK context crumbs:embeddings=none): vector search and vector context sources need an embedding model`;

export class OffEmbedder implements Embedder {
  readonly model = 'none';
  readonly dimensions = 0;

  async embed(): Promise<number[][]> {
    throw new BadRequestError(EMBEDDINGS_OFF_MESSAGE, [{ path: 'q', message: EMBEDDINGS_OFF_MESSAGE }]);
  }
}
