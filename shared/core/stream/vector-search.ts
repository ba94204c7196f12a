/**
 * Embeddings for `vector` context sources and the search route.
 *
 * Which breadcrumbs get an embedding: schemas that opt in — `DEFAULT_EMBEDDED_SCHEMAS` (conversation-like
 * records), or the list in `CRUMBS_EMBED_SCHEMAS` (comma-separated; `*` for every schema except definitions and
 * executor bookkeeping). Definitions, contexts and conversations are never embedded: they are not what a
 * "what did we say about X" search looks for.
 *
 * When: the indexer (`shared/core/stream/indexer.ts`, its own queue fed by a static rule on the bus) calls
 * `indexEmbedding(record)` for every change of an embedded schema and `removeEmbedding` when the breadcrumb is
 * gone — never the publisher, so a failing model cannot hold up change events. It is idempotent and cheap when
 * nothing changed: the stored checksum is compared first, and an older version never overwrites a newer one.
 *
 * Search: brute-force cosine over the newest candidates of the (workspace, schema) — see the index adapter for the
 * storage layout and the bound.
 */
import { EmbedSchemasEnvSchema, parseEnv } from '#shared/config.ts';
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { AGENT_RESPONSE_SCHEMA, USER_MESSAGE_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { cosine, type Embedder, type EmbeddingIndex } from '#shared/ports/embeddings.ts';
import { ENV } from '#shared/topology.ts';

export const DEFAULT_EMBEDDED_SCHEMAS: readonly string[] = [
  USER_MESSAGE_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  'note.v1',
  'document.v1',
  'memory.v1',
  'knowledge.v1',
];

const NEVER_EMBEDDED =
  /^(agent\.def|agent\.definition|tool\.def|workflow\.def|context\.config|agent\.context|agent\.conversation|schema\.def|tool\.request|tool\.response|system\.)/;

/** How many stored embeddings one search compares at most. */
export const MAX_CANDIDATES = 2000;
export const MAX_NN = 50;
const MAX_TEXT_CHARS = 4000;
const TEXT_FIELDS = [
  'message',
  'content',
  'text',
  'response_text',
  'question',
  'answer',
  'summary',
  'description',
  'body',
];

export interface VectorSearchDeps {
  store: BreadcrumbStore;
  index: EmbeddingIndex;
  embedder: Embedder;
}

export interface EmbeddingPolicy {
  embeds(schemaName: string): boolean;
}

/** The schemas that get embeddings: `CRUMBS_EMBED_SCHEMAS` (comma-separated, `*` for all), else the defaults. */
export function embeddedSchemas(env: NodeJS.ProcessEnv = process.env): readonly string[] | '*' {
  const list = parseEnv(EmbedSchemasEnvSchema, env)[ENV.embedSchemas] ?? DEFAULT_EMBEDDED_SCHEMAS;
  return list.includes('*') ? '*' : list.filter((s) => !NEVER_EMBEDDED.test(s));
}

export function embeddingPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): EmbeddingPolicy {
  // Embeddings off: nothing is embedded, so the indexer makes no embedding call.
  if (env[ENV.embeddings]?.trim() === 'none') return { embeds: () => false };
  const list = embeddedSchemas(env);
  return { embeds: (schema) => !NEVER_EMBEDDED.test(schema) && (list === '*' || list.includes(schema)) };
}

/** The text that represents a breadcrumb: its title and its text-like context fields (else all string leaves). */
export function embeddingText(record: { title?: string; context: unknown }): string {
  const parts: string[] = [];
  if (record.title) parts.push(record.title);
  const context = record.context;
  if (context !== null && typeof context === 'object' && !Array.isArray(context)) {
    const c = context as Record<string, unknown>;
    for (const field of TEXT_FIELDS) if (typeof c[field] === 'string') parts.push(c[field]);
  }
  if (parts.length <= (record.title ? 1 : 0)) collectStrings(context, parts, 0);
  return parts.join('\n').slice(0, MAX_TEXT_CHARS);
}

function collectStrings(value: unknown, out: string[], depth: number): void {
  if (depth > 6 || out.join('').length > MAX_TEXT_CHARS) return;
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, out, depth + 1);
  else if (value !== null && typeof value === 'object')
    for (const v of Object.values(value)) collectStrings(v, out, depth + 1);
}

export type IndexOutcome = 'indexed' | 'unchanged' | 'not-embedded' | 'stale';

/**
 * Computes and stores the embedding of one breadcrumb if its schema opts in. The indexer calls it for every created
 * or updated breadcrumb, after the change event was published.
 */
export async function indexEmbedding(
  deps: VectorSearchDeps,
  record: Breadcrumb,
  policy: EmbeddingPolicy = embeddingPolicyFromEnv(),
  signal?: AbortSignal,
): Promise<IndexOutcome> {
  if (!policy.embeds(record.schema_name)) return 'not-embedded';
  const existing = await deps.index.get(record.workspace, record.id);
  if (existing && existing.version > record.version) return 'stale';
  const checksum = `${record.checksum}:${record.title}`;
  if (existing && existing.checksum === checksum && existing.model === deps.embedder.model) {
    return 'unchanged';
  }
  const [vector] = await deps.embedder.embed([embeddingText(record)], signal);
  const written = await deps.index.put(record.workspace, {
    id: record.id,
    schema_name: record.schema_name,
    version: record.version,
    checksum,
    model: deps.embedder.model,
    vector: vector ?? [],
    updated_at: record.updated_at,
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
  });
  return written ? 'indexed' : 'stale';
}

/** Drops the embedding of a deleted breadcrumb. */
export function removeEmbedding(
  deps: Pick<VectorSearchDeps, 'index'>,
  workspace: string,
  id: string,
): Promise<void> {
  return deps.index.remove(workspace, id);
}

export interface SimilarQuery {
  workspace: string;
  /** Search one schema; the whole workspace's embeddings when absent. */
  schemaName?: string;
  text: string;
  nn: number;
  /** Ids never returned (the trigger itself, for a context builder). */
  excludeIds?: readonly string[];
  signal?: AbortSignal;
}

export interface SimilarHit {
  id: string;
  score: number;
  breadcrumb: ContextView;
}

/** The `nn` breadcrumbs most similar to `text`, best first, as context views. Deleted breadcrumbs are skipped. */
export async function searchSimilar(deps: VectorSearchDeps, query: SimilarQuery): Promise<SimilarHit[]> {
  const nn = Math.max(1, Math.min(MAX_NN, Math.floor(query.nn)));
  const [[vector], candidates] = await Promise.all([
    deps.embedder.embed([query.text], query.signal),
    deps.index.candidates(query.workspace, query.schemaName, MAX_CANDIDATES),
  ]);
  const exclude = new Set(query.excludeIds ?? []);
  const scored = candidates
    .filter((c) => c.model === deps.embedder.model && !exclude.has(c.id))
    .map((c) => ({ id: c.id, score: cosine(vector ?? [], c.vector) }))
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  const hits: SimilarHit[] = [];
  // Read a few more than asked so hits deleted since they were indexed can be skipped.
  for (let start = 0; start < scored.length && hits.length < nn; start += nn) {
    const batch = scored.slice(start, start + nn);
    const views = await Promise.all(
      batch.map(async (s) => {
        try {
          return await deps.store.getContextView(query.workspace, s.id);
        } catch (error) {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        }
      }),
    );
    batch.forEach((s, i) => {
      const view = views[i];
      if (view && hits.length < nn) hits.push({ id: s.id, score: round(s.score), breadcrumb: view });
    });
  }
  return hits;
}

function round(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}
