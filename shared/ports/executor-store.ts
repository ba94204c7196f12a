/**
 * The store as executors use it: the breadcrumb store port plus context views of many records at once (one
 * schema-defaults lookup per schema instead of one per record). Both store adapters implement it.
 */
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import type { BreadcrumbStore } from './breadcrumb-store.ts';

export interface ExecutorStore extends BreadcrumbStore {
  /** Context views (llm_hints applied: the record's own over its schema's defaults), in the order given. */
  contextViews(workspace: string, records: readonly Breadcrumb[]): Promise<ContextView[]>;
  /**
   * `contextViews` with each schema's llm_hints defaults as read at most `maxAgeMs` ago instead of read now, where
   * the store keeps them (a schema's settings change only with its `schema.def.v1`).
   */
  contextViewsWithin?(
    workspace: string,
    records: readonly Breadcrumb[],
    maxAgeMs: number,
  ): Promise<ContextView[]>;
  /**
   * A version of a live breadcrumb with its context view, in one read where the store can (the trigger of an
   * executor: record, head and schema defaults together). `schemaName` is the schema the caller expects (the
   * change event's); a record of another schema is still answered correctly, with one more read.
   */
  getVersionWithView?(
    workspace: string,
    id: string,
    version: number,
    schemaName: string,
  ): Promise<{ record: Breadcrumb; view: ContextView }>;
}
