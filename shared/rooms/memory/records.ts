/**
 * Reading one person's memory records: by the `actor:` tag within the record schema, each checked again (its
 * `actor` field), so a record someone tagged by hand for another person is not read as theirs.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { actorTag, MEMORY_RECORD_SCHEMA, type MemoryRecord, MemoryRecordSchema } from './protocol.ts';

/** The current records of one actor and memory (at most its cap; the cap is what bounds this read). */
export async function actorRecords(
  store: Pick<BreadcrumbStore, 'list'>,
  workspace: string,
  actor: string,
  memoryId: string | undefined,
  limit: number,
): Promise<Array<{ record: Breadcrumb; memory: MemoryRecord }>> {
  const out: Array<{ record: Breadcrumb; memory: MemoryRecord }> = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({
      workspace,
      schema_name: MEMORY_RECORD_SCHEMA,
      tag: actorTag(actor),
      limit: 100,
      ...(cursor !== undefined ? { cursor } : {}),
    });
    for (const record of page.items) {
      const parsed = MemoryRecordSchema.safeParse(record.context);
      if (!parsed.success || parsed.data.actor !== actor) continue;
      if (memoryId !== undefined && parsed.data.memory_id !== memoryId) continue;
      out.push({ record, memory: parsed.data });
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined && out.length < limit);
  return out.slice(0, limit);
}
