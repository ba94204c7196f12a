/**
 * Timer function. Triggered by the timers queue (SQS, partial batch failures), fed by EventBridge Scheduler: the
 * one-time schedules runs set (waits, step timeouts, retry back-offs) and the recurring schedules of
 * `schedule.def.v1` definitions. Reads the schedule definition a recurring firing names; writes the fired
 * breadcrumb (`workflow.timer.v1`, or the schedule's breadcrumb) as `system:scheduler` under a deterministic id.
 * Failed messages come back after a back-off and end in the alarmed timers DLQ.
 */
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { SqsMessageVisibility } from '#shared/adapters/sqs/message-visibility.ts';
import { processSqsBatch, redeliveryFor } from '#shared/adapters/sqs/sqs-batch.ts';
import { parseEnv, TableEnvSchema } from '#shared/config.ts';
import { handleTimerMessage } from '#shared/core/orchestration/timers.ts';
import { ENV, topology } from '#shared/topology.ts';
import { instrumented, powertools } from '../wiring/powertools.ts';

const env = parseEnv(TableEnvSchema);
const pt = powertools('crumbs-timer', [defaultDocumentClient()]);
const { logger, metrics } = pt;
const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
const redelivery = redeliveryFor(new SqsMessageVisibility(), topology.functions.timer.trigger.queue);

export const handler = instrumented(
  middy(async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const { batchItemFailures, results } = await processSqsBatch(
      event.Records,
      async (record) => {
        let body: unknown;
        try {
          body = JSON.parse(record.body);
        } catch {
          body = undefined;
        }
        return handleTimerMessage(body, { store, log: logger });
      },
      { log: logger, redelivery },
    );
    metrics.addMetric(
      'TimersFired',
      'Count',
      results.filter((r) => r.ok && r.value.status === 'written').length,
    );
    metrics.addMetric('TimersFailed', 'Count', batchItemFailures.length);
    return { batchItemFailures };
  }),
  pt,
);
