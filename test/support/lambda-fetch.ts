/**
 * `fetch` answered by a Lambda handler the way the front door answers it: the request becomes a REST API proxy
 * event (with the authorizer's context, as after an Allow), a response-streaming handler runs in the local Lambda
 * runtime (`local/lambda-runtime.ts`), and its bytes are read as API Gateway reads a STREAM integration's — metadata,
 * delimiter, then the body passed on chunk by chunk as it comes. Every response's raw bytes are kept (`raw`), so a
 * test can check the format itself, and each chunk is there the moment the handler writes it.
 */
import { invoke, type LambdaHandler } from '#local/event-sources/lambda-context.ts';
import { invokeStreaming, isStreamingHandler, readIntegrationResponse } from '#local/lambda-runtime.ts';
import type { HttpEvent } from '#shared/core/api/http.ts';
import { proxyEvent } from './proxy-event.ts';

export interface RawResponse {
  readonly path: string;
  /** Every byte the handler wrote, in order (grows while the response streams). */
  readonly chunks: Buffer[];
}

export function lambdaFetch(
  handler: unknown,
  options: {
    /** The stage prefix of the URLs the client calls (`/prod`), which API Gateway strips from the event's path. */
    readonly stagePath?: string;
    /** The authorizer's context for requests (as after its Allow); absent: a public route. */
    readonly authorizer?: Record<string, string>;
    readonly raw?: RawResponse[];
    readonly fn?: { name: string; timeoutSeconds: number; memoryMb: number };
  } = {},
): typeof fetch {
  const fn = options.fn ?? { name: 'test', timeoutSeconds: 120, memoryMb: 512 };
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => {
      headers[k] = v;
    });
    headers.host = url.host;
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text();
    const path =
      options.stagePath && url.pathname.startsWith(options.stagePath)
        ? url.pathname.slice(options.stagePath.length)
        : url.pathname;
    const event: HttpEvent = proxyEvent({
      method: request.method,
      path,
      headers,
      query: Object.fromEntries(url.searchParams),
      ...(body !== undefined ? { body } : {}),
      ...(options.authorizer ? { authorizer: options.authorizer } : {}),
    });
    if (!isStreamingHandler(handler)) {
      const result = await invoke(
        handler as LambdaHandler<
          HttpEvent,
          { statusCode: number; headers?: Record<string, string>; body: string }
        >,
        event,
        fn,
      );
      return new Response(result.statusCode === 204 ? null : result.body, {
        status: result.statusCode,
        headers: result.headers ?? {},
      });
    }
    const invocation = invokeStreaming(handler, event, fn);
    const raw: RawResponse = { path, chunks: [] };
    options.raw?.push(raw);
    async function* recorded(): AsyncGenerator<Buffer> {
      for await (const chunk of invocation.output) {
        const bytes = Buffer.from(chunk as Buffer);
        raw.chunks.push(bytes);
        yield bytes;
      }
    }
    const { metadata, body: chunks } = await readIntegrationResponse(recorded());
    request.signal.addEventListener('abort', () => invocation.abort(), { once: true });
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) controller.close();
          else controller.enqueue(new Uint8Array(next.value));
        } catch (error) {
          controller.error(error);
        }
      },
      cancel() {
        invocation.abort();
      },
    });
    const nullBody = metadata.statusCode === 202 || metadata.statusCode === 204;
    if (nullBody) void stream.cancel();
    return new Response(nullBody ? null : stream, { status: metadata.statusCode, headers: metadata.headers });
  };
}

/** The bytes of a raw response split at API Gateway's delimiter: the metadata (parsed) and the body so far. */
export function splitRaw(raw: RawResponse): { metadata: unknown; delimiter: Buffer; body: string } {
  const bytes = Buffer.concat(raw.chunks);
  const at = bytes.indexOf(Buffer.alloc(8));
  if (at < 0) throw new Error(`no delimiter in the response to ${raw.path}`);
  return {
    metadata: JSON.parse(bytes.subarray(0, at).toString('utf8')) as unknown,
    delimiter: bytes.subarray(at, at + 8),
    body: bytes.subarray(at + 8).toString('utf8'),
  };
}
