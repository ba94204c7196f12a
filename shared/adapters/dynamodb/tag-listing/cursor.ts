/**
 * A tag listing's cursor: the listing's tag and each source's position — not read yet, after an entry (table id,
 * sort key), or read to the end. base64url JSON like every cursor, checked when it comes back: a cursor of another
 * listing, or one whose positions DynamoDB would refuse as an ExclusiveStartKey (a 5xx), is a 400.
 */
import { BadRequestError } from '#shared/domain/errors.ts';
import { decodeCursorJson, encodeCursor } from '#shared/domain/record-rules.ts';
import { INHERITED_THREADS, type TagSource } from './sources.ts';

export type SourcePosition = 'start' | 'done' | [string, string];

/** Sources a listing can have: the fixed ones (`tagSources`) and a routing tag's threads. */
const MAX_SOURCES = 8 + INHERITED_THREADS;

export function encodeTagCursor(tag: string, positions: ReadonlyMap<string, SourcePosition>): string {
  return encodeCursor({ tag, p: Object.fromEntries(positions) });
}

/**
 * Each source's position. Sources a later page does not have (a routing tag's threads change as breadcrumbs are
 * written) are dropped; new ones start from the top.
 */
export function decodeTagCursor(cursor: string, tag: string): Map<string, SourcePosition> {
  const value = decodeCursorJson(cursor) as { tag?: unknown; p?: unknown } | null;
  const refuse = () =>
    new BadRequestError('cursor does not belong to this listing', [
      { path: 'cursor', message: 'use the next_cursor of the same schema_name/tag listing' },
    ]);
  if (value === null || typeof value !== 'object' || value.tag !== tag) throw refuse();
  const p = value.p;
  if (p === null || typeof p !== 'object' || Array.isArray(p)) throw refuse();
  const entries = Object.entries(p as Record<string, unknown>);
  if (entries.length > MAX_SOURCES) throw refuse();
  const positions = new Map<string, SourcePosition>();
  for (const [name, position] of entries) {
    if (name.length > 1100) throw refuse();
    if (position === 'start' || position === 'done') positions.set(name, position);
    else if (Array.isArray(position) && position.length === 2 && position.every(isKeyString))
      positions.set(name, position as [string, string]);
    else throw refuse();
  }
  return positions;
}

/** A key attribute DynamoDB takes back: a non-empty string of at most 1 KB without lone surrogates. */
export function isKeyString(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    Buffer.byteLength(value, 'utf8') <= 1024 &&
    !/\p{Cs}/u.test(value)
  );
}

/** Where a source's next read starts, from the position of the last entry taken from it. */
export function startKey(
  workspace: string,
  source: TagSource,
  [key, sk]: [string, string],
): Record<string, unknown> {
  if (source.kind !== 'index') return { id: key, workspace };
  return { id: key, workspace, [`${source.index}pk`]: source.pk, [`${source.index}sk`]: sk };
}
