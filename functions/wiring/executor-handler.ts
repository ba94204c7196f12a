/**
 * What every executor Lambda shares: an SQS batch (partial batch failures) through the universal pipeline, with
 * the store, claims and vector search built once per cold start, Powertools (powertools.ts), and middy's
 * abort signal passed down so slow model and HTTP calls stop before the Lambda timeout. Each executor's handler
 * says only which kind it runs and what it registers.
 */
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { vectorDepsFor } from '#shared/adapters/embeddings/embedder-from-env.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { DynamoClaims } from '#shared/core/executor/claims.ts';
import type { VectorSearch } from '#shared/core/executor/context-assembly.ts';
import { processExecutorBatch } from '#shared/core/executor/pipeline.ts';
import { type KindFactory, registerKind } from '#shared/core/executor/registry.ts';
import { searchSimilar } from '#shared/core/vector-search.ts';
import { ENV, type ExecutorKind, topology } from '#shared/topology.ts';
import { instrumented, powertools } from './powertools.ts';

export interface ExecutorHandlerOptions {
  implementation: KindFactory;
  /** Stop this long before the Lambda timeout: the message is retried instead of dying mid-write. */
  timeoutEarlyInMillis: number;
  /** Registrations the kind needs (built-in tools, …), run once per cold start. */
  setup?: (deps: { vectorSearch: VectorSearch }) => void;
}

export function createExecutorHandler(kind: ExecutorKind, options: ExecutorHandlerOptions) {
  const fn = topology.functions.executors[kind];
  const env = parseEnv(TableEnvSchema);
  const pt = powertools(`crumbs-${fn.name}`, [defaultDocumentClient()]);
  const { logger, metrics, tracing } = pt;
  const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
  const claims = new DynamoClaims(env[ENV.tableName]);
  const vectors = vectorDepsFor(store, env[ENV.tableName]);
  const vectorSearch: VectorSearch = { search: (query) => searchSimilar(vectors, query) };
  options.setup?.({ vectorSearch });
  registerKind(kind, options.implementation);

  const handler = middy(
    async (
      event: SQSEvent,
      _context: Context,
      { signal }: { signal: AbortSignal },
    ): Promise<SQSBatchResponse> => {
      const { batchItemFailures } = await processExecutorBatch(event.Records, {
        store,
        claims,
        leaseMs: fn.timeoutSeconds * 1000,
        log: logger,
        signal,
        vectorSearch,
        tracing,
      });
      metrics.addMetric('TriggersFailed', 'Count', batchItemFailures.length);
      return { batchItemFailures };
    },
    { timeoutEarlyInMillis: options.timeoutEarlyInMillis },
  );
  return instrumented(handler, pt);
}
