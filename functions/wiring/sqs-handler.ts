/**
 * The skeleton of every SQS-triggered Lambda (timer, indexer, DLQ handler, rule manager, executors): a middy
 * handler with the Powertools middlewares (`powertools.ts`) that runs the event's records through the one SQS
 * batch loop (`processSqsBatch`: partial batch failures, each failure logged, each failed message back after a
 * back-off in seconds within its queue's visibility timeout and receive count), passing each message middy's abort
 * signal so slow calls stop before the Lambda timeout. A handler says only how it handles one message (throwing to
 * have SQS deliver it again), which messages must run in order, and what it counts.
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { SqsMessageVisibility } from '#shared/adapters/sqs/message-visibility.ts';
import { processSqsBatch, redeliveryFor, type SqsBatchResult } from '#shared/adapters/sqs/sqs-batch.ts';
import { instrumented, type Powertools } from './powertools.ts';

export interface SqsHandlerOptions<R> {
  /** The queue the function consumes (topology): its visibility timeout and redrive receive count. */
  queue: { visibilityTimeoutSeconds: number; maxReceiveCount: number };
  /** One message; a throw reports it failed, so SQS delivers it again after a back-off. */
  handle(record: SQSRecord, signal: AbortSignal): Promise<R>;
  /** Messages with the same key run one after the other, in batch order (`processSqsBatch`). */
  inOrderOf?: ((record: SQSRecord) => string) | undefined;
  /** The batch's metrics, added once it has run. */
  measure?: (metrics: Metrics, batch: SqsBatchResult<R> & { records: readonly SQSRecord[] }) => void;
  /** Stop this long before the Lambda timeout (the message is retried instead of dying mid-write). @default middy's */
  timeoutEarlyInMillis?: number | undefined;
}

export function sqsHandler<R>(pt: Powertools, options: SqsHandlerOptions<R>) {
  const redelivery = redeliveryFor(new SqsMessageVisibility(), options.queue);
  const handler = middy(
    async (
      event: SQSEvent,
      _context: Context,
      { signal }: { signal: AbortSignal },
    ): Promise<SQSBatchResponse> => {
      const batch = await processSqsBatch(event.Records, (record) => options.handle(record, signal), {
        log: pt.logger,
        redelivery,
        inOrderOf: options.inOrderOf,
      });
      options.measure?.(pt.metrics, { ...batch, records: event.Records });
      return { batchItemFailures: batch.batchItemFailures };
    },
    options.timeoutEarlyInMillis !== undefined
      ? { timeoutEarlyInMillis: options.timeoutEarlyInMillis }
      : undefined,
  );
  return instrumented(handler, pt);
}
