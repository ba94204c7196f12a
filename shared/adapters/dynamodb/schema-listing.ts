/**
 * Listing by schema alone: gsi1 under `<ws>#s#<schema>` holds the heads themselves (projection ALL), newest write
 * first, so a page is Query pages read until `limit` live heads are found. Expired heads (TTL removes them up to
 * two days late) are skipped and read past, up to the read bound; the cursor is the position of the last head
 * read — handed out or skipped — in DynamoDB's LastEvaluatedKey shape.
 *
 * The first Query asks for exactly `limit` (the usual page has nothing to skip); each further one for twice as many
 * as the one before (at most MAX_QUERY_PAGE), so a run of skipped heads costs a few queries.
 */
import { type Breadcrumb, isExpired } from '#shared/domain/breadcrumb.ts';
import { BadRequestError } from '#shared/domain/errors.ts';
import { decodeCursorJson, encodeCursor } from '#shared/domain/record-rules.ts';
import type { ListQuery, Page } from '#shared/ports/breadcrumb-store.ts';
import { gsi, KIND, toRecord } from './items.ts';
import type { TableReads } from './table-reads.ts';
import { isKeyString } from './tag-listing/cursor.ts';

const MAX_QUERY_PAGE = 100;

/** A position in gsi1, as DynamoDB gives it in LastEvaluatedKey: table and index keys. */
const LIST_CURSOR_KEYS = ['id', 'workspace', 'gsi1pk', 'gsi1sk'] as const;

export async function listBySchema(
  reads: TableReads,
  query: ListQuery & { schema_name: string },
  options: { nowMs: number; bound: number },
): Promise<Page<Breadcrumb>> {
  const { workspace, schema_name: schema, limit } = query;
  const pk = gsi.bySchema(workspace, schema);
  let start = query.cursor === undefined ? undefined : decodeListCursor(query.cursor, pk);
  const items: Breadcrumb[] = [];
  let read = 0;
  let size = limit;
  let more = true;
  while (items.length < limit && more && read < options.bound) {
    const page = await reads.query({
      IndexName: 'gsi1',
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': 'gsi1pk' },
      ExpressionAttributeValues: { ':pk': pk },
      ScanIndexForward: false,
      Limit: Math.max(1, Math.min(size, options.bound - read)),
      ExclusiveStartKey: start,
    });
    size = Math.min(MAX_QUERY_PAGE, Math.max(size * 2, limit));
    read += page.items.length;
    more = page.next !== undefined;
    start = page.next;
    for (const [i, item] of page.items.entries()) {
      if (item.kind !== KIND.breadcrumb) continue;
      const record = toRecord(item);
      if (isExpired(record, options.nowMs) || record.schema_name !== schema) continue;
      items.push(record);
      if (items.length === limit) {
        // Full: go on after this head, whatever the page held beyond it.
        const rest = page.items.length - i - 1;
        if (rest > 0) {
          more = true;
          start = positionOf(item);
        }
        break;
      }
    }
  }
  return {
    items,
    next_cursor: more && start !== undefined ? encodeCursor(start) : null,
    ...(more && items.length < limit ? { read_bound: { entries_read: read, bound: options.bound } } : {}),
  };
}

function positionOf(item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(LIST_CURSOR_KEYS.map((k) => [k, item[k]]));
}

function decodeListCursor(cursor: string, pk: string): Record<string, unknown> {
  const value = decodeCursorJson(cursor);
  const wanted = [...LIST_CURSOR_KEYS].sort();
  // Exactly the keys DynamoDB gave as LastEvaluatedKey, all short strings: anything else would reach DynamoDB as
  // an invalid ExclusiveStartKey (a 5xx), not a 400.
  if (
    value === null ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    (value as Record<string, unknown>).gsi1pk !== pk ||
    Object.keys(value).sort().join('\u0000') !== wanted.join('\u0000') ||
    !Object.values(value).every(isKeyString)
  ) {
    throw new BadRequestError('cursor does not belong to this listing', [
      { path: 'cursor', message: 'use the next_cursor of the same schema_name/tag listing' },
    ]);
  }
  return value as Record<string, unknown>;
}
