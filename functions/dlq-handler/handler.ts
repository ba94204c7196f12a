/**
 * Dead-letter handler. Triggered by the executor queues' DLQs and the compiled rule targets' DLQ (one event source
 * per DLQ). Reads the definition and trigger a dead-lettered message names (for a rule target's dead letter, the
 * definition is found from its RULE_ARN); writes that kind's error breadcrumb (`tool.response.v1` with
 * `status: "error"`, `workflow.error.v1`, …) under the response's deterministic id, so nobody waits forever.
 *
 * One handler serves every executor DLQ. It loads only the kinds' error answers (`answers.ts`), not the kinds
 * themselves: answering needs no tool, model or JSONata, and this function must keep working when they fail.
 */
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { handleDeadLetterRecord } from '#shared/core/rules/rule-target-dead-letters.ts';
import { ENV, topology } from '#shared/topology.ts';
import { powertools } from '../wiring/powertools.ts';
import { sqsHandler } from '../wiring/sqs-handler.ts';

const env = parseEnv(TableEnvSchema);
const pt = powertools('crumbs-dlq-handler', [defaultDocumentClient()]);
const deps = {
  store: new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] }),
  log: pt.logger,
  tracing: pt.tracing,
};

export const handler = sqsHandler(pt, {
  // The DLQs' visibility timeout is 6 × this function's timeout (work-queue.ts); dead letters it fails on are
  // parked after as many receives as the executor queues allow.
  queue: {
    visibilityTimeoutSeconds: 6 * topology.functions.dlqHandler.timeoutSeconds,
    maxReceiveCount: topology.functions.executors.tool.trigger.queue.maxReceiveCount,
  },
  handle: (record) => handleDeadLetterRecord(record, deps),
  measure: (metrics, { records }) => metrics.addMetric('DeadLetteredTriggers', 'Count', records.length),
});
