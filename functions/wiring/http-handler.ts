/**
 * The Lambda handler of a function behind the front door's STREAM integrations (api, mcp, a2a): a response-streaming
 * handler (middy's `streamifyResponse`, which wraps `awslambda.streamifyResponse` and writes the response's
 * metadata with `awslambda.HttpResponseStream.from`). What it writes is API Gateway's streaming format — the
 * metadata as JSON (`statusCode`, `headers`), 8 NUL bytes, then the body as it is produced — so a server-sent
 * event reaches the client when it is written. `crumbs dev` drives the same handler through an emulated
 * `awslambda` (`local/lambda-runtime.ts`) that writes and reads the same bytes.
 *
 * A streamed body (`HttpResult.bodyStream`) goes out through `streamedBody`: SSE keep-alive comments while it is
 * idle, and an end a little before the function's timeout whatever the producer does.
 */
import { Readable } from 'node:stream';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { type HttpEvent, type HttpRequest, type HttpResult, toHttpRequest } from '#shared/core/api/http.ts';
import { streamedBody } from '#shared/core/front-door/streamed-body.ts';
import { FRONT_DOOR } from '#shared/topology.ts';
import { instrumented, type Powertools } from './powertools.ts';

/** Time kept out of the function's remaining time to end a stream before Lambda cuts it. */
const END_MARGIN_MS = 5_000;

/** What API Gateway's streaming format carries before the delimiter, and the body after it. */
export interface StreamingResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string | Readable;
}

export function streamingHttpHandler(
  pt: Powertools,
  workspacesClaim: string,
  serve: (request: HttpRequest) => Promise<HttpResult>,
  onResult?: (result: HttpResult) => void,
) {
  return instrumented(
    middy(
      async (event: HttpEvent, context: Context): Promise<StreamingResponse> => {
        const request = toHttpRequest(event, workspacesClaim, context);
        // One trace per request: the writes it makes carry this span's context on their items.
        const result = await pt.tracing.span(
          `HTTP ${request.method}`,
          { method: request.method, path: request.path },
          () => serve(request),
          { kind: 'server', attributes: { 'http.request.method': request.method, 'url.path': request.path } },
        );
        onResult?.(result);
        return streamingResponse(result, context);
      },
      { streamifyResponse: true },
    ),
    pt,
  );
}

/** The result as middy's streamified handler takes it: a string body, or a stream of the body's chunks. */
export function streamingResponse(
  result: HttpResult,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): StreamingResponse {
  const { statusCode, headers, bodyStream } = result;
  if (bodyStream === undefined) return { statusCode, headers, body: result.body ?? '' };
  const sse = headers['content-type']?.startsWith('text/event-stream') === true;
  const chunks = streamedBody(bodyStream, {
    deadline: Date.now() + Math.max(0, context.getRemainingTimeInMillis() - END_MARGIN_MS),
    ...(sse ? { keepAliveMs: FRONT_DOOR.keepAliveSeconds * 1000 } : {}),
  });
  // objectMode off: each chunk is written as it comes, as bytes.
  return { statusCode, headers, body: Readable.from(chunks, { objectMode: false }) };
}
