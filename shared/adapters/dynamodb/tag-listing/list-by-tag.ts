/**
 * Listing by tag (and schema): the breadcrumbs the merge (`merge.ts`) hands out, newest first, checked on their
 * heads. An entry is skipped unread when it says it lists another schema or an expired breadcrumb; the rest are read
 * in one BatchGetItem per round (consistently) and kept when the head is live and still carries the tag. Rounds go
 * on until the page is full, the merge has handed out everything, or it stopped at the read bound — only then is a
 * page short while a cursor remains, and it says so (`read_bound`).
 */
import { type Breadcrumb, isExpired } from '#shared/domain/breadcrumb.ts';
import { isRoutingTag } from '#shared/domain/protocol.ts';
import type { ListQuery, Page } from '#shared/ports/breadcrumb-store.ts';
import { KIND, keys, toRecord } from '../items.ts';
import type { Item, TableReads } from '../table-reads.ts';
import { decodeTagCursor, encodeTagCursor, type SourcePosition } from './cursor.ts';
import { TagMerge } from './merge.ts';
import { inheritedSources, tagSources } from './sources.ts';

/** Entries a source is first read in when the listing is filtered by schema too (many may be skipped). */
const SCHEMA_FILTER_PAGE = 50;

export async function listByTag(
  reads: TableReads,
  query: ListQuery & { tag: string },
  options: { nowMs: number; bound: number },
): Promise<Page<Breadcrumb>> {
  const { workspace, schema_name: schema, tag, limit } = query;
  const sources = tagSources(workspace, tag);
  if (isRoutingTag(tag)) sources.push(...(await inheritedSources(reads, workspace, tag)));
  const positions =
    query.cursor === undefined ? new Map<string, SourcePosition>() : decodeTagCursor(query.cursor, tag);
  const pageSize = schema !== undefined ? Math.max(limit, SCHEMA_FILTER_PAGE) : limit;
  const merge = new TagMerge(reads, workspace, tag, sources, positions, pageSize, options.bound);

  const items: Breadcrumb[] = [];
  const seen = new Set<string>();
  while (items.length < limit) {
    const picked: string[] = [];
    while (picked.length < limit - items.length) {
      const entry = await merge.next();
      if (entry === undefined) break;
      // Duplicates: a head briefly listed twice while its tags change.
      if (seen.has(entry.ref)) continue;
      seen.add(entry.ref);
      // Entries that do not say their schema (tag items of the earliest layout) are checked on their heads.
      if (schema !== undefined && entry.schema_name !== undefined && entry.schema_name !== schema) continue;
      if (isExpired(entry, options.nowMs)) continue;
      picked.push(entry.ref);
    }
    if (picked.length === 0) break;
    const heads = await reads.batchGet(picked.map((ref) => keys.head(workspace, ref)));
    items.push(
      ...heads
        .filter((h): h is Item => h !== undefined && h.kind === KIND.breadcrumb)
        .map(toRecord)
        .filter((r) => !isExpired(r, options.nowMs))
        .filter((r) => r.tags.includes(tag) && (schema === undefined || r.schema_name === schema)),
    );
  }
  return {
    items,
    next_cursor: merge.done ? null : encodeTagCursor(tag, merge.positions()),
    ...(merge.stoppedAtBound && items.length < limit
      ? { read_bound: { entries_read: merge.entriesRead, bound: options.bound } }
      : {}),
  };
}
