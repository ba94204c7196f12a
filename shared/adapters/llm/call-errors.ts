/**
 * How an aborted model call is reported, shared by the providers. Whether a failed call is retriable is decided
 * by `isRetriable` / `isRetriableStatus` in `#shared/domain/errors.ts`, like every other failure.
 */
import { RetriableError } from '#shared/domain/errors.ts';

/** The caller's signal fired (middy aborts before the Lambda timeout), or the transport gave up on time. */
export function isAbort(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted) return true;
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

export function abortedError(model: string, error: unknown): RetriableError {
  const message = error instanceof Error ? error.message : String(error);
  return new RetriableError(`${model}: the call was aborted (timeout): ${message}`, { cause: error });
}
