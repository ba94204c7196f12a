/**
 * The indexer core: keeps a breadcrumb's embedding in step with the breadcrumb, off the publishing path.
 *
 * Embedding calls a model (Titan on Bedrock), which can lack access, be throttled or be down; so the publisher only
 * publishes, and the indexer's own static rule on the bus (`indexerPattern` in the topology: changes of embedded
 * schemas) feeds an SQS queue with a DLQ and an alarm: an embedding that keeps failing ends in the indexer's DLQ
 * and never delays or loses a change event.
 *
 * Each message makes the embedding match the store *now*: the breadcrumb is read (the event is a reference, and
 * may be late or out of order); gone (deleted, expired) → its embedding is removed; present → it is indexed
 * (idempotent: unchanged text is not embedded again, an older version never overwrites a newer one).
 */
import { parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { ChangeEventSchema } from '#shared/domain/change-event.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { Log } from '#shared/ports/log.ts';
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

export type IndexerDeps = VectorSearchDeps & { policy: EmbeddingPolicy; signal?: AbortSignal };

/** One message of the indexer's queue (a change event, as its static rule delivers it); throws to be retried. */
export async function indexChangeMessage(
  body: string,
  deps: IndexerDeps & { log: Log },
): Promise<IndexOutcome | 'removed'> {
  const { detail } = parseOrThrow(ChangeEventSchema, JSON.parse(body));
  const outcome = await indexChange(detail, deps);
  deps.log.debug('indexed', { breadcrumbId: detail.id, workspace: detail.workspace, outcome });
  return outcome;
}

export async function indexChange(
  change: IndexRequest,
  deps: IndexerDeps,
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
