/**
 * Nearest-neighbour search over embedded breadcrumbs, scoped to one workspace: what executors use for `vector`
 * context sources and the `context.build` tool. `shared/core/stream/vector-search.ts` (`searchSimilar`) implements it
 * over the embeddings ports; the executor handlers wire `{ search: (q) => searchSimilar(deps, q) }`.
 */
import type { ContextView } from '#shared/domain/breadcrumb.ts';

export interface VectorHit {
  id: string;
  score: number;
  /** The hit's context view (llm_hints applied). */
  breadcrumb: ContextView;
}

export interface VectorQuery {
  workspace: string;
  schemaName?: string;
  /** Only breadcrumbs of this actor (their `actor:` tag), applied inside the vector engine. */
  scope?: string;
  text: string;
  nn: number;
  excludeIds?: readonly string[];
}

export interface VectorSearch {
  search(query: VectorQuery): Promise<VectorHit[]>;
}
