/**
 * How a failed model call is classified, shared by the providers: throttling, server faults and timeouts are
 * retriable (the message goes back to SQS and is redelivered later); everything else (bad key, bad request,
 * unknown model) is not, and the caller answers with an error breadcrumb.
 */
import { RetriableError } from '#shared/domain/errors.ts';

/**
 * Statuses worth another attempt: timeout, conflict, throttling, server faults. 408 and 409 are included as the
 * AI SDK did before (OpenAI answers 409 to a transient conflict on its side).
 */
export function isRetriableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The caller's signal fired (middy aborts before the Lambda timeout), or the transport gave up on time. */
export function isAbort(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted) return true;
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

export function abortedError(model: string, error: unknown): RetriableError {
  const message = error instanceof Error ? error.message : String(error);
  return new RetriableError(`${model}: the call was aborted (timeout): ${message}`, { cause: error });
}
