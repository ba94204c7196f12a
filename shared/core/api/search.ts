/**
 * `GET /v1/workspaces/{ws}/breadcrumbs/search?q=&nn=&schema_name=`: the breadcrumbs nearest in meaning to `q`,
 * best first, with cosine scores. Only breadcrumbs of schemas that opt in to embeddings are found (see
 * `shared/core/stream/vector-search.ts`).
 *
 * Mounted by `createApi` before the `/breadcrumbs/{id}` route (otherwise "search" would be read as an id).
 * Workspace access is checked by `createApi` like every other route.
 *
 * Answer: `{ items: [{ id, score, schema_name, title, context }] }` — `context` is the context view.
 */

import { MAX_NN, searchSimilar, type VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import { parseOrThrow, SchemaNameSchema, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError } from '#shared/domain/errors.ts';
import { type HttpRequest, type HttpResult, json } from './http.ts';

export const SEARCH_ROUTE = /^\/v1\/workspaces\/(?<ws>[^/]+)\/breadcrumbs\/search$/;
export const DEFAULT_NN = 5;
const MAX_QUERY_CHARS = 2000;

export interface SearchItem {
  id: string;
  score: number;
  schema_name: string;
  title: string;
  context: unknown;
}

export function createSearchHandler(
  deps: VectorSearchDeps,
): (request: HttpRequest, params: Record<string, string>) => Promise<HttpResult> {
  return async (request, params) => {
    const workspace = parseOrThrow(WorkspaceSchema, params.ws, 'workspace');
    const q = request.query.q?.trim() ?? '';
    if (q === '') {
      throw new BadRequestError('q is required', [{ path: 'q', message: 'expected the text to search for' }]);
    }
    if (q.length > MAX_QUERY_CHARS) {
      throw new BadRequestError('q is too long', [
        { path: 'q', message: `expected at most ${MAX_QUERY_CHARS} characters` },
      ]);
    }
    const nn = parseNn(request.query.nn);
    const schemaName =
      request.query.schema_name !== undefined && request.query.schema_name !== ''
        ? parseOrThrow(SchemaNameSchema, request.query.schema_name, 'schema_name')
        : undefined;
    const hits = await searchSimilar(deps, {
      workspace,
      text: q,
      nn,
      ...(schemaName !== undefined ? { schemaName } : {}),
    });
    const items: SearchItem[] = hits.map((h) => ({
      id: h.id,
      score: h.score,
      schema_name: h.breadcrumb.schema_name,
      title: h.breadcrumb.title,
      context: h.breadcrumb.context,
    }));
    return json(200, { items });
  };
}

function parseNn(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_NN;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_NN) {
    throw new BadRequestError('nn is not valid', [
      { path: 'nn', message: `expected an integer from 1 to ${MAX_NN}, got ${raw}` },
    ]);
  }
  return n;
}
