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
 * Search: the vector engine (`VectorEngine`: S3 Vectors on AWS, usearch under `crumbs dev`) answers the k nearest of
 * the workspace — and of a schema, and of a scope (the `actor:` tag's value) — with those filters applied inside
 * the engine, over everything kept: no window of newest candidates. The ledger (`EmbeddingIndex`) says what each
 * stored vector was computed from. With embeddings off (`CRUMBS_EMBEDDINGS=none`) there is no vector to compare:
 * `searchSimilar` answers by recency and says so (`mode: 'recency'`).
 */
import { EmbedSchemasEnvSchema, parseEnv } from '#shared/config.ts';
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { MEMORY_RECORD_SCHEMA } from '#shared/domain/memory-names.ts';
import { AGENT_RESPONSE_SCHEMA, USER_MESSAGE_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Embedder, EmbeddingIndex, VectorEngine } from '#shared/ports/embeddings.ts';
import { ENV } from '#shared/topology.ts';

export const DEFAULT_EMBEDDED_SCHEMAS: readonly string[] = [
  USER_MESSAGE_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  'note.v1',
  'document.v1',
  'memory.v1',
  // The memory room's records: recall searches them by meaning, scoped to their person.
  MEMORY_RECORD_SCHEMA,
  'knowledge.v1',
];

const NEVER_EMBEDDED =
  /^(agent\.def|agent\.definition|tool\.def|workflow\.def|context\.config|agent\.context|agent\.conversation|schema\.def|tool\.request|tool\.response|system\.)/;

export const MAX_NN = 50;
/** The tag whose value is a record's scope in the engine (whose memory it is). */
export const ACTOR_TAG_PREFIX = 'actor:';
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
  engine: VectorEngine;
  embedder: Embedder;
}

/** The engine partition a breadcrumb's vector goes to inside its workspace: the value of its `actor:` tag. */
export function embeddingScope(tags: readonly string[]): string | undefined {
  const tag = tags.find((t) => t.startsWith(ACTOR_TAG_PREFIX));
  return tag === undefined ? undefined : tag.slice(ACTOR_TAG_PREFIX.length);
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
  const scope = embeddingScope(record.tags);
  // A scope that changed (the actor tag edited) leaves no vector in the old partition.
  if (existing && existing.model === deps.embedder.model && existing.scope !== scope) {
    await deps.engine.remove(existing.model, record.workspace, record.id);
  }
  // The engine first, the ledger second: a crash between them re-embeds on retry (the ledger still says the old
  // checksum), never leaves a ledger entry for a vector the engine lacks.
  await deps.engine.upsert(deps.embedder.model, {
    id: record.id,
    workspace: record.workspace,
    schema_name: record.schema_name,
    ...(scope !== undefined ? { scope } : {}),
    vector: vector ?? [],
  });
  const written = await deps.index.put(record.workspace, {
    id: record.id,
    schema_name: record.schema_name,
    version: record.version,
    checksum,
    model: deps.embedder.model,
    updated_at: record.updated_at,
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
    ...(scope !== undefined ? { scope } : {}),
  });
  return written ? 'indexed' : 'stale';
}

/** Drops the embedding of a deleted breadcrumb: its vector from the engine, then its ledger entry. */
export async function removeEmbedding(
  deps: Pick<VectorSearchDeps, 'index' | 'engine' | 'embedder'>,
  workspace: string,
  id: string,
): Promise<void> {
  const existing = await deps.index.get(workspace, id);
  // The ledger names the model (the index) the vector went to; without it, the current model's index.
  await deps.engine.remove(existing?.model ?? deps.embedder.model, workspace, id);
  if (existing) await deps.index.remove(workspace, id);
}

export interface SimilarQuery {
  workspace: string;
  /** Search one schema; the whole workspace's embeddings when absent. */
  schemaName?: string;
  /** Only records of this actor (`actor:` tag); applied inside the engine. */
  scope?: string;
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
  const exclude = new Set(query.excludeIds ?? []);
  const [vector] = await deps.embedder.embed([query.text], query.signal);
  // A few more than asked, so excluded ids and hits deleted since they were indexed can be skipped.
  const k = Math.min(deps.engine.maxK, nn + exclude.size + nn);
  const scored = (
    await deps.engine.query(deps.embedder.model, {
      workspace: query.workspace,
      ...(query.schemaName !== undefined ? { schemaName: query.schemaName } : {}),
      ...(query.scope !== undefined ? { scope: query.scope } : {}),
      vector: vector ?? [],
      k,
    })
  ).filter((s) => !exclude.has(s.id));
  const views = await Promise.all(
    scored.map(async (s) => {
      try {
        return await deps.store.getContextView(query.workspace, s.id);
      } catch (error) {
        if (error instanceof NotFoundError) return undefined;
        throw error;
      }
    }),
  );
  const hits: SimilarHit[] = [];
  scored.forEach((s, i) => {
    const view = views[i];
    if (view && hits.length < nn) hits.push({ id: s.id, score: round(s.score), breadcrumb: view });
  });
  return hits;
}

function round(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}
