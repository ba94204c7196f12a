/**
 * The local Lambda runtime's response streaming, byte for byte as AWS documents it (API Gateway's Lambda proxy
 * output format for streaming: the metadata as JSON, 8 NUL bytes, then the payload; the metadata within the first
 * 16 KB) and as the runtime interface client writes it (`HttpResponseStream.from` sets the content type and writes
 * the prelude just before the first write): what a handler writes here is what API Gateway reads.
 */
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import middy from '@middy/core';
import { describe, expect, it } from 'vitest';
import {
  HTTP_INTEGRATION_CONTENT_TYPE,
  IntegrationResponseError,
  installAwsLambdaGlobal,
  invokeStreaming,
  isStreamingHandler,
  type ResponseStream,
  readIntegrationResponse,
} from '#local/lambda-runtime.ts';

installAwsLambdaGlobal();
const runtime = (globalThis as unknown as { awslambda: AwsLambda }).awslambda;
interface AwsLambda {
  streamifyResponse<H>(handler: H): H;
  HttpResponseStream: { from(stream: ResponseStream, metadata: unknown): ResponseStream };
}

const FN = { name: 'test', timeoutSeconds: 5, memoryMb: 128 };

async function bytesOf(output: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of output) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

describe('the local response stream', () => {
  it('writes the metadata as JSON, 8 NUL bytes, then the body, with the http-integration content type', async () => {
    const handler = runtime.streamifyResponse(async (_event: unknown, stream: ResponseStream) => {
      const out = runtime.HttpResponseStream.from(stream, { statusCode: 201, headers: { 'x-a': 'b' } });
      out.write('hello ');
      out.end('world');
    });
    expect(isStreamingHandler(handler)).toBe(true);
    const invocation = invokeStreaming(handler, {}, FN);
    const bytes = await bytesOf(invocation.output);
    await invocation.done;
    const prelude = JSON.stringify({ statusCode: 201, headers: { 'x-a': 'b' } });
    expect(bytes.subarray(0, prelude.length).toString()).toBe(prelude);
    expect([...bytes.subarray(prelude.length, prelude.length + 8)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(bytes.subarray(prelude.length + 8).toString()).toBe('hello world');
    expect(invocation.contentType()).toBe(HTTP_INTEGRATION_CONTENT_TYPE);
  });

  it('is read as API Gateway reads it: status and headers, then each chunk as it is written', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handler = runtime.streamifyResponse(async (_event: unknown, stream: ResponseStream) => {
      const out = runtime.HttpResponseStream.from(stream, {
        statusCode: 200,
        headers: { 'Content-Type': 'text/plain' },
      });
      out.write('first');
      await gate;
      out.end('second');
    });
    const invocation = invokeStreaming(handler, {}, FN);
    const { metadata, body } = await readIntegrationResponse(invocation.output);
    expect(metadata).toEqual({ statusCode: 200, headers: { 'content-type': 'text/plain' } });
    // The first chunk is here while the handler still waits: nothing was held back.
    expect(String((await body.next()).value)).toBe('first');
    release();
    expect(String((await body.next()).value)).toBe('second');
    expect((await body.next()).done).toBe(true);
  });

  it('drives a middy streamified handler (what the functions are) in the same shape', async () => {
    const handler = middy(
      async () => ({
        statusCode: 200,
        headers: { 'content-type': 'text/event-stream' },
        body: Readable.from(
          (async function* () {
            yield 'data: 1\n\n';
            await sleep(10);
            yield 'data: 2\n\n';
          })(),
        ),
      }),
      { streamifyResponse: true },
    );
    const invocation = invokeStreaming(handler, {}, FN);
    const { metadata, body } = await readIntegrationResponse(invocation.output);
    expect(metadata.statusCode).toBe(200);
    expect((await bytesOf(body)).toString()).toBe('data: 1\n\ndata: 2\n\n');
  });

  it('carries no metadata when the handler ends without writing, which API Gateway answers with a 502', async () => {
    const handler = runtime.streamifyResponse(async (_event: unknown, stream: ResponseStream) => {
      runtime.HttpResponseStream.from(stream, { statusCode: 200 }).end();
    });
    await expect(readIntegrationResponse(invokeStreaming(handler, {}, FN).output)).rejects.toThrow(
      IntegrationResponseError,
    );
  });

  it('refuses output whose metadata is not within the first 16 KB, or is not JSON with a status', async () => {
    const raw = (text: string) =>
      runtime.streamifyResponse(async (_event: unknown, stream: ResponseStream) => {
        stream.end(text);
      });
    await expect(
      readIntegrationResponse(invokeStreaming(raw('x'.repeat(20_000)), {}, FN).output),
    ).rejects.toThrow(/16 KB/);
    const nul8 = '\u0000'.repeat(8);
    await expect(
      readIntegrationResponse(invokeStreaming(raw(`{nope${nul8}`), {}, FN).output),
    ).rejects.toThrow(/not JSON/);
    await expect(readIntegrationResponse(invokeStreaming(raw(`{}${nul8}`), {}, FN).output)).rejects.toThrow(
      /statusCode/,
    );
  });

  it('ends the stream at the function timeout, after what was sent, as Lambda does', async () => {
    const handler = runtime.streamifyResponse(async (_event: unknown, stream: ResponseStream) => {
      const out = runtime.HttpResponseStream.from(stream, { statusCode: 200 });
      out.write('partial');
      await sleep(5_000);
    });
    const invocation = invokeStreaming(handler, {}, { ...FN, timeoutSeconds: 0.2 });
    const { body } = await readIntegrationResponse(invocation.output);
    expect(String((await body.next()).value)).toBe('partial');
    await expect(body.next()).rejects.toThrow(/timed out/);
  });

  it('refuses to set the content type after the first write (as the runtime does)', async () => {
    let error: unknown;
    const handler = runtime.streamifyResponse(async (_event: unknown, stream: ResponseStream) => {
      stream.write('x');
      try {
        stream.setContentType('text/plain');
      } catch (e) {
        error = e;
      }
      stream.end();
    });
    await bytesOf(invokeStreaming(handler, {}, FN).output);
    expect(String(error)).toMatch(/too late/);
  });
});
