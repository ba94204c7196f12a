/**
 * What OpenTelemetry adds to a function's cold start, alone in a bundle (`bench/otel.bench.ts`): the modules a
 * function loads for it (the SDK, the exporter, SigV4, the GenAI spans) and the provider built from the environment,
 * as `functions/wiring/powertools.ts` builds it.
 */
import { otelTracingFromEnv } from '#shared/adapters/tracing/otel.ts';
import { inModelCallSpan } from '#shared/core/model-calls/genai-spans.ts';

export const tracing = otelTracingFromEnv('crumbs-bench', process.env);
export const modelCallSpan = inModelCallSpan;
