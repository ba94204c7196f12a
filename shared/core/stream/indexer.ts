/**
 * The indexer core: keeps a breadcrumb's embedding in step with the breadcrumb, off the publishing path.
 *
 * Why a path of its own: embedding calls a model (Titan on Bedrock). When it ran inside the publisher, a model
 * without access, throttled or down failed the stream record, so the change event was retried and then dropped —
 * a failing embedding blocked routing. Now the publisher only publishes; the indexer's own static rule on the bus
 * (`indexerPattern` in the topology: changes of embedded schemas) feeds an SQS queue with a DLQ and an alarm, so
 * an embedding that keeps failing ends in the indexer's DLQ and never delays or loses a change event.
 *
 * Each message makes the embedding match the store *now*: the breadcrumb is read (the event is a reference, and
 * may be late or out of order); gone (deleted, expired) → its embedding is removed; present → it is indexed
 * (idempotent: unchanged text is not embedded again, an older version never overwrites a newer one).
 */

import { NotFoundError } from '#shared/domain/errors.ts';
import {
  type EmbeddingPolicy,
  type IndexOutcome,
  indexEmbedding,
  removeEmbedding,
  type VectorSearchDeps,
} from './vector-search.ts';

/** What the indexer needs from a change event's detail. */
export interface IndexRequest {
  workspace: string;
  id: string;
  schema_name: string;
}

export async function indexChange(
  change: IndexRequest,
  deps: VectorSearchDeps & { policy: EmbeddingPolicy; signal?: AbortSignal },
): Promise<IndexOutcome | 'removed'> {
  if (!deps.policy.embeds(change.schema_name)) return 'not-embedded';
  let record: Awaited<ReturnType<VectorSearchDeps['store']['get']>>;
  try {
    record = await deps.store.get(change.workspace, change.id);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    await removeEmbedding(deps, change.workspace, change.id);
    return 'removed';
  }
  return indexEmbedding(deps, record, deps.policy, deps.signal);
}
