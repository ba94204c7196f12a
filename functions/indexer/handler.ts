/**
 * Indexer. Triggered by the indexer queue (SQS, partial batch failures), fed by the static rule
 * `crumbs-system-indexer` on the crumbs bus (changes of schemas that have embeddings). Reads the breadcrumb from
 * the table; computes its embedding (Titan on AWS, the local embedder offline) and writes or removes the embedding
 * item beside it. Failures retry through SQS and end in the indexer's DLQ (alarmed); publishing never waits on it.
 */
import { vectorDepsFor } from '#functions/wiring/embedder-from-env.ts';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { indexChangeMessage } from '#shared/core/stream/indexer.ts';
import { embeddingPolicyFromEnv } from '#shared/core/stream/vector-search.ts';
import { ENV, topology } from '#shared/topology.ts';
import { powertools } from '../wiring/powertools.ts';
import { sqsHandler } from '../wiring/sqs-handler.ts';

const env = parseEnv(TableEnvSchema);
const pt = powertools('crumbs-indexer', [defaultDocumentClient()]);
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const vectors = vectorDepsFor(store, env[ENV.tableName]);
const policy = embeddingPolicyFromEnv();

export const handler = sqsHandler(pt, {
  queue: topology.functions.indexer.trigger.queue,
  handle: (record, signal) => indexChangeMessage(record.body, { ...vectors, policy, signal, log: pt.logger }),
  // Both, zeros included, on every batch (`functions/wiring/metrics.ts` says why).
  measure: (metrics, { results }) => {
    const count = (removed: boolean) =>
      results.filter((r) => r.ok && (r.value === 'removed') === removed).length;
    metrics.addMetric('EmbeddingsRemoved', 'Count', count(true));
    metrics.addMetric('EmbeddingsIndexed', 'Count', count(false));
  },
  timeoutEarlyInMillis: 2_000,
});
