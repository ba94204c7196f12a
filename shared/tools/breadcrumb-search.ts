/**
 * `breadcrumb.search`: lists breadcrumbs by schema and/or tag in the caller's own workspace, newest first, as
 * context views — what a model may read, with `llm_hints` (instance and schema defaults) applied. The stored
 * records never leave through a tool: a field a hint excludes stays out of every model's input.
 */
import type { ContextView } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { ReadBoundHit } from '#shared/ports/breadcrumb-store.ts';
import type { Tool } from './tool.ts';

export interface BreadcrumbSearchInput {
  schema_name?: string;
  tag?: string;
  limit?: number;
}

export interface BreadcrumbSearchOutput {
  items: ContextView[];
  /** The listing stopped at its read bound before it found `limit` (older ones may exist). */
  read_bound?: ReadBoundHit;
}

export const breadcrumbSearchTool: Tool<BreadcrumbSearchInput, BreadcrumbSearchOutput> = {
  name: 'breadcrumb.search',
  description:
    'Lists breadcrumbs of this workspace by schema_name and/or tag, newest first (limit 1-50, default 10).',
  inputSchema: {
    type: 'object',
    properties: {
      schema_name: { type: 'string', minLength: 1 },
      tag: { type: 'string', minLength: 1 },
      limit: { type: 'integer', minimum: 1, maximum: 50 },
    },
    additionalProperties: false,
  },
  async run(input, ctx) {
    if (input.schema_name === undefined && input.tag === undefined) {
      throw new NonRetriableError(
        'give schema_name, tag or both: searching a whole workspace is not supported',
      );
    }
    const page = await ctx.store.list({
      workspace: ctx.workspace,
      limit: input.limit ?? 10,
      ...(input.schema_name !== undefined ? { schema_name: input.schema_name } : {}),
      ...(input.tag !== undefined ? { tag: input.tag } : {}),
    });
    return {
      items: await ctx.store.contextViews(ctx.workspace, page.items),
      ...(page.read_bound !== undefined ? { read_bound: page.read_bound } : {}),
    };
  },
};
