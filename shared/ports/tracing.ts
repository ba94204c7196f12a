/**
 * The tracing port: one traced unit of work per trigger, carrying the keys a trace is searched by. On AWS it is an
 * OpenTelemetry span sent over OTLP (`shared/adapters/tracing/otel.ts`: X-Ray's OTLP endpoint by default, or the
 * operator's) and, while the Powertools tracer is on, an X-Ray subsegment with these keys as annotations
 * (`powertools-tracing.ts`); in tests and the local stack without `--otlp-endpoint` it does nothing.
 *
 * The path of a breadcrumb is one trace: the write's span context rides on the item (`traceparent`, beside the
 * record, never in its context), the publisher's span for it is its child and travels on in the change event
 * (`ChangeDetail.traceparent`), and the executor's span is the publisher's child — so a thread's causation chain is
 * a chain of parents.
 */

/**
 * What correlates the logs and traces of one trigger across functions. A type alias, not an interface, so it can
 * go into a log call's `Record<string, unknown>` of keys as it is.
 */
export type CorrelationKeys = {
  workspace: string;
  /** The trigger breadcrumb. */
  breadcrumbId: string;
  triggerVersion: number;
  /** The thread the trigger belongs to (its causation's, or its own id when it starts one). */
  thread: string;
  /** The definition the trigger was routed to. */
  definitionId: string;
};

export type SpanKeys = Readonly<Record<string, string | number>>;

export type SpanAttributes = Readonly<Record<string, string | number | boolean | readonly string[]>>;

export interface SpanOptions {
  /** The W3C `traceparent` of the span this one continues (from an item or an event); absent: a new trace. */
  readonly parent?: string | undefined;
  readonly attributes?: SpanAttributes | undefined;
  /** What the span is to its trace (OpenTelemetry's span kind). @default 'internal' */
  readonly kind?: 'internal' | 'server' | 'client' | 'producer' | 'consumer' | undefined;
}

/** What a running span tells the work inside it. */
export interface SpanInfo {
  /** The trace id (32 hex digits) for the logs, when spans are recorded. */
  readonly traceId: string | undefined;
}

/** A span started by hand, for work that is not one async function (a record of a batch). */
export interface OpenSpan extends SpanInfo {
  /** This span's W3C `traceparent`, for the next hop to continue; undefined when spans are not recorded. */
  readonly traceparent: string | undefined;
  setAttributes(attributes: SpanAttributes): void;
  /** Ends the span; an error marks it failed. */
  end(error?: unknown): void;
}

export interface Tracing {
  /**
   * Runs `work` as one traced unit named `name`, annotated with `keys` (a trigger's `CorrelationKeys`, or a
   * request's); its errors are recorded and rethrown.
   */
  span<T>(
    name: string,
    keys: SpanKeys,
    work: (span: SpanInfo) => Promise<T>,
    options?: SpanOptions,
  ): Promise<T>;
  /** Starts a span the caller ends (`OpenSpan.end`), outside any other: its parent is `options.parent` only. */
  start(name: string, options?: SpanOptions): OpenSpan;
  /** Sends what is buffered; a function calls it before its invocation returns (Lambda freezes it after). */
  flush(): Promise<void>;
}

const NO_SPAN: OpenSpan = {
  traceId: undefined,
  traceparent: undefined,
  setAttributes: () => undefined,
  end: () => undefined,
};

export const noTracing: Tracing = {
  span: (_name, _keys, work) => work({ traceId: undefined }),
  start: () => NO_SPAN,
  flush: async () => undefined,
};

/** Both tracers at once: `outer`'s unit wraps `inner`'s; hand-started spans and the trace id are `inner`'s. */
export function bothTracing(outer: Tracing, inner: Tracing): Tracing {
  return {
    span: (name, keys, work, options) =>
      outer.span(name, keys, () => inner.span(name, keys, work, options), options),
    start: (name, options) => inner.start(name, options),
    flush: async () => {
      await Promise.all([outer.flush(), inner.flush()]);
    },
  };
}
