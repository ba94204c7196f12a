/**
 * Dead-letter handler. Triggered by the executor queues' DLQs (one event source per DLQ). Reads the definition
 * and trigger a dead-lettered message names; writes that kind's error breadcrumb (`tool.response.v1` with
 * `status: "error"`, `workflow.error.v1`, …) under the response's deterministic id, so nobody waits forever.
 *
 * Every kind is registered here, because one handler serves all executor DLQs; a kind missing below would be
 * dropped with an error log (its errorOutput cannot be built without it).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { createAgentExecutor } from '#shared/core/executor/agent-executor.ts';
import { createContextBuilder } from '#shared/core/executor/context-builder.ts';
import type { ExecutorKindImplementation } from '#shared/core/executor/contract.ts';
import { handleDeadLetterBatch } from '#shared/core/executor/dlq.ts';
import { registerKind } from '#shared/core/executor/registry.ts';
import { createToolExecutor } from '#shared/core/executor/tool-executor.ts';
import { createWorkflowExecutor } from '#shared/core/executor/workflow-executor.ts';
import { observability } from '#shared/core/observability.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import { ENV } from '#shared/topology.ts';

const env = parseEnv(TableEnvSchema);
const { logger, metrics } = observability('crumbs-dlq-handler');
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
registerKind('tool', createToolExecutor);
registerKind('workflow', createWorkflowExecutor);
registerKind('context-builder', () => createContextBuilder() as ExecutorKindImplementation<unknown>);
// The DLQ only builds error breadcrumbs; an agent's errorOutput never calls the model, so none is wired in.
const noModel: LlmClient = {
  generate: () => Promise.reject(new NonRetriableError('the dead-letter handler does not call models')),
};
registerKind(
  'agent',
  (deps) => createAgentExecutor({ store: deps.store, llm: noModel }) as ExecutorKindImplementation<unknown>,
);

export const handler = middy(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  metrics.addMetric('DeadLetteredTriggers', 'Count', event.Records.length);
  const outcome = await handleDeadLetterBatch(event.Records, { store, log: logger });
  metrics.publishStoredMetrics();
  return outcome;
}).use(injectLambdaContext(logger));
