/**
 * Agent executor. Triggered by the agent queue (events routed by each agent definition's rule: its
 * agent.context.v1 / user messages, and tool.response.v1 answers to its own requests). Reads the definition, the
 * trigger, its context and the agent's conversation; calls the model (AI SDK: Bedrock, OpenRouter, OpenAI,
 * Ollama, OpenAI-compatible, or the offline model; keys from Secrets Manager); writes tool.request.v1,
 * agent.conversation.v1 and agent.response.v1 (or agent.error.v1) breadcrumbs.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { vectorDepsFor } from '#shared/adapters/embeddings/embedder-from-env.ts';
import { AiSdkLlmClient } from '#shared/adapters/llm/ai-sdk-client.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { createAgentExecutor } from '#shared/core/executor/agent-executor.ts';
import { DynamoClaims } from '#shared/core/executor/claims.ts';
import type { ExecutorKindImplementation } from '#shared/core/executor/contract.ts';
import { processExecutorBatch } from '#shared/core/executor/pipeline.ts';
import { registerKind } from '#shared/core/executor/registry.ts';
import { observability } from '#shared/core/observability.ts';
import { searchSimilar } from '#shared/core/vector-search.ts';
import { ENV, topology } from '#shared/topology.ts';

const fn = topology.functions.executors.agent;
const env = parseEnv(TableEnvSchema);
const { logger } = observability(`crumbs-${fn.name}`);
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const claims = new DynamoClaims(env[ENV.tableName]);
const llm = new AiSdkLlmClient();
const vectorDeps = vectorDepsFor(store, env[ENV.tableName]);

registerKind(
  'agent',
  (deps) => createAgentExecutor({ store: deps.store, llm }) as ExecutorKindImplementation<unknown>,
);

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
  // Abort model calls 10 s before the Lambda timeout: the message is retried instead of timing out mid-write.
  { timeoutEarlyInMillis: 10_000 },
).use(injectLambdaContext(logger));
