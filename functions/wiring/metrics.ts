/**
 * The metrics each kind of handler adds on every invocation (Powertools EMF, namespace `METRICS_NAMESPACE`,
 * dimension `service`), read by the CloudWatch dashboard (`infra/constructs/operations-dashboard.ts`). Every
 * invocation adds some, zeros included: a handler that added none had Powertools warn "No application metrics to
 * publish" on each call, and a dashboard cannot tell zero from no data.
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import type { SqsBatchResult } from '#shared/adapters/sqs/sqs-batch.ts';
import type { ProcessOutcome } from '#shared/core/executor/pipeline.ts';

/** Nano-dollars per US dollar (`cost_nusd`). */
const NUSD_PER_USD = 1e9;

/**
 * An executor's batch: triggers handled and failed, triggers the hop limit stopped (`LoopStops`), and the model
 * tokens and cost the answers record (`llm_usage`).
 */
export function measureExecutorBatch(
  metrics: Metrics,
  batch: SqsBatchResult<ProcessOutcome> & { records: readonly SQSRecord[] },
): void {
  let loopStops = 0;
  let input = 0;
  let output = 0;
  let cost = 0;
  for (const result of batch.results) {
    if (!result.ok) continue;
    const outcome = result.value;
    if (outcome.status === 'loop-stopped') loopStops++;
    if (outcome.status === 'responded' || outcome.status === 'errored') {
      input += outcome.modelUsage.input_tokens;
      output += outcome.modelUsage.output_tokens;
      cost += outcome.modelUsage.cost_nusd;
    }
  }
  metrics.addMetric('Triggers', 'Count', batch.records.length);
  metrics.addMetric('TriggersFailed', 'Count', batch.batchItemFailures.length);
  metrics.addMetric('LoopStops', 'Count', loopStops);
  metrics.addMetric('ModelInputTokens', 'Count', input);
  metrics.addMetric('ModelOutputTokens', 'Count', output);
  metrics.addMetric('ModelCostUsd', 'None', cost / NUSD_PER_USD);
}

/** An HTTP handler's answer: whether the handler itself answered 4xx or 5xx (API Gateway counts per route too). */
export function measureHttpAnswer(metrics: Metrics, statusCode: number): void {
  metrics.addMetric('ClientErrors', 'Count', statusCode >= 400 && statusCode < 500 ? 1 : 0);
  metrics.addMetric('ServerErrors', 'Count', statusCode >= 500 ? 1 : 0);
}
