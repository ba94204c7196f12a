/**
 * Key builders and item ↔ record mapping for the breadcrumbs table. The layout is documented in
 * `table-design.md` beside this file.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { BreadcrumbSchema } from '#shared/domain/breadcrumb.ts';

export const KIND = {
  breadcrumb: 'breadcrumb',
  version: 'version',
  tag: 'tag',
  idempotency: 'idempotency',
  schemaHints: 'schema-hints',
  claim: 'claim',
  circuit: 'circuit',
} as const;

export type Key = { id: string; workspace: string };

export const keys = {
  head: (workspace: string, id: string): Key => ({ id, workspace }),
  version: (workspace: string, id: string, version: number): Key => ({
    id: `${id}#v#${String(version).padStart(10, '0')}`,
    workspace,
  }),
  tag: (workspace: string, id: string, tag: string): Key => ({ id: `${id}#t#${tag}`, workspace }),
  idempotency: (workspace: string, key: string): Key => ({ id: `#idem#${key}`, workspace }),
  schemaHints: (workspace: string, schemaName: string): Key => ({ id: `#hints#${schemaName}`, workspace }),
};

export const gsi = {
  bySchema: (workspace: string, schemaName: string) => `${workspace}#s#${schemaName}`,
  byTag: (workspace: string, tag: string) => `${workspace}#t#${tag}`,
  bySchemaTag: (workspace: string, schemaName: string, tag: string) => `${workspace}#st#${schemaName}#${tag}`,
  sort: (updatedAt: string, id: string) => `${updatedAt}#${id}`,
};

/** Attributes of a stored record that are bookkeeping, not part of the breadcrumb. */
const INTERNAL = new Set([
  'kind',
  'write_id',
  'gsi1pk',
  'gsi1sk',
  'gsi2pk',
  'gsi2sk',
  'ref',
  'ingest_errors',
]);

export function headItem(record: Breadcrumb, writeId: string): Record<string, unknown> {
  return {
    ...record,
    kind: KIND.breadcrumb,
    write_id: writeId,
    gsi1pk: gsi.bySchema(record.workspace, record.schema_name),
    gsi1sk: gsi.sort(record.updated_at, record.id),
  };
}

export function versionItem(record: Breadcrumb, writeId: string): Record<string, unknown> {
  return {
    ...record,
    ...keys.version(record.workspace, record.id, record.version),
    kind: KIND.version,
    ref: record.id,
    write_id: writeId,
  };
}

export function tagItem(record: Breadcrumb, tag: string): Record<string, unknown> {
  return {
    ...keys.tag(record.workspace, record.id, tag),
    kind: KIND.tag,
    ref: record.id,
    gsi1pk: gsi.byTag(record.workspace, tag),
    gsi1sk: gsi.sort(record.updated_at, record.id),
    gsi2pk: gsi.bySchemaTag(record.workspace, record.schema_name, tag),
    gsi2sk: gsi.sort(record.updated_at, record.id),
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
  };
}

/** Maps a head or version item back to the record (ids of version items are restored from `ref`). */
export function toRecord(item: Record<string, unknown>): Breadcrumb {
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) if (!INTERNAL.has(k)) plain[k] = v;
  if (item.kind === KIND.version && typeof item.ref === 'string') plain.id = item.ref;
  if (plain.tags instanceof Set) plain.tags = [...plain.tags];
  return BreadcrumbSchema.parse(plain);
}
