/**
 * Workflow executor. Triggered by the workflow executor queue (SQS, partial batch failures), fed by the
 * EventBridge rules compiled from `workflow.def.v1` definitions. Reads the definition and the trigger (and any
 * context sources) from the breadcrumbs table; writes one `workflow.result.v1` (or `workflow.error.v1`,
 * `system.loop_stopped.v1`) per trigger, claim items, and whatever its steps' tools write (breadcrumb.create).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { DynamoClaims } from '#shared/core/executor/claims.ts';
import { processExecutorBatch } from '#shared/core/executor/pipeline.ts';
import { registerKind } from '#shared/core/executor/registry.ts';
import { createWorkflowExecutor } from '#shared/core/executor/workflow-executor.ts';
import { observability } from '#shared/core/observability.ts';
import { registerBuiltinTools } from '#shared/tools/builtins.ts';
import { ENV, topology } from '#shared/topology.ts';

const env = parseEnv(TableEnvSchema);
const { logger, metrics } = observability('crumbs-executor-workflow');
const fn = topology.functions.executors.workflow;
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const claims = new DynamoClaims(env[ENV.tableName]);
registerBuiltinTools();
registerKind('workflow', createWorkflowExecutor);

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
