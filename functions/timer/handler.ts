/**
 * Timer function. Triggered by the timers queue (SQS, partial batch failures), fed by EventBridge Scheduler: the
 * one-time schedules runs set (waits, step timeouts, retry back-offs) and the recurring schedules of
 * `schedule.def.v1` definitions. Reads the schedule definition a recurring firing names; writes the fired
 * breadcrumb (`workflow.timer.v1`, or the schedule's breadcrumb) as `system:scheduler` under a deterministic id.
 * Failed messages come back after a back-off and end in the alarmed timers DLQ.
 */
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { handleTimerMessage } from '#shared/core/orchestration/timers.ts';
import { ENV, topology } from '#shared/topology.ts';
import { powertools } from '../wiring/powertools.ts';
import { sqsHandler } from '../wiring/sqs-handler.ts';

const env = parseEnv(TableEnvSchema);
const pt = powertools('crumbs-timer', [defaultDocumentClient()]);
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });

export const handler = sqsHandler(pt, {
  queue: topology.functions.timer.trigger.queue,
  handle: (record) => handleTimerMessage(jsonOrUndefined(record.body), { store, log: pt.logger }),
  measure: (metrics, { results, batchItemFailures }) => {
    metrics.addMetric(
      'TimersFired',
      'Count',
      results.filter((r) => r.ok && r.value.status === 'written').length,
    );
    metrics.addMetric('TimersFailed', 'Count', batchItemFailures.length);
  },
});

/** A body that is not JSON is handed on as nothing: `handleTimerMessage` drops what it cannot read. */
function jsonOrUndefined(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
