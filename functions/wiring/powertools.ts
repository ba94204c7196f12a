/**
 * Powertools for every crumbs Lambda, set up one way: a logger, tracer and metrics per function (created once per
 * cold start), the AWS SDK clients the handler names traced (each call is its own X-Ray subsegment, with table and
 * operation), the Tracing port for per-trigger spans, and the middlewares in the order
 * Powertools documents: tracer outermost so its subsegment covers the whole invocation, then the logger's Lambda
 * context (keys reset per invocation, so one invocation's keys never leak into the next), then metrics flushed after
 * each invocation with a ColdStart metric.
 *
 * Spans go over OTLP (`CRUMBS_OTLP_ENDPOINT`) and are flushed at the end of every invocation.
 *
 * Off Lambda (the local stack, tests) the tracer disables itself and `crumbs dev` disables metrics, so the same
 * handler runs unchanged.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { MiddyfiedHandler } from '@middy/core';
import type { Context } from 'aws-lambda';
import { otelTracingFromEnv } from '#shared/adapters/tracing/otel.ts';
import { powertoolsTracing } from '#shared/adapters/tracing/powertools-tracing.ts';
import { bothTracing, type Tracing } from '#shared/ports/tracing.ts';
import { METRICS_NAMESPACE } from '#shared/topology.ts';

export interface Powertools {
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics: Metrics;
  /**
   * Per-trigger spans annotated with breadcrumb id, thread and definition: OpenTelemetry over OTLP when
   * `CRUMBS_OTLP_ENDPOINT` names where (`shared/adapters/tracing/otel.ts`), and X-Ray subsegments while the
   * Powertools tracer is on.
   */
  readonly tracing: Tracing;
}

type AwsClient = Parameters<Tracer['captureAWSv3Client']>[0];

/**
 * `awsClients`: the adapters' default clients this function uses (module singletons, so capturing them traces
 * every call made through them). Only those: naming a client loads its SDK package at cold start. Other AWS calls
 * (Bedrock, Secrets Manager) still appear as HTTPS subsegments.
 */
export function powertools(serviceName: string, awsClients: readonly AwsClient[]): Powertools {
  const logger = new Logger({ serviceName });
  const tracer = new Tracer({ serviceName });
  const metrics = new Metrics({ serviceName, namespace: METRICS_NAMESPACE });
  for (const client of awsClients) tracer.captureAWSv3Client(client);
  const otel = otelTracingFromEnv(serviceName, process.env, logger);
  const xray = powertoolsTracing(tracer);
  return { logger, tracer, metrics, tracing: otel ? bothTracing(xray, otel) : xray };
}

/** Adds the Powertools middlewares to a middy handler. */
export function instrumented<Event, Result, Err extends Error, Ctx extends Context>(
  handler: MiddyfiedHandler<Event, Result, Err, Ctx>,
  { logger, tracer, metrics, tracing }: Powertools,
): MiddyfiedHandler<Event, Result, Err, Ctx> {
  // Outermost, so the spans of the whole invocation are sent before it returns (Lambda freezes the process after).
  const flushSpans = async () => {
    await tracing.flush();
  };
  return handler
    .use({ after: flushSpans, onError: flushSpans })
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }));
}
