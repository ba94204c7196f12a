/**
 * Context-builder executor. Triggered by the context-builder queue (events routed by each context.config.v1's
 * rule, compiled from its update_triggers — typically user.message.v1). Reads the config, the trigger and its
 * sources (recent / latest / tagged listings, vector nearest neighbours over stored embeddings); upserts one
 * agent.context.v1 per consumer and session (or writes context.error.v1).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { vectorDepsFor } from '#shared/adapters/embeddings/embedder-from-env.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { DynamoClaims } from '#shared/core/executor/claims.ts';
import { createContextBuilder } from '#shared/core/executor/context-builder.ts';
import type { ExecutorKindImplementation } from '#shared/core/executor/contract.ts';
import { processExecutorBatch } from '#shared/core/executor/pipeline.ts';
import { registerKind } from '#shared/core/executor/registry.ts';
import { observability } from '#shared/core/observability.ts';
import { searchSimilar } from '#shared/core/vector-search.ts';
import { ENV, topology } from '#shared/topology.ts';

const fn = topology.functions.executors['context-builder'];
const env = parseEnv(TableEnvSchema);
const { logger } = observability(`crumbs-${fn.name}`);
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const claims = new DynamoClaims(env[ENV.tableName]);
const vectorDeps = vectorDepsFor(store, env[ENV.tableName]);

registerKind('context-builder', () => createContextBuilder() as ExecutorKindImplementation<unknown>);

export const handler = middy(
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
      vectorSearch: { search: (query) => searchSimilar(vectorDeps, query) },
    });
    return { batchItemFailures };
  },
  { timeoutEarlyInMillis: 3_000 },
).use(injectLambdaContext(logger));
