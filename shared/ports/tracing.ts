/**
 * The tracing port: one traced unit of work per trigger, carrying the keys a trace is searched by. On AWS it is an
 * X-Ray subsegment with these keys as annotations (`shared/adapters/tracing/powertools-tracing.ts`), so "every
 * trace of thread X" or "of breadcrumb Y" is a filter expression; in tests and the local stack it does nothing.
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

export interface Tracing {
  /** Runs `work` as one traced unit named `name`, annotated with `keys`; its errors are recorded and rethrown. */
  span<T>(name: string, keys: CorrelationKeys, work: () => Promise<T>): Promise<T>;
}

export const noTracing: Tracing = { span: (_name, _keys, work) => work() };
