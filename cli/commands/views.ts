/**
 * How breadcrumbs read in the terminal, shared by the commands that print them.
 */
import type { Breadcrumb, BreadcrumbVersion, ContextView } from '#shared/client/crumbs-client.ts';
import { type Column, formatJson, formatRecord, formatTable, shortTime } from '../format.ts';

export const BREADCRUMB_COLUMNS: readonly Column<ContextView>[] = [
  { header: 'id', value: (b) => b.id, max: 40 },
  { header: 'schema', value: (b) => b.schema_name, max: 40 },
  { header: 'title', value: (b) => b.title, max: 40 },
  { header: 'tags', value: (b) => b.tags, max: 40 },
  { header: 'version', value: (b) => b.version, align: 'right' },
  { header: 'updated', value: (b) => shortTime(b.updated_at) },
];

export const HISTORY_COLUMNS: readonly Column<BreadcrumbVersion>[] = [
  { header: 'version', value: (v) => v.version, align: 'right' },
  { header: 'who', value: (v) => v.updated_by, max: 32 },
  { header: 'when', value: (v) => shortTime(v.updated_at) },
  { header: 'title', value: (v) => v.title, max: 48 },
  { header: 'checksum', value: (v) => v.checksum?.slice(0, 12) },
];

export function breadcrumbTable(rows: readonly ContextView[]): string {
  return formatTable(BREADCRUMB_COLUMNS, rows);
}

/** The context view: header fields, then the (hint-applied) context as JSON. */
export function contextViewText(view: ContextView): string {
  return [
    formatRecord([
      ['id', view.id],
      ['schema', view.schema_name],
      ['title', view.title],
      ['tags', view.tags.join(', ')],
      ['version', view.version],
      ['updated', shortTime(view.updated_at)],
    ]),
    'context:',
    formatJson(view.context),
  ].join('\n');
}

/** The full record: every stored field; context and hints as JSON blocks. */
export function fullViewText(crumb: Breadcrumb): string {
  const causation = crumb.causation
    ? `${crumb.causation.caused_by} (thread ${crumb.causation.thread}, hop ${crumb.causation.hop})`
    : undefined;
  const blocks = [
    formatRecord([
      ['id', crumb.id],
      ['workspace', crumb.workspace],
      ['schema', crumb.schema_name],
      ['title', crumb.title],
      ['tags', crumb.tags.join(', ')],
      ['version', crumb.version],
      ['checksum', crumb.checksum],
      ['created', `${shortTime(crumb.created_at)} by ${crumb.created_by}`],
      ['updated', `${shortTime(crumb.updated_at)} by ${crumb.updated_by}`],
      ['expires', crumb.expires_at === undefined ? undefined : shortTime(crumb.expires_at)],
      ['causation', causation],
    ]),
    'context:',
    formatJson(crumb.context),
  ];
  if (crumb.llm_hints !== undefined) blocks.push('llm_hints:', formatJson(crumb.llm_hints));
  return blocks.join('\n');
}
