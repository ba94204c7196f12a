/**
 * The Tracing port on the Powertools tracer: each span is an X-Ray subsegment `## <name>` with the correlation
 * keys as annotations (indexed, so traces can be filtered by them). `captureAsyncFunc` gives each span its own
 * context, so the messages of one SQS batch, processed concurrently, do not write into each other's subsegment.
 * When tracing is off (outside Lambda, or POWERTOOLS_TRACE_ENABLED=false) the work just runs. Hand-started spans
 * and trace context on items are OpenTelemetry's (`otel.ts`): X-Ray's SDK has no W3C context to pass on.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { noTracing, type SpanInfo, type SpanKeys, type Tracing } from '#shared/ports/tracing.ts';

export function powertoolsTracing(tracer: Tracer): Tracing {
  return {
    span<T>(name: string, keys: SpanKeys, work: (span: SpanInfo) => Promise<T>): Promise<T> {
      if (!tracer.isTracingEnabled()) return work({ traceId: undefined });
      return tracer.provider.captureAsyncFunc(`## ${name}`, async (subsegment) => {
        for (const [key, value] of Object.entries(keys)) subsegment?.addAnnotation(key, value);
        try {
          return await work({ traceId: undefined });
        } catch (error) {
          subsegment?.addError(error as Error);
          throw error;
        } finally {
          subsegment?.close();
        }
      }) as Promise<T>;
    },
    start: noTracing.start,
    flush: noTracing.flush,
  };
}
