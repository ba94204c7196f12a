/**
 * The OpenTelemetry context crumbs carries, apart from the SDK (`otel.ts`) so the modules that only read it — the
 * store stamping `traceparent` on an item, the GenAI spans of model calls — load the API alone.
 *
 * The tracer rides in the context: the local stack runs every function in one process, each with its own tracer
 * provider (its own `service.name`), so "the" global tracer would name the wrong function. Without a span of
 * crumbs' in the context, nothing is recorded and no `traceparent` is written.
 */
import {
  type Context,
  context,
  createContextKey,
  ROOT_CONTEXT,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const TRACER = createContextKey('crumbs.tracer');
const propagator = new W3CTraceContextPropagator();

/** `ctx` carrying `tracer` for the spans started inside it. */
export function withTracer(ctx: Context, tracer: Tracer): Context {
  return ctx.setValue(TRACER, tracer);
}

/** The tracer of the span the caller runs in, or undefined outside one (nothing to record). */
export function activeTracer(): Tracer | undefined {
  return context.active().getValue(TRACER) as Tracer | undefined;
}

/** The W3C `traceparent` of the span active in `ctx`, or undefined when none is recorded. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const span = trace.getSpanContext(ctx);
  if (span === undefined || !trace.isSpanContextValid(span)) return undefined;
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, {
    set: (c, key, value) => {
      c[key] = value;
    },
  });
  return carrier.traceparent;
}

/** The context continuing `traceparent` (validated by the W3C propagator); ROOT_CONTEXT when absent or malformed. */
export function contextOf(traceparent: string | undefined): Context {
  if (traceparent === undefined) return ROOT_CONTEXT;
  return propagator.extract(
    ROOT_CONTEXT,
    { traceparent },
    { get: (c, key) => c[key as 'traceparent'], keys: (c) => Object.keys(c) },
  );
}
