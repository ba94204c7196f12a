/**
 * Context assembly: when a trigger fires, every context selector of the definition is fetched — in parallel — by
 * its `fetch.method`, filtered by the selector's tags and `context_match`, read through context views (llm_hints
 * applied), and put under `contextKey(selector)`:
 *
 * - `event_data`: the trigger itself (its context view's context);
 * - `latest`: the most recently written match, a single context (null when there is none);
 * - `recent`: the `limit` (default 5) most recently written matches, newest first, an array of contexts;
 * - `vector`: the `nn` (default 5) nearest to the trigger's text, through the optional `VectorSearch` port.
 *
 * A source that fails appears as `{ error: "…" }` under its key; it is never silently dropped, so an executor (or
 * a model) can tell "nothing there" from "could not look".
 *
 * `latest` and `recent` read listing pages until they have what they want or the listing ends, within a bound:
 * MAX_PAGES calls of the store, each reading at most its own read bound of index entries. A store page comes back
 * short only at its read bound (expired heads TTL has not removed yet, a busy tag's entries of other schemas), and
 * selectors with filters the listing cannot apply (more tags, `context_match`) drop matches here. When the bound
 * stops the search before it found what it wanted, that is said: a `latest` that found nothing answers `{ error }`
 * naming the bound instead of `null`, and every such stop is logged.
 */
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import { contextKey, type Selector } from '#shared/domain/selector.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { matchesSelector, type SelectorSubject } from '#shared/routing/compiler.ts';

export const DEFAULT_RECENT_LIMIT = 5;
export const DEFAULT_NN = 5;
/** Listing pages read at most to find a selector's matches (each bounded by the store's read bound). */
const MAX_PAGES = 4;
const FILTERED_PAGE_SIZE = 50;

export interface AssembleInput {
  workspace: string;
  trigger: Breadcrumb;
  triggerView: ContextView;
  selectors: readonly Selector[];
}

export interface AssembleDeps {
  store: ExecutorStore;
  vectorSearch?: VectorSearch | undefined;
  /** Where a search stopped at its bound is logged. @default silent */
  log?: Log;
}

/** `{ trigger, <key>: value | { error } … }` for the given context selectors. */
export async function assembleContext(
  input: AssembleInput,
  deps: AssembleDeps,
): Promise<Record<string, unknown>> {
  const entries = await Promise.all(
    input.selectors.map(async (selector) => {
      try {
        return [contextKey(selector), await fetchSource(selector, input, deps)] as const;
      } catch (error) {
        return [contextKey(selector), { error: describe(selector, error) }] as const;
      }
    }),
  );
  const context: Record<string, unknown> = { trigger: input.triggerView.context };
  for (const [key, value] of entries) context[key] = value;
  return context;
}

async function fetchSource(selector: Selector, input: AssembleInput, deps: AssembleDeps): Promise<unknown> {
  const method = selector.fetch?.method ?? 'latest';
  switch (method) {
    case 'event_data':
      return input.triggerView.context;
    case 'latest': {
      const { found, stopped } = await listMatching(selector, input.workspace, 1, deps);
      const first = found[0];
      if (!first) {
        if (stopped === undefined) return null;
        throw new Error(
          `no match among the ${stopped} newest entries read (the read bound); older ones were not read`,
        );
      }
      const [view] = await deps.store.contextViews(input.workspace, [first]);
      return view?.context ?? null;
    }
    case 'recent': {
      const { found } = await listMatching(
        selector,
        input.workspace,
        selector.fetch?.limit ?? DEFAULT_RECENT_LIMIT,
        deps,
      );
      return (await deps.store.contextViews(input.workspace, found)).map((v) => v.context);
    }
    case 'vector': {
      if (!deps.vectorSearch) throw new Error('vector search is not available to this executor');
      const nn = selector.fetch?.nn ?? selector.fetch?.limit ?? DEFAULT_NN;
      const hits = await deps.vectorSearch.search({
        workspace: input.workspace,
        ...(selector.schema_name !== undefined ? { schemaName: selector.schema_name } : {}),
        text: triggerText(input.trigger.context),
        // Ask for more than needed when tags or context_match may filter some out.
        nn: hasFilters(selector) ? nn * 3 : nn,
        excludeIds: [input.trigger.id],
      });
      // Filtered on the view (what the search answers); tags and schema are the stored ones.
      return hits
        .filter((h) => matchesSelector(selector, viewSubject(h.breadcrumb, input.workspace)))
        .slice(0, nn)
        .map((h) => h.breadcrumb.context);
    }
  }
}

/**
 * Newest-first matches of a selector, listing by schema and/or one tag and filtering the rest here; `stopped` is
 * the number of index entries read when the bound ended the search short of `wanted` with more left to read.
 */
async function listMatching(
  selector: Selector,
  workspace: string,
  wanted: number,
  deps: AssembleDeps,
): Promise<{ found: Breadcrumb[]; stopped?: number }> {
  // all_tags: every match carries the first one; any_tags with one tag: the same. Several any_tags: list by
  // schema and filter (a tag listing would miss the others).
  const tag = selector.all_tags?.[0] ?? (selector.any_tags?.length === 1 ? selector.any_tags[0] : undefined);
  if (selector.schema_name === undefined && tag === undefined) {
    throw new Error('a context selector needs schema_name or a tag to fetch by');
  }
  const filtered = hasFilters(selector, tag);
  const found: Breadcrumb[] = [];
  let cursor: string | undefined;
  let read = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await deps.store.list({
      workspace,
      limit: filtered ? Math.max(wanted, FILTERED_PAGE_SIZE) : wanted - found.length,
      ...(selector.schema_name !== undefined ? { schema_name: selector.schema_name } : {}),
      ...(tag !== undefined ? { tag } : {}),
      ...(cursor !== undefined ? { cursor } : {}),
    });
    read += result.read_bound?.entries_read ?? result.items.length;
    for (const b of result.items) if (matchesSelector(selector, asDetail(b))) found.push(b);
    if (found.length >= wanted || result.next_cursor === null) return { found: found.slice(0, wanted) };
    cursor = result.next_cursor;
  }
  (deps.log ?? silentLog).warn('context fetch stopped at its read bound', {
    workspace,
    schema_name: selector.schema_name,
    tag,
    wanted,
    found: found.length,
    entries_read: read,
  });
  return { found, stopped: read };
}

/** True when matching needs more than the listing key (tags beyond the one listed by, or context_match). */
function hasFilters(selector: Selector, listedTag?: string): boolean {
  const tags = [...(selector.all_tags ?? []), ...(selector.any_tags ?? [])];
  return (selector.context_match?.length ?? 0) > 0 || tags.some((t) => t !== listedTag);
}

/** A stored breadcrumb in the shape selectors match against (the change event's detail). */
export function asDetail(b: Breadcrumb): SelectorSubject {
  return {
    workspace: b.workspace,
    id: b.id,
    version: b.version,
    schema_name: b.schema_name,
    title: b.title,
    tags: b.tags,
    created_by: b.created_by,
    updated_by: b.updated_by,
    context: b.context,
  };
}

function viewSubject(view: ContextView, workspace: string): SelectorSubject {
  const context = view.context;
  return {
    workspace,
    id: view.id,
    version: view.version,
    schema_name: view.schema_name,
    title: view.title,
    tags: view.tags,
    context:
      context !== null && typeof context === 'object' && !Array.isArray(context)
        ? (context as Record<string, unknown>)
        : {},
  };
}

/** The text a vector search is near to: the trigger's message-like field, else its whole context. */
export function triggerText(context: Record<string, unknown>): string {
  for (const field of ['content', 'message', 'text', 'query', 'prompt', 'question']) {
    const value = context[field];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return JSON.stringify(context);
}

function describe(selector: Selector, error: unknown): string {
  const what = `${selector.fetch?.method ?? 'latest'} ${selector.schema_name ?? 'breadcrumbs'}`;
  return `could not fetch ${what}: ${error instanceof Error ? error.message : String(error)}`;
}
