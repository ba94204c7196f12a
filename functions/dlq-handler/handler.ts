/**
 * Dead-letter handler. Triggered by the executor queues' DLQs (one event source per DLQ). Reads the definition
 * and trigger a dead-lettered message names; writes that kind's error breadcrumb (`tool.response.v1` with
 * `status: "error"`, `workflow.error.v1`, …) under the response's deterministic id, so nobody waits forever.
 *
 * Kinds register here the way their executors do: a kind whose module is not imported below is dropped with an
 * error log (its errorOutput cannot be built without it).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { handleDeadLetterBatch } from '#shared/core/executor/dlq.ts';
import { registerKind } from '#shared/core/executor/registry.ts';
import { createToolExecutor } from '#shared/core/executor/tool-executor.ts';
import { createWorkflowExecutor } from '#shared/core/executor/workflow-executor.ts';
import { observability } from '#shared/core/observability.ts';
import { ENV } from '#shared/topology.ts';

const env = parseEnv(TableEnvSchema);
const { logger, metrics } = observability('crumbs-dlq-handler');
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
registerKind('tool', createToolExecutor);
registerKind('workflow', createWorkflowExecutor);

export const handler = middy(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  metrics.addMetric('DeadLetteredTriggers', 'Count', event.Records.length);
  const outcome = await handleDeadLetterBatch(event.Records, { store, log: logger });
  metrics.publishStoredMetrics();
  return outcome;
}).use(injectLambdaContext(logger));
