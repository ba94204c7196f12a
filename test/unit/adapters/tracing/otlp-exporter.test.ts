/**
 * crumbs' OTLP/HTTP JSON exporter against the one it stands in for (`@opentelemetry/exporter-trace-otlp-http`): the
 * same spans reach a loopback receiver as the same request body. And what the library cannot do: a SigV4-signed
 * request for X-Ray's OTLP endpoint (scope `<date>/<region>/xray/aws4_request`, the body's hash signed), headers
 * read once from a secret, a refused export reported.
 */
import { createHash, createHmac } from 'node:crypto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OtlpJsonExporter, parseOtlpHeaders } from '#shared/adapters/tracing/otlp-exporter.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../../../support/otlp-receiver.ts';

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

function someSpans() {
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'crumbs-test' }),
    spanProcessors: [new SimpleSpanProcessor({ exporter: memory })],
  });
  const tracer = provider.getTracer('crumbs');
  const parent = tracer.startSpan('agent trigger', { attributes: { 'crumbs.workspace': 'ws' } });
  parent.setAttributes({ 'gen_ai.usage.input_tokens': 12, 'gen_ai.response.finish_reasons': ['stop'] });
  parent.end();
  return memory.getFinishedSpans();
}

function exportWith(exporter: { export: OtlpJsonExporter['export'] }, spans = someSpans()) {
  return new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(spans, resolve));
}

describe('OtlpJsonExporter', () => {
  it('sends the body the OpenTelemetry OTLP/HTTP JSON exporter sends', async () => {
    const spans = someSpans();
    const before = receiver.requests.length;
    const library = new OTLPTraceExporter({ url: receiver.url, headers: { 'x-api-key': 'k' } });
    expect((await exportWith(library, spans)).code).toBe(0);
    await library.shutdown();
    const ours = new OtlpJsonExporter({ url: receiver.url, headers: { 'x-api-key': 'k' } });
    expect((await exportWith(ours, spans)).code).toBe(0);
    const [theirs, mine] = receiver.requests.slice(before);
    expect(JSON.parse(mine!.body)).toEqual(JSON.parse(theirs!.body));
    expect(mine!.headers['x-api-key']).toBe('k');
    expect(mine!.headers['content-type']).toBe('application/json');
  });

  it('signs each request with SigV4 for X-Ray when asked, over the body it sends', async () => {
    const before = receiver.requests.length;
    const exporter = new OtlpJsonExporter({
      url: receiver.url,
      sigv4: {
        service: 'xray',
        region: 'eu-west-1',
        credentials: async () => ({
          accessKeyId: 'AKIDEXAMPLE',
          secretAccessKey: 'secret',
          sessionToken: 'tok',
        }),
      },
    });
    expect((await exportWith(exporter)).code).toBe(0);
    const { headers, body } = receiver.requests[before]!;
    const auth =
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/(\d{8})\/eu-west-1\/xray\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
        String(headers.authorization),
      );
    expect(auth).not.toBeNull();
    const [, day, signedHeaders, signature] = auth!;
    expect(signedHeaders).toBe('content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token');
    expect(headers['x-amz-security-token']).toBe('tok');
    expect(headers['x-amz-content-sha256']).toBe(sha256(body));
    // The signature recomputed by hand from what arrived (AWS's SigV4 steps): it covers the body and the host.
    const canonical = [
      'POST',
      '/v1/traces',
      '',
      ...signedHeaders!.split(';').map((h) => `${h}:${String(headers[h]).trim()}`),
      '',
      signedHeaders,
      sha256(body),
    ].join('\n');
    const scope = `${day}/eu-west-1/xray/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', headers['x-amz-date'], scope, sha256(canonical)].join('\n');
    let key: Buffer = Buffer.from('AWS4secret');
    for (const part of [day!, 'eu-west-1', 'xray', 'aws4_request']) key = hmac(key, part);
    expect(hmac(key, toSign).toString('hex')).toBe(signature);
  });

  it('reads headers from their source once, and reports a refused export', async () => {
    let reads = 0;
    const exporter = new OtlpJsonExporter({
      url: receiver.url,
      headers: async () => {
        reads++;
        return { authorization: 'Bearer from-secret' };
      },
    });
    const before = receiver.requests.length;
    await exportWith(exporter);
    await exportWith(exporter);
    expect(reads).toBe(1);
    expect(receiver.requests.slice(before).map((r) => r.headers.authorization)).toEqual([
      'Bearer from-secret',
      'Bearer from-secret',
    ]);
    const errors: Error[] = [];
    const refused = new OtlpJsonExporter({ url: `${receiver.url}/nowhere`, onError: (e) => errors.push(e) });
    expect((await exportWith(refused)).code).toBe(1);
    expect(errors[0]?.message).toMatch(/answered 415/);
  });

  it('reads OTEL_EXPORTER_OTLP_HEADERS-style header lists', () => {
    expect(parseOtlpHeaders('x-honeycomb-team=abc,Authorization=Basic%20dXNlcjpwYXNz, bad ,=x')).toEqual({
      'x-honeycomb-team': 'abc',
      authorization: 'Basic dXNlcjpwYXNz',
    });
    expect(parseOtlpHeaders(undefined)).toEqual({});
  });
});
