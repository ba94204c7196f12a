/**
 * The Tracing port on the Powertools tracer: each span is an X-Ray subsegment `## <name>` with the correlation
 * keys as annotations (indexed, so traces can be filtered by them). `captureAsyncFunc` gives each span its own
 * context, so the messages of one SQS batch, processed concurrently, do not write into each other's subsegment.
 * When tracing is off (outside Lambda, or POWERTOOLS_TRACE_ENABLED=false) the work just runs.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { CorrelationKeys, Tracing } from '#shared/ports/tracing.ts';

export function powertoolsTracing(tracer: Tracer): Tracing {
  return {
    span<T>(name: string, keys: CorrelationKeys, work: () => Promise<T>): Promise<T> {
      if (!tracer.isTracingEnabled()) return work();
      return tracer.provider.captureAsyncFunc(`## ${name}`, async (subsegment) => {
        for (const [key, value] of Object.entries(keys)) subsegment?.addAnnotation(key, value);
        try {
          return await work();
        } catch (error) {
          subsegment?.addError(error as Error);
          throw error;
        } finally {
          subsegment?.close();
        }
      }) as Promise<T>;
    },
  };
}
