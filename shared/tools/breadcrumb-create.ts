/**
 * `breadcrumb.create`: writes one breadcrumb in the tool's own workspace. A `workspace` field is refused rather
 * than ignored, so nobody believes they wrote elsewhere. Definitions (agents, tools, workflows, context configs)
 * are refused unless the tool's `config.allow_definitions` is true: a model that can write a `tool.def.v1` could
 * otherwise give itself new powers (an `http` tool with `allow_private`).
 *
 * The write carries an idempotency key derived from the request that caused it and the input, so a re-executed
 * request (a redelivery after a crash) replays the first write instead of writing a second breadcrumb.
 */
import { createHash } from 'node:crypto';
import { CreateBreadcrumbSchema, canonicalJson, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, ValidationError } from '#shared/domain/errors.ts';
import { DEFINITION_SCHEMAS } from '#shared/topology.ts';
import type { Tool } from './tool.ts';

export interface BreadcrumbCreateInput {
  schema_name: string;
  title?: string;
  tags?: string[];
  context: Record<string, unknown>;
}

export const breadcrumbCreateTool: Tool<
  BreadcrumbCreateInput,
  { id: string; version: number; replayed: boolean }
> = {
  name: 'breadcrumb.create',
  description: 'Creates a breadcrumb in this workspace: schema_name, title, tags, context. Returns its id.',
  inputSchema: {
    type: 'object',
    properties: {
      schema_name: { type: 'string' },
      title: { type: 'string' },
      tags: { type: 'array', items: { type: 'string' } },
      context: { type: 'object' },
    },
    required: ['schema_name', 'context'],
  },
  async run(input, ctx) {
    if (Object.hasOwn(input as object, 'workspace')) {
      throw new ValidationError([
        {
          path: 'input.workspace',
          message: `breadcrumb.create writes only to its own workspace (${ctx.workspace}); remove "workspace"`,
        },
      ]);
    }
    const parsed = parseOrThrow(CreateBreadcrumbSchema, input, 'input');
    if (Object.hasOwn(DEFINITION_SCHEMAS, parsed.schema_name) && ctx.config.allow_definitions !== true) {
      throw new NonRetriableError(
        `breadcrumb.create does not write definitions (${parsed.schema_name}) unless the tool's config.allow_definitions is true`,
      );
    }
    const key = createHash('sha256')
      .update(canonicalJson({ by: ctx.causation.caused_by, principal: ctx.principal, input: parsed }))
      .digest('hex')
      .slice(0, 40);
    const { breadcrumb, replayed } = await ctx.store.create(ctx.workspace, parsed, {
      principal: ctx.principal,
      causation: ctx.causation,
      idempotencyKey: `tool-create-${key}`,
    });
    return { id: breadcrumb.id, version: breadcrumb.version, replayed };
  },
};
