/**
 * The Tracing port on OpenTelemetry: one tracer provider per function (its `service.name`), spans batched and sent
 * over OTLP/HTTP (JSON, `otlp-exporter.ts`) when the function's invocation ends (`flush`: Lambda freezes the
 * process after it returns, so nothing waits in a buffer across invocations).
 *
 * Where the spans go (`ENV.otlpEndpoint`): a URL (Langfuse, Honeycomb, Grafana, a collector...), with headers from
 * `ENV.otlpHeaders` (local) or a Secrets Manager secret (`ENV.otlpHeadersSecret`, AWS: read once per cold start,
 * at the first export); `xray`: X-Ray's OTLP endpoint of the function's region, SigV4-signed with the function's
 * role (`xray:PutSpans`); absent or `none`: no provider at all, every span a no-op.
 *
 * Spans started here carry their tracer in the context (`otel-context.ts`), so the GenAI spans of model calls and
 * the `traceparent` the store writes find it without being handed it.
 */
import {
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Log } from '#shared/ports/log.ts';
import type { OpenSpan, SpanAttributes, SpanOptions, Tracing } from '#shared/ports/tracing.ts';
import { ENV } from '#shared/topology.ts';
import { contextOf, traceparentOf, withTracer } from './otel-context.ts';
import { type OtlpExporterOptions, OtlpJsonExporter, parseOtlpHeaders, Sha256 } from './otlp-exporter.ts';

/** The instrumentation scope of crumbs' spans. */
export const TRACER_NAME = 'crumbs';

const KINDS = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
} as const;

let contextManagerSet = false;

/** AsyncLocalStorage context propagation, once per process (the local stack's functions share it). */
function ensureContextManager(): void {
  if (contextManagerSet) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  contextManagerSet = true;
}

export interface OtelTracingOptions {
  readonly serviceName: string;
  readonly exporter: OtlpExporterOptions;
  readonly log?: Log | undefined;
}

export function otelTracing(options: OtelTracingOptions): Tracing {
  const exporter = new OtlpJsonExporter({
    ...options.exporter,
    onError: (error) => options.log?.warn('spans were not exported', { error: error.message }),
  });
  // Sent at flush (end of invocation); the delay only matters to a long invocation, which sends as it goes.
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName, 'service.namespace': 'crumbs' }),
    // A recorded prompt is written by whoever wrote the breadcrumbs: each value is cut at 16 KB, so a span stays
    // well under X-Ray's 200 KB per span however long the conversation.
    spanLimits: { attributeValueLengthLimit: 16 * 1024, attributeCountLimit: 64 },
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000, maxQueueSize: 4096 })],
  });
  const tracer = provider.getTracer(TRACER_NAME);
  return otelTracingOn(tracer, () => provider.forceFlush());
}

/** The port on a tracer (tests hand one over an in-memory exporter). */
export function otelTracingOn(tracer: Tracer, flush: () => Promise<void> = async () => undefined): Tracing {
  ensureContextManager();
  const started = (name: string, options: SpanOptions | undefined, parent: Context) =>
    tracer.startSpan(
      name,
      {
        kind: KINDS[options?.kind ?? 'internal'],
        ...(options?.attributes ? { attributes: plain(options.attributes) } : {}),
      },
      parent,
    );
  return {
    async span(name, keys, work, options) {
      const parent = options?.parent !== undefined ? contextOf(options.parent) : context.active();
      const span = started(name, options, parent);
      span.setAttributes(plain(correlationAttributes(keys)));
      const inside = withTracer(trace.setSpan(parent, span), tracer);
      try {
        return await context.with(inside, () => work({ traceId: span.spanContext().traceId }));
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
    start(name, options): OpenSpan {
      const parent = contextOf(options?.parent);
      const span = started(name, options, parent);
      const own = trace.setSpan(parent, span);
      return {
        traceId: span.spanContext().traceId,
        traceparent: traceparentOf(own),
        setAttributes: (attributes) => span.setAttributes(plain(attributes)),
        end(error) {
          if (error !== undefined) failed(span, error);
          span.end();
        },
      };
    },
    flush,
  };
}

function failed(span: Span, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** Correlation keys as span attributes, under `crumbs.` (searchable in any backend). */
function correlationAttributes(keys: Readonly<Record<string, string | number>>): SpanAttributes {
  const attributes: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(keys)) attributes[`crumbs.${snake(key)}`] = value;
  return attributes;
}

function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function plain(attributes: SpanAttributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const [k, v] of Object.entries(attributes)) out[k] = Array.isArray(v) ? [...v] : (v as string);
  return out;
}

/**
 * The function's OpenTelemetry tracing as its environment says (`ENV.otlpEndpoint`), or undefined when spans are
 * off. `env` is `process.env` on Lambda and in the local stack.
 */
export function otelTracingFromEnv(
  serviceName: string,
  env: Readonly<Record<string, string | undefined>>,
  log?: Log,
): Tracing | undefined {
  const setting = env[ENV.otlpEndpoint]?.trim();
  if (setting === undefined || setting === '' || setting === 'none') return undefined;
  if (setting === 'xray') {
    const region = env.AWS_REGION;
    if (region === undefined) throw new Error(`${ENV.otlpEndpoint}=xray needs AWS_REGION`);
    return otelTracing({
      serviceName,
      log,
      exporter: {
        url: `https://xray.${region}.amazonaws.com/v1/traces`,
        sigv4: { service: 'xray', region, credentials: lambdaCredentials(env) },
      },
    });
  }
  let url: URL;
  try {
    url = new URL(setting);
  } catch {
    throw new Error(
      `${ENV.otlpEndpoint} must be an http(s) URL, "xray" or "none"; got ${JSON.stringify(setting)}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${ENV.otlpEndpoint} must be an http(s) URL; got ${url.protocol}`);
  }
  const secret = env[ENV.otlpHeadersSecret];
  return otelTracing({
    serviceName,
    log,
    exporter: {
      url: url.toString(),
      headers:
        secret !== undefined && secret !== ''
          ? () => headersFromSecret(secret, env)
          : parseOtlpHeaders(env[ENV.otlpHeaders]),
    },
  });
}

/** The Lambda role's credentials, from the environment the runtime sets (no SDK credential chain loaded). */
function lambdaCredentials(env: Readonly<Record<string, string | undefined>>) {
  return async () => {
    const accessKeyId = env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (accessKeyId === undefined || secretAccessKey === undefined) {
      throw new Error('no AWS credentials in the environment to sign spans for X-Ray');
    }
    return {
      accessKeyId,
      secretAccessKey,
      ...(env.AWS_SESSION_TOKEN !== undefined ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
  };
}

/**
 * The headers a Secrets Manager secret holds (a JSON object of strings), read when spans are first sent: one
 * SigV4-signed `GetSecretValue` (Secrets Manager's JSON protocol) with the signer the exporter already loads,
 * rather than the SDK's client, which would add its modules to every function's cold start for one call.
 * `test/unit/adapters/tracing/otel-tracing.test.ts` checks the request against the SDK client's.
 */
export async function headersFromSecret(
  secretId: string,
  env: Readonly<Record<string, string | undefined>>,
  fetchFn: typeof fetch = fetch,
): Promise<Record<string, string>> {
  const region = env.AWS_REGION;
  if (region === undefined) throw new Error(`${ENV.otlpHeadersSecret} needs AWS_REGION`);
  const url = new URL(
    env.AWS_ENDPOINT_URL_SECRETS_MANAGER ?? `https://secretsmanager.${region}.amazonaws.com/`,
  );
  const signer = new SignatureV4({
    service: 'secretsmanager',
    region,
    credentials: lambdaCredentials(env),
    sha256: Sha256,
  });
  const body = JSON.stringify({ SecretId: secretId });
  const signed = await signer.sign({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    headers: {
      host: url.host,
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': 'secretsmanager.GetSecretValue',
    },
    body,
  });
  const { host: _host, ...headers } = signed.headers;
  const response = await fetchFn(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`reading secret ${secretId} answered ${response.status}: ${text.slice(0, 200)}`);
  const { SecretString } = JSON.parse(text) as { SecretString?: string };
  const parsed: unknown = JSON.parse(SecretString ?? '{}');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`secret ${secretId} must hold a JSON object of OTLP headers`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') out[k.toLowerCase()] = v;
  return out;
}
