/**
 * The one SQS batch loop (every SQS-triggered function runs it through `functions/wiring/sqs-handler.ts`):
 * Powertools' batch processor runs the records, concurrently except those keyed together (`inOrderOf`), and
 * reports the failed ones as `batchItemFailures` (the event source mapping has `ReportBatchItemFailures`; a whole
 * batch failing is reported item by item too). Each failed message comes back after a back-off in seconds
 * (`ChangeMessageVisibility`), not after the queue's visibility timeout (6 × the function timeout):
 * - the failing service's Retry-After when the error carries one (a 429 from a model provider);
 * - otherwise a random point in [d/2, d] for d = 2^receiveCount, so messages that failed together come back apart;
 * - at most the queue's visibility timeout: the back-off only ever shortens the wait SQS would impose;
 * - none after the last receive the redrive policy allows: the next receive moves the message to its DLQ, whose
 *   handler answers it. Every delivery still counts as a receive, so the redrive policy still ends a message that
 *   keeps failing: with 5 receives, the back-offs add up to at most 30 s before the DLQ.
 * A message whose handling wrote into a deleted workspace, and was refused for it (WorkspaceDeletedError: the item
 * layer refuses every such write), is done, not failed: delivering it again would be refused again. It is logged.
 * A processor is created per batch because it holds the batch's state.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { retryAfterSecondsOf, WorkspaceDeletedError } from '#shared/domain/errors.ts';
import type { Log } from '#shared/ports/log.ts';
import type { MessageVisibility } from '#shared/ports/message-visibility.ts';

/** How failed messages of one queue come back: its visibility timeout and redrive policy, and the SQS port. */
export interface Redelivery {
  visibility: MessageVisibility;
  /** The queue's visibility timeout: the longest back-off. */
  maxDelaySeconds: number;
  /** The redrive policy's receive count: after this receive, no back-off. */
  maxReceiveCount: number;
}

/** The redelivery of a queue declared in the topology (its visibility timeout and receive count). */
export function redeliveryFor(
  visibility: MessageVisibility,
  queue: { visibilityTimeoutSeconds: number; maxReceiveCount: number },
): Redelivery {
  return {
    visibility,
    maxDelaySeconds: queue.visibilityTimeoutSeconds,
    maxReceiveCount: queue.maxReceiveCount,
  };
}

export interface SqsBatchOptions {
  log: Log;
  /** Shortens the wait of failed messages; without it they wait out the queue's visibility timeout. */
  redelivery?: Redelivery | undefined;
  /**
   * Messages with the same key are handled one after the other, in batch order; the others concurrently. Without
   * it, every message runs concurrently.
   */
  inOrderOf?: ((record: SQSRecord) => string) | undefined;
  /** Jitter source (tests). @default Math.random */
  random?: () => number;
}

export interface SqsBatchResult<R> extends SQSBatchResponse {
  /** Per record, in order: what the handler returned, or the error it threw. */
  results: ({ ok: true; value: R } | { ok: false; error: unknown })[];
}

export async function processSqsBatch<R>(
  records: readonly SQSRecord[],
  handle: (record: SQSRecord) => Promise<R>,
  options: SqsBatchOptions,
): Promise<SqsBatchResult<R>> {
  const outcomes = new Map<string, { ok: true; value: R } | { ok: false; error: unknown }>();
  const run = options.inOrderOf ? inOrder(handle, options.inOrderOf) : handle;
  const processor = new BatchProcessor(EventType.SQS);
  const { batchItemFailures } = await processPartialResponse(
    { Records: [...records] },
    async (record: SQSRecord) => {
      try {
        const value = await run(record);
        outcomes.set(record.messageId, { ok: true, value });
        return value;
      } catch (error) {
        if (error instanceof WorkspaceDeletedError) {
          options.log.info('message dropped: its workspace was deleted', {
            messageId: record.messageId,
            workspace: error.workspace,
          });
          outcomes.set(record.messageId, { ok: false, error });
          return undefined;
        }
        outcomes.set(record.messageId, { ok: false, error });
        throw error;
      }
    },
    processor,
    { throwOnFullBatchFailure: false },
  );

  const failed = records.filter((r) => {
    const outcome = outcomes.get(r.messageId);
    return outcome?.ok === false && !(outcome.error instanceof WorkspaceDeletedError);
  });
  for (const record of failed) {
    const outcome = outcomes.get(record.messageId);
    const error = outcome && !outcome.ok ? outcome.error : undefined;
    options.log.warn('message failed; SQS will deliver it again', {
      messageId: record.messageId,
      receiveCount: receiveCount(record),
      error: error instanceof Error ? error.message : String(error),
    });
  }
  const { redelivery } = options;
  if (redelivery && failed.length > 0) {
    const delays = failed.map((record) => {
      const outcome = outcomes.get(record.messageId);
      const error = outcome && !outcome.ok ? outcome.error : undefined;
      return {
        message: { eventSourceARN: record.eventSourceARN, receiptHandle: record.receiptHandle },
        seconds: redeliveryDelaySeconds(error, receiveCount(record), redelivery, options.random),
      };
    });
    await redelivery.visibility.delay(delays).catch((error: unknown) => {
      // Not fatal: the messages come back after the queue's visibility timeout instead.
      options.log.warn('could not shorten the redelivery of failed messages', { error: String(error) });
    });
  }
  return {
    batchItemFailures,
    results: records.map(
      (r) => outcomes.get(r.messageId) ?? { ok: false, error: new Error('the record was not processed') },
    ),
  };
}

/** `handle`, with the messages of one key chained: each starts once the one before it has ended, failed or not. */
function inOrder<R>(
  handle: (record: SQSRecord) => Promise<R>,
  keyOf: (record: SQSRecord) => string,
): (record: SQSRecord) => Promise<R> {
  const chains = new Map<string, Promise<unknown>>();
  return (record) => {
    const key = keyOf(record);
    const run = (chains.get(key) ?? Promise.resolve()).then(() => handle(record));
    chains.set(
      key,
      run.catch(() => undefined),
    );
    return run;
  };
}

/**
 * Seconds until a failed message comes back: its Retry-After, else jittered 2^receiveCount; at most the queue's
 * visibility timeout, and 0 after the last receive before the DLQ.
 */
export function redeliveryDelaySeconds(
  error: unknown,
  receiveCount: number,
  queue: Pick<Redelivery, 'maxDelaySeconds' | 'maxReceiveCount'>,
  random: () => number = Math.random,
): number {
  if (receiveCount >= queue.maxReceiveCount) return 0;
  const retryAfter = retryAfterSecondsOf(error);
  const wanted =
    retryAfter !== undefined
      ? retryAfter
      : (() => {
          const ceiling = 2 ** Math.min(Math.max(1, receiveCount), 15);
          return ceiling / 2 + random() * (ceiling / 2);
        })();
  return Math.max(0, Math.min(queue.maxDelaySeconds, Math.ceil(wanted)));
}

function receiveCount(record: SQSRecord): number {
  const n = Number(record.attributes?.ApproximateReceiveCount);
  return Number.isInteger(n) && n > 0 ? n : 1;
}
