/**
 * What a workspace offers an MCP client: its active tools (each `tool.def.v1` whose latest version the rule manager
 * judged active, under its own name), its active agents as `ask_<agent_id>` tools, and the breadcrumb tools
 * (`crumbs_get`, `crumbs_list`, `crumbs_create`). Read fresh on every `tools/list` from the API's definitions
 * listing, so a definition written a moment ago appears on the next list (the server advertises no
 * `listChanged`: a stateless server has no session to notify).
 *
 * Names: MCP tool names are 1–128 characters of `[A-Za-z0-9_.-]` (spec 2025-11-25). A definition's name that is
 * not one, or that takes a name crumbs keeps (`ask_*`, `crumbs_*`), is left out rather than renamed: a renamed tool
 * would answer to a name its author never wrote.
 */
import type { DefinitionSummary } from '#shared/core/api/activity-routes.ts';
import { legacyAgentContext } from '#shared/domain/definitions.ts';
import { AGENT_DEF_SCHEMA, LEGACY_AGENT_DEF_SCHEMA } from '#shared/domain/protocol.ts';

export const AGENT_TOOL_PREFIX = 'ask_';
export const BUILTIN_PREFIX = 'crumbs_';
const MCP_TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** Offered tools per list (a workspace holds at most a few hundred definitions; the rest are not listed). */
export const MAX_LISTED_TOOLS = 500;

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface CatalogTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: ToolAnnotations;
  /** What a call does: write a tool request, an agent request, or a breadcrumb operation. */
  target:
    | { kind: 'tool'; tool: string; definition: string }
    | { kind: 'agent'; agent: string; definition: string }
    | { kind: 'builtin'; op: 'get' | 'list' | 'create' };
}

/** A definition as the catalog needs it: its summary and its context (the definition's own fields). */
export interface CatalogDefinition {
  summary: DefinitionSummary;
  context: Record<string, unknown>;
}

const OBJECT_SCHEMA = { type: 'object' } as const;

export const BUILTIN_TOOLS: readonly CatalogTool[] = [
  {
    name: `${BUILTIN_PREFIX}get`,
    title: 'Get a breadcrumb',
    description:
      "Reads one breadcrumb of this workspace by id: its context view (fields its schema's llm_hints hide are left out).",
    inputSchema: {
      type: 'object',
      properties: { id: { type: 'string', description: 'the breadcrumb id' } },
      required: ['id'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    target: { kind: 'builtin', op: 'get' },
  },
  {
    name: `${BUILTIN_PREFIX}list`,
    title: 'List breadcrumbs',
    description:
      "Lists breadcrumbs of this workspace by schema and/or tag, newest first, as context views; pass the answer's next_cursor as cursor for more. A page is full unless the listing ends, or stops at its read bound (the answer then says read_bound): next_cursor goes on.",
    inputSchema: {
      type: 'object',
      properties: {
        schema_name: { type: 'string', description: 'e.g. agent.response.v1' },
        tag: { type: 'string', description: 'e.g. thread:<id> or workflow:<id>' },
        limit: { type: 'integer', minimum: 1, maximum: 100, description: 'default 20' },
        cursor: { type: 'string' },
      },
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    target: { kind: 'builtin', op: 'list' },
  },
  {
    name: `${BUILTIN_PREFIX}create`,
    title: 'Create a breadcrumb',
    description:
      'Writes a new breadcrumb in this workspace, as the API does (the same checks; created_by is you). Definitions and requests written here run like any other.',
    inputSchema: {
      type: 'object',
      properties: {
        schema_name: { type: 'string' },
        title: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' } },
        context: { type: 'object' },
      },
      required: ['schema_name', 'context'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    target: { kind: 'builtin', op: 'create' },
  },
];

/** The tools of a workspace's definitions (active ones only), then the built-in ones. */
export function catalogOf(definitions: readonly CatalogDefinition[]): CatalogTool[] {
  const tools: CatalogTool[] = [];
  const taken = new Set(BUILTIN_TOOLS.map((t) => t.name));
  for (const { summary, context } of definitions) {
    if (summary.state !== 'active') continue;
    const tool =
      summary.schema_name === 'tool.def.v1'
        ? toolOf(summary, context)
        : summary.schema_name === AGENT_DEF_SCHEMA
          ? agentOf(summary, context)
          : summary.schema_name === LEGACY_AGENT_DEF_SCHEMA
            ? agentOf(summary, legacyAgentContext(context))
            : undefined;
    if (tool === undefined || taken.has(tool.name)) continue;
    taken.add(tool.name);
    tools.push(tool);
    if (tools.length >= MAX_LISTED_TOOLS - BUILTIN_TOOLS.length) break;
  }
  tools.sort((a, b) => a.name.localeCompare(b.name));
  return [...tools, ...BUILTIN_TOOLS];
}

function toolOf(summary: DefinitionSummary, c: Record<string, unknown>): CatalogTool | undefined {
  const name = typeof c.name === 'string' ? c.name : undefined;
  if (name === undefined || !MCP_TOOL_NAME.test(name) || reserved(name)) return undefined;
  const input = objectSchema(c.input_schema) ?? { ...OBJECT_SCHEMA };
  const output = objectSchema(c.output_schema);
  const annotations = annotationsOf(c.annotations);
  return {
    name,
    ...(summary.title ? { title: summary.title } : {}),
    description:
      typeof c.description === 'string' && c.description !== '' ? c.description : `The ${name} tool.`,
    inputSchema: input,
    ...(output ? { outputSchema: output } : {}),
    ...(annotations ? { annotations } : {}),
    target: { kind: 'tool', tool: name, definition: summary.id },
  };
}

function agentOf(summary: DefinitionSummary, c: Record<string, unknown>): CatalogTool | undefined {
  const agent = typeof c.agent_id === 'string' ? c.agent_id : undefined;
  if (agent === undefined) return undefined;
  const name = `${AGENT_TOOL_PREFIX}${agent}`;
  if (!MCP_TOOL_NAME.test(name)) return undefined;
  const about = typeof c.description === 'string' && c.description !== '' ? c.description : summary.title;
  return {
    name,
    title: `Ask ${agent}`,
    description: `Asks the ${agent} agent and answers with its reply.${about ? ` ${about}` : ''}`,
    inputSchema: {
      type: 'object',
      properties: {
        message: { type: 'string', description: 'what to ask' },
        input: { type: 'object', description: 'structured input, for agents that take one' },
        mode: { type: 'string', enum: ['converse', 'plan', 'build'], description: 'default converse' },
        conversation_id: { type: 'string', description: 'to continue a conversation' },
      },
      additionalProperties: false,
    },
    annotations: { readOnlyHint: false, openWorldHint: true },
    target: { kind: 'agent', agent, definition: summary.id },
  };
}

function reserved(name: string): boolean {
  return name.startsWith(AGENT_TOOL_PREFIX) || name.startsWith(BUILTIN_PREFIX);
}

/** An input or output schema MCP accepts: a JSON Schema object whose type is "object". */
function objectSchema(value: unknown): Record<string, unknown> | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const schema = value as Record<string, unknown>;
  return schema.type === 'object' ? schema : undefined;
}

/** `annotations: { read_only, destructive, idempotent, open_world }` of a tool definition, as MCP's hints. */
function annotationsOf(value: unknown): ToolAnnotations | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const a = value as Record<string, unknown>;
  const out: ToolAnnotations = {};
  if (typeof a.read_only === 'boolean') out.readOnlyHint = a.read_only;
  if (typeof a.destructive === 'boolean') out.destructiveHint = a.destructive;
  if (typeof a.idempotent === 'boolean') out.idempotentHint = a.idempotent;
  if (typeof a.open_world === 'boolean') out.openWorldHint = a.open_world;
  return Object.keys(out).length > 0 ? out : undefined;
}
