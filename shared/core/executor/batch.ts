/**
 * An executor queue's SQS batch through the pipeline: the messages run concurrently through the one SQS batch
 * loop (`#shared/adapters/sqs/sqs-batch.ts`: Powertools' batch processor, partial batch failures, back-off in seconds),
 * each one through `processExecutorMessage`.
 */
import type { SQSRecord } from 'aws-lambda';
import { silentLog } from '#shared/ports/log.ts';
import { processSqsBatch, type Redelivery } from '../../adapters/sqs/sqs-batch.ts';
import {
  InvalidExecutorMessageError,
  type PipelineDeps,
  type ProcessOutcome,
  processExecutorMessage,
} from './pipeline.ts';

export interface ExecutorBatchDeps extends PipelineDeps {
  /** Makes failed messages come back after a back-off instead of the queue's visibility timeout. */
  redelivery?: Redelivery | undefined;
}

export interface BatchOutcome {
  batchItemFailures: { itemIdentifier: string }[];
  outcomes: (ProcessOutcome | { status: 'failed'; error: string })[];
}

export async function processExecutorBatch(
  records: readonly SQSRecord[],
  deps: ExecutorBatchDeps,
): Promise<BatchOutcome> {
  const { batchItemFailures, results } = await processSqsBatch(
    records,
    (record) => processExecutorMessage(parseBody(record.body), deps),
    {
      log: deps.log ?? silentLog,
      redelivery: deps.redelivery,
    },
  );
  return {
    batchItemFailures,
    outcomes: results.map((r) =>
      r.ok
        ? r.value
        : { status: 'failed' as const, error: r.error instanceof Error ? r.error.message : String(r.error) },
    ),
  };
}

export function parseBody(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new InvalidExecutorMessageError('the body is not JSON');
  }
}
