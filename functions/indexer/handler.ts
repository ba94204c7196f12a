/**
 * Indexer. Triggered by the indexer queue (SQS, partial batch failures), fed by the static rule
 * `crumbs-system-indexer` on the crumbs bus (changes of schemas that have embeddings). Reads the breadcrumb from
 * the table; computes its embedding (Titan on AWS, the local embedder offline) and writes or removes the embedding
 * item beside it. Failures retry through SQS and end in the indexer's DLQ (alarmed); publishing never waits on it.
 */
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { vectorDepsFor } from '#functions/wiring/embedder-from-env.ts';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { SqsMessageVisibility } from '#shared/adapters/sqs/message-visibility.ts';
import { processSqsBatch, redeliveryFor } from '#shared/adapters/sqs/sqs-batch.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { indexChange } from '#shared/core/stream/indexer.ts';
import { embeddingPolicyFromEnv } from '#shared/core/stream/vector-search.ts';
import { parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { ChangeEventSchema } from '#shared/domain/change-event.ts';
import { ENV, topology } from '#shared/topology.ts';
import { instrumented, powertools } from '../wiring/powertools.ts';

const env = parseEnv(TableEnvSchema);
const pt = powertools('crumbs-indexer', [defaultDocumentClient()]);
const { logger, metrics } = pt;
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const vectors = vectorDepsFor(store, env[ENV.tableName]);
const policy = embeddingPolicyFromEnv();
// A failing embedding comes back after a back-off in seconds, not the queue's visibility timeout (sqs-batch.ts).
const redelivery = redeliveryFor(new SqsMessageVisibility(), topology.functions.indexer.trigger.queue);

export const handler = instrumented(
  middy(
    async (
      event: SQSEvent,
      _context: Context,
      { signal }: { signal: AbortSignal },
    ): Promise<SQSBatchResponse> => {
      const indexRecord = async (record: SQSRecord) => {
        const { detail } = parseOrThrow(ChangeEventSchema, JSON.parse(record.body));
        const outcome = await indexChange(detail, { ...vectors, policy, signal });
        logger.debug('indexed', { breadcrumbId: detail.id, workspace: detail.workspace, outcome });
        metrics.addMetric(outcome === 'removed' ? 'EmbeddingsRemoved' : 'EmbeddingsIndexed', 'Count', 1);
      };
      const { batchItemFailures } = await processSqsBatch(event.Records, indexRecord, {
        log: logger,
        redelivery,
      });
      return { batchItemFailures };
    },
    { timeoutEarlyInMillis: 2_000 },
  ),
  pt,
);
