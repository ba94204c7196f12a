/**
 * `breadcrumb.create`: writes one breadcrumb in the tool's own workspace. A `workspace` field is refused rather
 * than ignored, so nobody believes they wrote elsewhere. Definitions (agents, tools, workflows, context configs)
 * are refused unless the tool's `config.allow_definitions` is true: a model that can write a `tool.def.v1` could
 * otherwise give itself new powers (an `http` tool with `allow_private`). A model given this tool is held to the
 * agents' allow-list (`#shared/core/executor/allow-list.ts`) all the same: no run messages, answers, people's messages
 * or routing tags ever, and no tool / agent / workflow requests unless `config.allow_requests` is true — a request
 * written here would name what the asking agent was never given.
 *
 * The write carries an idempotency key derived from the request that caused it and the input, so a re-executed
 * request (a redelivery after a crash) replays the first write instead of writing a second breadcrumb.
 */
import { createHash } from 'node:crypto';
import { CreateBreadcrumbSchema, canonicalJson, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { NonRetriableError, ValidationError } from '#shared/domain/errors.ts';
import { isDefinitionLike, protocolRefusal, REQUESTS } from '#shared/domain/protocol.ts';
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
    if (isDefinitionLike(parsed.schema_name) && ctx.config.allow_definitions !== true) {
      throw new NonRetriableError(
        `breadcrumb.create does not write definitions (${parsed.schema_name}) unless the tool's config.allow_definitions is true`,
      );
    }
    if (!isDefinitionLike(parsed.schema_name)) {
      const refused = protocolRefusal(parsed.schema_name, parsed.tags);
      if (refused !== undefined) throw new NonRetriableError(`breadcrumb.create refused: ${refused}`);
    }
    if (Object.hasOwn(REQUESTS, parsed.schema_name) && ctx.config.allow_requests !== true) {
      throw new NonRetriableError(
        `breadcrumb.create does not write requests (${parsed.schema_name}) unless the tool's config.allow_requests is true: an agent requests what it was given through its own tool calls`,
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
