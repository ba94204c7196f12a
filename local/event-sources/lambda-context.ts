import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** A Lambda context for a local invocation with the function's timeout from the topology. */
export function localLambdaContext(functionName: string, timeoutSeconds: number, memoryMb: number): Context {
  const deadline = Date.now() + timeoutSeconds * 1000;
  const requestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${requestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export type LambdaHandler<E, R> = (event: E, context: Context) => Promise<R>;

/** One finished local invocation: which function, how long it ran, with what memory (benchmarks price these). */
export interface InvocationRecord {
  readonly function: string;
  readonly memoryMb: number;
  readonly durationMs: number;
  readonly ok: boolean;
}

/** Told about every invocation as it starts and ends (benchmarks: count, time, and wait for quiet). */
export interface InvocationObserver {
  started?(fn: string): void;
  ended(record: InvocationRecord): void;
}

/** Runs a handler as Lambda would: a timeout is a failure (the local process cannot be frozen, only abandoned). */
export async function invoke<E, R>(
  handler: LambdaHandler<E, R>,
  event: E,
  fn: { name: string; timeoutSeconds: number; memoryMb: number },
  observer?: InvocationObserver,
): Promise<R> {
  const context = localLambdaContext(fn.name, fn.timeoutSeconds, fn.memoryMb);
  observer?.started?.(fn.name);
  const started = performance.now();
  let ok = false;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${fn.name} timed out after ${fn.timeoutSeconds} s`)),
      fn.timeoutSeconds * 1000,
    );
  });
  try {
    const result = await Promise.race([handler(event, context), timeout]);
    ok = true;
    return result;
  } finally {
    clearTimeout(timer);
    observer?.ended({
      function: fn.name,
      memoryMb: fn.memoryMb,
      durationMs: performance.now() - started,
      ok,
    });
  }
}
