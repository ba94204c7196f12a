/**
 * Recall: what an agent that declares `memory: { use, top_k, min_score }` is told about the person it is talking to,
 * as one section of its prompt (the prompt budget fits it like every context source, so it stays within the token
 * budget). Only the actor of the turn is searched — the vector engine's scope is the actor, applied inside the
 * engine — and each hit is checked again (its `actor` and `memory_id`), so another person's record is never recalled,
 * even in the same workspace. The actor is the principal that wrote the turn (`user:<sub>`); a turn no person wrote
 * recalls nothing.
 *
 * Ranking: vector similarity to the turn's text (records under `min_score` left out), ties and the rest by recency.
 * With embeddings off there is no similarity: the actor's newest records are recalled, and the section says so.
 */
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { MEMORY_RECORD_SCHEMA, MemoryRecordSchema, type MemoryUse } from './protocol.ts';

export { actorOf } from './protocol.ts';

import { actorRecords } from './records.ts';

/** The prompt section's key: what the model reads as the heading of remembered things. */
export const MEMORY_SECTION = 'memory (remembered about this person from earlier conversations)';

export interface RecalledRecord {
  id: string;
  memory_id: string;
  key: string;
  text: string;
  score?: number;
}

export interface Recall {
  mode: 'vector' | 'recency';
  records: RecalledRecord[];
}

export async function recall(
  deps: {
    store: Pick<BreadcrumbStore, 'list'>;
    vectorSearch?: VectorSearch | undefined;
    embeddingsOff?: boolean;
  },
  query: { workspace: string; actor: string; text: string; use: MemoryUse },
): Promise<Recall> {
  const uses = new Set(query.use.use);
  if (deps.vectorSearch !== undefined && deps.embeddingsOff !== true) {
    const hits = await deps.vectorSearch.search({
      workspace: query.workspace,
      schemaName: MEMORY_RECORD_SCHEMA,
      scope: query.actor,
      text: query.text,
      nn: Math.min(50, query.use.top_k * 3),
    });
    const records: RecalledRecord[] = [];
    for (const hit of hits) {
      const parsed = MemoryRecordSchema.safeParse(hit.breadcrumb.context);
      if (!parsed.success || parsed.data.actor !== query.actor || !uses.has(parsed.data.memory_id)) continue;
      if (hit.score < query.use.min_score) continue;
      records.push({
        id: hit.id,
        memory_id: parsed.data.memory_id,
        key: parsed.data.key,
        text: parsed.data.text,
        score: hit.score,
      });
      if (records.length >= query.use.top_k) break;
    }
    return { mode: 'vector', records };
  }
  const newest = await actorRecords(deps.store, query.workspace, query.actor, undefined, 100);
  return {
    mode: 'recency',
    records: newest
      .filter((r) => uses.has(r.memory.memory_id))
      .slice(0, query.use.top_k)
      .map((r) => ({
        id: r.record.id,
        memory_id: r.memory.memory_id,
        key: r.memory.key,
        text: r.memory.text,
      })),
  };
}

/** The section's text: marked as memory, one line per record, and how it was chosen. */
export function recallSection(found: Recall): string | undefined {
  if (found.records.length === 0) return undefined;
  const how =
    found.mode === 'vector'
      ? 'chosen by relevance to this message'
      : 'embeddings are off: the most recent, not the most relevant';
  return [
    `Remembered from earlier conversations with this person (${how}; it may be out of date — what they say now wins):`,
    ...found.records.map((r) => `- ${r.text}`),
  ].join('\n');
}

/** Recall as prompt assembly takes it (`AgentKindDeps.recall`): the section's key and text, or undefined. */
export function recallForPrompts(deps: Parameters<typeof recall>[0]) {
  return async (query: Parameters<typeof recall>[1]): Promise<{ key: string; text: string } | undefined> => {
    const text = recallSection(await recall(deps, query));
    return text === undefined ? undefined : { key: MEMORY_SECTION, text };
  };
}
