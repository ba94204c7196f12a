/**
 * How an aborted or broken-off model call is reported, shared by the providers. Whether a failed call is
 * retriable is decided by `isRetriable` / `isRetriableStatus` in `#shared/domain/errors.ts`, like every other
 * failure.
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

/**
 * An answer that broke off after it began: the connection was lost mid-body, the stream ended before its end, or
 * the provider put an error into it. Retried like a failed connection unless `retriable` is false (the provider
 * said the request itself is bad).
 */
export class BrokenStream extends Error {
  override readonly name = 'BrokenStream';
  readonly retriable: boolean;

  constructor(message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.retriable = options.retriable ?? true;
  }
}

/** The wait before retry n (0-based) inside a call: 500 ms, doubling; callers cap it. */
export function backoffMs(attempt: number): number {
  return 500 * 2 ** attempt;
}

/** An error's message, with the reason Node's fetch keeps on its cause ("fetch failed" alone says little). */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? `${error.message} (${code})` : error.message;
}
