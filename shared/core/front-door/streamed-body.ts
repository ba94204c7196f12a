/**
 * A streamed body as the front door sends it: an SSE comment at once for an event stream (a response-streaming
 * Lambda writes its status and headers with its first bytes, so the client has them before the first event), then
 * chunks as they come, an SSE comment (`: keep-alive`) after `keepAliveMs` without one (API Gateway closes a stream that is idle for 5 minutes; clients and proxies skip
 * comments), and an end at `deadline` whatever the producer is doing (a stream holds a Lambda: it never outlives the
 * function's time). A comment goes out only between events, never inside one. The producer is told to stop
 * (`return()`) when the body ends early: the deadline, or a reader that went away.
 */

export interface StreamedBodyOptions {
  /** Send an SSE comment after this long without a chunk; absent: none (a body that is not an event stream). */
  readonly keepAliveMs?: number;
  /** End here (epoch ms), the producer told to stop. */
  readonly deadline: number;
  readonly now?: () => number;
}

export const KEEP_ALIVE_COMMENT = ': keep-alive\n\n';

export async function* streamedBody(
  body: AsyncIterable<string>,
  options: StreamedBodyOptions,
): AsyncGenerator<string, void, undefined> {
  const now = options.now ?? Date.now;
  const iterator = body[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<string>> | undefined;
  let betweenEvents = true;
  let finished = false;
  try {
    if (options.keepAliveMs !== undefined) yield KEEP_ALIVE_COMMENT;
    for (;;) {
      const left = options.deadline - now();
      if (left <= 0) return;
      pending ??= iterator.next();
      let timer: NodeJS.Timeout | undefined;
      const tick = new Promise<'tick'>((resolve) => {
        timer = setTimeout(() => resolve('tick'), Math.min(options.keepAliveMs ?? left, left));
      });
      const got = await Promise.race([pending, tick]).finally(() => clearTimeout(timer));
      if (got === 'tick') {
        if (options.keepAliveMs !== undefined && betweenEvents && options.deadline > now()) {
          yield KEEP_ALIVE_COMMENT;
        }
        continue;
      }
      pending = undefined;
      if (got.done) {
        finished = true;
        return;
      }
      if (got.value === '') continue;
      betweenEvents = /\n\r?\n$/.test(got.value);
      yield got.value;
    }
  } finally {
    // Not awaited: a producer waiting for its next chunk would hold the end until it came.
    if (!finished) void iterator.return?.()?.catch(() => undefined);
  }
}
