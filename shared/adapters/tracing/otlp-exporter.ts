/**
 * A span exporter for OTLP/HTTP with JSON bodies, serialized by OpenTelemetry's own `JsonTraceSerializer`, that can
 * sign each request with SigV4 — which X-Ray's OTLP endpoint (`https://xray.<region>.amazonaws.com/v1/traces`, JSON
 * or protobuf, SigV4 as service `xray`) requires. Written here rather than using `@opentelemetry/exporter-trace-otlp-http`
 * because a SigV4 signature covers the body, and that exporter's headers (static or a factory) never see it;
 * `test/unit/adapters/tracing/otlp-exporter.test.ts` keeps it sending what that exporter sends.
 */
import { createHash, createHmac } from 'node:crypto';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, Provider } from '@smithy/types';

export interface OtlpExporterOptions {
  /** The traces URL (`.../v1/traces`). */
  readonly url: string;
  /** Headers for every request (an API key): given, or read once when first needed (a secret). */
  readonly headers?: Readonly<Record<string, string>> | (() => Promise<Record<string, string>>) | undefined;
  /** Sign each request with SigV4 for this service and region (X-Ray's endpoint: `xray`). */
  readonly sigv4?:
    | { service: string; region: string; credentials: Provider<AwsCredentialIdentity> }
    | undefined;
  /** Give up on one export after this long. @default 5000 */
  readonly timeoutMs?: number | undefined;
  readonly fetch?: typeof fetch | undefined;
  /** Told of an export that failed (spans are dropped, never retried into the next invocation). */
  readonly onError?: ((error: Error) => void) | undefined;
}

/** SigV4's hash, on node:crypto (the SDK's `@smithy/hash-node` is not a top-level package here). */
export class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash =
      secret === undefined
        ? createHash('sha256')
        : createHmac('sha256', typeof secret === 'string' ? secret : Buffer.from(secret as ArrayBuffer));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(typeof data === 'string' ? data : Buffer.from(data as ArrayBuffer));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

export class OtlpJsonExporter implements SpanExporter {
  private readonly url: URL;
  private readonly signer: SignatureV4 | undefined;
  private headers: Promise<Record<string, string>> | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: OtlpExporterOptions) {
    this.url = new URL(options.url);
    this.signer = options.sigv4
      ? new SignatureV4({
          service: options.sigv4.service,
          region: options.sigv4.region,
          credentials: options.sigv4.credentials,
          sha256: Sha256,
        })
      : undefined;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const sent = this.send(spans).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        this.options.onError?.(failure);
        done({ code: ExportResultCode.FAILED, error: failure });
      },
    );
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  async forceFlush(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
  }

  private async send(spans: ReadableSpan[]): Promise<void> {
    const body = JsonTraceSerializer.serializeRequest(spans);
    if (body === undefined) return;
    const given = this.options.headers;
    this.headers ??= typeof given === 'function' ? given() : Promise.resolve({ ...given });
    let read: Record<string, string>;
    try {
      read = await this.headers;
    } catch (error) {
      this.headers = undefined; // read again at the next export, not never
      throw error;
    }
    let headers: Record<string, string> = {
      ...read,
      'content-type': 'application/json',
      host: this.url.host,
    };
    if (this.signer) {
      const signed = await this.signer.sign({
        method: 'POST',
        protocol: this.url.protocol,
        hostname: this.url.hostname,
        ...(this.url.port ? { port: Number(this.url.port) } : {}),
        path: this.url.pathname,
        query: Object.fromEntries(this.url.searchParams),
        headers,
        body,
      });
      headers = signed.headers;
    }
    const { host: _host, ...sent } = headers;
    const response = await (this.options.fetch ?? fetch)(this.url, {
      method: 'POST',
      headers: sent,
      body,
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
    });
    if (!response.ok) {
      const text = (await response.text()).slice(0, 300);
      throw new Error(`OTLP export to ${this.url.origin} answered ${response.status}: ${text}`);
    }
    await response.arrayBuffer().catch(() => undefined);
  }
}

/** Reads `name=value,name=value` (OTEL_EXPORTER_OTLP_HEADERS' form; values URL-encoded). */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    headers[decodeURIComponent(pair.slice(0, at).trim()).toLowerCase()] = decodeURIComponent(
      pair.slice(at + 1).trim(),
    );
  }
  return headers;
}
