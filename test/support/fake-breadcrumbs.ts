/**
 * Just enough of the BreadcrumbStore port for agent-type unit tests: create (with caller ids, replayed when the id
 * exists), get, and list by schema; everything else throws. Integration tests use the real store.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';

export function fakeBreadcrumbs(): BreadcrumbStore & { items: Breadcrumb[] } {
  const items: Breadcrumb[] = [];
  let n = 0;
  const unsupported = () => Promise.reject(new Error('not supported by the fake store'));
  return {
    items,
    async create(workspace, input, options) {
      const id = options.id ?? `fake-${++n}`;
      const existing = items.find((b) => b.id === id && b.workspace === workspace);
      if (existing) return { breadcrumb: existing, replayed: true };
      const now = new Date().toISOString();
      const breadcrumb = {
        id,
        workspace,
        schema_name: input.schema_name,
        title: input.title ?? '',
        tags: input.tags ?? [],
        context: input.context,
        version: 1,
        checksum: '',
        created_at: now,
        updated_at: now,
        created_by: options.principal,
      } as unknown as Breadcrumb;
      items.push(breadcrumb);
      return { breadcrumb, replayed: false };
    },
    async get(workspace, id) {
      const found = items.find((b) => b.id === id && b.workspace === workspace);
      if (!found) throw new NotFoundError(`breadcrumb ${id} not found`);
      return found;
    },
    async list(query) {
      const matching = items.filter(
        (b) =>
          b.workspace === query.workspace &&
          (query.schema_name === undefined || b.schema_name === query.schema_name) &&
          (query.tag === undefined || b.tags.includes(query.tag)),
      );
      return { items: matching.slice(0, query.limit), next_cursor: null };
    },
    getContextView: unsupported,
    getVersion: unsupported,
    history: unsupported,
    update: unsupported,
    delete: unsupported,
  };
}
