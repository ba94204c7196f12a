/**
 * What the Lambda Node.js runtime gives a response-streaming handler, for the local stack: the `awslambda` global
 * (`streamifyResponse`, `HttpResponseStream.from`), a response stream, and — playing API Gateway's part — the reader
 * of what the handler wrote. It follows the runtime interface client (`aws-lambda-nodejs-runtime-interface-client`,
 * `UserFunction.js`, `ResponseStream.js`, `HttpResponseStream.js`) byte for byte where it matters:
 *
 * - `streamifyResponse(handler)` marks the handler with `Symbol.for('aws.lambda.runtime.handler.streaming')`; the
 *   runtime then calls it as `handler(event, responseStream, context)`;
 * - `HttpResponseStream.from(stream, metadata)` sets the content type
 *   `application/vnd.awslambda.http-integration-response` and, just before the first write, writes the metadata as
 *   JSON and 8 NUL bytes; a stream ended without a write carries no metadata at all;
 * - API Gateway (a STREAM integration) reads the metadata from the first 16 KB, up to the delimiter, and sends the
 *   status and headers, then the rest of the bytes as they come; anything else is a 502.
 *
 * So a handler that works here writes what API Gateway reads, and the tests read the same bytes
 * (`readIntegrationResponse`).
 */
import { PassThrough, type Readable, Writable } from 'node:stream';
import type { Context } from 'aws-lambda';
import { localLambdaContext } from './event-sources/lambda-context.ts';

export const HANDLER_STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const STREAM_RESPONSE = 'response';
export const HTTP_INTEGRATION_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER_LEN = 8;
/** API Gateway reads the metadata from the first 16 KB of the stream. */
export const METADATA_MAX_BYTES = 16 * 1024;

export type StreamingHandler<E> = ((
  event: E,
  stream: ResponseStream,
  context: Context,
) => Promise<unknown>) & {
  [HANDLER_STREAMING]?: string;
};

/** The response stream a streaming handler writes to; the bytes come out of `output`. */
export class ResponseStream extends Writable {
  /** What the runtime would send Lambda as the response's content type. */
  contentType = 'application/octet-stream';
  /** Set by `HttpResponseStream.from`: runs once, before the first write. */
  _onBeforeFirstWrite: ((write: (chunk: string | Uint8Array) => void) => void) | undefined;
  readonly output: PassThrough = new PassThrough();
  private written = false;

  constructor() {
    super({
      write: (chunk: Buffer, _encoding, callback) => {
        this.output.write(chunk, callback);
      },
      final: (callback) => {
        this.output.end();
        callback();
      },
      // Destroyed after it finished (autoDestroy), the output keeps what is still unread; destroyed before, the
      // reader learns the stream broke.
      destroy: (error, callback) => {
        if (error) this.output.destroy(error);
        else if (!this.output.writableEnded)
          this.output.destroy(new Error('the response stream was destroyed'));
        callback(error);
      },
    });
  }

  setContentType(type: string): void {
    if (this.written) throw new Error('Cannot set content-type, too late.');
    this.contentType = type;
  }

  override write(
    chunk: unknown,
    encoding?: BufferEncoding | ((error: Error | null | undefined) => void),
    callback?: (error: Error | null | undefined) => void,
  ): boolean {
    const data = typeof chunk === 'string' || chunk instanceof Uint8Array ? chunk : JSON.stringify(chunk);
    if (!this.written && this._onBeforeFirstWrite !== undefined) {
      this._onBeforeFirstWrite((first) => super.write(first));
    }
    this.written = true;
    return typeof encoding === 'function'
      ? super.write(data, encoding)
      : super.write(data, encoding ?? 'utf8', callback);
  }
}

const awslambda = {
  streamifyResponse<H extends object>(handler: H): H {
    (handler as Record<symbol, unknown>)[HANDLER_STREAMING] = STREAM_RESPONSE;
    return handler;
  },
  HttpResponseStream: {
    from(stream: ResponseStream, metadata: unknown): ResponseStream {
      stream.setContentType(HTTP_INTEGRATION_CONTENT_TYPE);
      const prelude = JSON.stringify(metadata);
      stream._onBeforeFirstWrite = (write) => {
        write(prelude);
        write(new Uint8Array(DELIMITER_LEN));
      };
      return stream;
    },
  },
};

/**
 * Installs the runtime's `awslambda` global (before the handlers are imported, as the runtime does). Merged into an
 * object that may already be there: `@aws/lambda-invoke-store` (under Powertools) creates `awslambda` itself when
 * it loads first.
 */
export function installAwsLambdaGlobal(): void {
  const g = globalThis as unknown as { awslambda?: Partial<typeof awslambda> };
  g.awslambda ??= {};
  g.awslambda.streamifyResponse ??= awslambda.streamifyResponse;
  g.awslambda.HttpResponseStream ??= awslambda.HttpResponseStream;
}

export function isStreamingHandler(handler: unknown): boolean {
  return (
    typeof handler === 'function' &&
    (handler as unknown as Record<symbol, unknown>)[HANDLER_STREAMING] === STREAM_RESPONSE
  );
}

export interface StreamingInvocation {
  /** The bytes the handler wrote, as they are written. */
  readonly output: Readable;
  /** The content type the handler's stream declared. */
  contentType(): string;
  /** Settles when the invocation ends (its error, if the handler failed). */
  readonly done: Promise<void>;
  /** Ends the invocation early (the client went away): the handler's stream is destroyed. */
  abort(): void;
}

/**
 * Invokes a streaming handler as Lambda's InvokeWithResponseStream does: the response stream is ended at the
 * function's timeout whatever the handler does ("for a streaming response, the timeout bounds the whole stream").
 */
export function invokeStreaming<E>(
  handler: unknown,
  event: E,
  fn: { name: string; timeoutSeconds: number; memoryMb: number },
  observer?: { started?(fn: string): void; ended(record: InvocationEnd): void },
): StreamingInvocation {
  if (!isStreamingHandler(handler)) throw new Error(`${fn.name}: not a response-streaming handler`);
  const stream = new ResponseStream();
  // Errors reach the reader through `output` (its iterator throws them); unread, they are no process's crash.
  stream.on('error', () => undefined);
  stream.output.on('error', () => undefined);
  const context = localLambdaContext(fn.name, fn.timeoutSeconds, fn.memoryMb);
  observer?.started?.(fn.name);
  const started = performance.now();
  const timer = setTimeout(() => {
    stream.destroy(new Error(`${fn.name} timed out after ${fn.timeoutSeconds} s`));
  }, fn.timeoutSeconds * 1000);
  const run = (handler as StreamingHandler<E>)(event, stream, context);
  const done = run.then(
    () => {
      if (!stream.writableEnded) stream.end();
    },
    (error: unknown) => {
      stream.destroy(error instanceof Error ? error : new Error(String(error)));
      throw error;
    },
  );
  const finish = (ok: boolean) => {
    clearTimeout(timer);
    observer?.ended({
      function: fn.name,
      memoryMb: fn.memoryMb,
      durationMs: performance.now() - started,
      ok,
    });
  };
  done.then(
    () => finish(true),
    () => finish(false),
  );
  done.catch(() => undefined);
  return {
    output: stream.output,
    contentType: () => stream.contentType,
    done,
    abort: () => stream.destroy(new Error('the client went away')),
  };
}

export interface InvocationEnd {
  readonly function: string;
  readonly memoryMb: number;
  readonly durationMs: number;
  readonly ok: boolean;
}

/** The metadata API Gateway reads before the delimiter (its Lambda proxy output format for streaming). */
export interface IntegrationMetadata {
  statusCode: number;
  headers: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  cookies?: string[];
}

export class IntegrationResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IntegrationResponseError';
  }
}

/**
 * Reads a streaming integration's bytes as API Gateway does: the metadata (JSON, within the first 16 KB) up to 8 NUL
 * bytes, then the body, chunk by chunk as it arrives. Throws `IntegrationResponseError` (API Gateway's 502) when
 * the bytes are not in that format.
 */
export async function readIntegrationResponse(
  output: AsyncIterable<Buffer | string>,
): Promise<{ metadata: IntegrationMetadata; body: AsyncGenerator<Buffer, void, undefined> }> {
  const iterator = output[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  for (;;) {
    const at = delimiterAt(head);
    if (at >= 0) {
      const metadata = parseMetadata(head.subarray(0, at));
      const rest = head.subarray(at + DELIMITER_LEN);
      return { metadata, body: bodyOf(rest, iterator) };
    }
    if (head.length > METADATA_MAX_BYTES) {
      throw new IntegrationResponseError('no metadata and delimiter within the first 16 KB of the response');
    }
    const next = await iterator.next();
    if (next.done) throw new IntegrationResponseError('the response ended before its metadata and delimiter');
    head = Buffer.concat([head, Buffer.from(next.value)]);
  }
}

function delimiterAt(bytes: Buffer): number {
  let run = 0;
  for (let i = 0; i < bytes.length; i++) {
    run = bytes[i] === 0 ? run + 1 : 0;
    if (run === DELIMITER_LEN) return i - DELIMITER_LEN + 1;
  }
  return -1;
}

function parseMetadata(bytes: Buffer): IntegrationMetadata {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new IntegrationResponseError('the metadata is not JSON');
  }
  const m = value as Partial<IntegrationMetadata> | null;
  if (m === null || typeof m !== 'object' || !Number.isInteger(m.statusCode)) {
    throw new IntegrationResponseError('the metadata has no statusCode');
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) headers[k.toLowerCase()] = String(v);
  return {
    statusCode: m.statusCode as number,
    headers,
    ...(m.multiValueHeaders ? { multiValueHeaders: m.multiValueHeaders } : {}),
    ...(m.cookies ? { cookies: m.cookies } : {}),
  };
}

async function* bodyOf(
  first: Buffer,
  rest: AsyncIterator<Buffer | string>,
): AsyncGenerator<Buffer, void, undefined> {
  try {
    if (first.length > 0) yield first;
    for (;;) {
      const next = await rest.next();
      if (next.done) return;
      yield Buffer.from(next.value);
    }
  } finally {
    await rest.return?.();
  }
}
