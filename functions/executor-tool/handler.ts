/**
 * Tool executor. Triggered by the tool executor queue (SQS, partial batch failures), fed by the EventBridge rules
 * compiled from `tool.def.v1` definitions. Reads the definition and the trigger (and any context sources) from
 * the breadcrumbs table; writes one `tool.response.v1` per request (or `system.loop_stopped.v1`) and claim items.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { vectorDepsFor } from '#shared/adapters/embeddings/embedder-from-env.ts';
import { AiSdkLlmClient } from '#shared/adapters/llm/ai-sdk-client.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { DynamoClaims } from '#shared/core/executor/claims.ts';
import { registerContextTools } from '#shared/core/executor/context-builder.ts';
import { processExecutorBatch } from '#shared/core/executor/pipeline.ts';
import { registerKind } from '#shared/core/executor/registry.ts';
import { createToolExecutor } from '#shared/core/executor/tool-executor.ts';
import { observability } from '#shared/core/observability.ts';
import { searchSimilar } from '#shared/core/vector-search.ts';
import { registerBuiltinTools } from '#shared/tools/builtins.ts';
import { ENV, topology } from '#shared/topology.ts';

const env = parseEnv(TableEnvSchema);
const { logger, metrics } = observability('crumbs-executor-tool');
const fn = topology.functions.executors.tool;
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const claims = new DynamoClaims(env[ENV.tableName]);
const vectorDeps = vectorDepsFor(store, env[ENV.tableName]);
registerBuiltinTools();
registerContextTools({
  llm: new AiSdkLlmClient(),
  vectorSearch: { search: (query) => searchSimilar(vectorDeps, query) },
});
registerKind('tool', createToolExecutor);

export const handler = middy(
  async (
    event: SQSEvent,
    _context: unknown,
    { signal }: { signal: AbortSignal },
  ): Promise<SQSBatchResponse> => {
    const outcome = await processExecutorBatch(event.Records, {
      store,
      claims,
      leaseMs: fn.timeoutSeconds * 1000,
      log: logger,
      signal,
    });
    metrics.addMetric('TriggersFailed', 'Count', outcome.batchItemFailures.length);
    metrics.publishStoredMetrics();
    return { batchItemFailures: outcome.batchItemFailures };
  },
  { timeoutEarlyInMillis: 2000 },
).use(injectLambdaContext(logger));
