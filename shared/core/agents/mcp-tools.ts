/**
 * MCP tools declared as `tool.def.v1` with `implementation: "mcp"` (what `crumbs mcp import` writes): where each
 * lives, and running one as a tool. LLM agents offer them to the model with the MCP tool's own input schema (the
 * definition's `input_schema`), and the model's call becomes a `tool.request.v1` like any tool's; tool agents
 * without a transport find their server here.
 */
import { parseDefinition, type ToolDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { TOOL_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { McpClient } from '#shared/ports/mcp.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import { resolveHeaders } from '#shared/tools/credentials.ts';
import type { Tool, ToolContext } from '#shared/tools/tool.ts';
import type { McpToolRef } from './tool-agent.ts';
import { fromResult } from './tool-agent.ts';

const MAX_TOOLS_LISTED = 200;

/** The server and remote name of an mcp tool definition of `workspace`, credentials (its own) resolved. */
export async function mcpToolRef(
  workspace: string,
  def: ToolDefinition,
  secrets: SecretSource,
): Promise<McpToolRef> {
  if (def.implementation !== 'mcp' || def.mcp === undefined) {
    throw new NonRetriableError(`tool ${def.name} is not an mcp tool`);
  }
  const headers = await resolveHeaders('mcp', workspace, def.mcp.headers, def.mcp.authentication, secrets);
  return {
    server: { url: def.mcp.url, headers, timeoutMs: def.mcp.timeout_ms },
    tool: def.mcp.tool ?? def.name,
  };
}

/** Finds the workspace's mcp tool definition named `name` (for tool agents without a transport). */
export function mcpToolResolver(store: BreadcrumbStore, secrets: SecretSource) {
  return async (workspace: string, name: string): Promise<McpToolRef | undefined> => {
    const page = await store.list({ workspace, schema_name: TOOL_DEF_SCHEMA, limit: MAX_TOOLS_LISTED });
    for (const item of page.items) {
      const context = item.context as { name?: unknown; implementation?: unknown };
      if (context.name !== name || context.implementation !== 'mcp') continue;
      const parsed = parseDefinition(TOOL_DEF_SCHEMA, item.context);
      if (parsed.kind === 'tool') return mcpToolRef(workspace, parsed.definition, secrets);
    }
    return undefined;
  };
}

/**
 * Runs an mcp tool definition for the tool executor: its output is the tool's `structuredContent` (or its JSON
 * text); a tool that reports `isError` fails with its message, which the executor answers as `status: "error"`.
 */
export async function runMcpTool(
  workspace: string,
  def: ToolDefinition,
  input: unknown,
  deps: { mcp: McpClient; secrets: SecretSource },
  signal: AbortSignal,
): Promise<unknown> {
  const ref = await mcpToolRef(workspace, def, deps.secrets);
  const args =
    input !== null && typeof input === 'object' && !Array.isArray(input)
      ? (input as Record<string, unknown>)
      : {};
  const result = fromResult(await deps.mcp.callTool(ref.server, { name: ref.tool, arguments: args }, signal));
  if (result.status === 'error') throw new NonRetriableError(`${def.name}: ${result.error}`);
  return result.output;
}

/** The `mcp` implementation for the tool executor's catalog: runs the definition's MCP tool (`runMcpTool`). */
export function mcpTool(deps: { mcp: McpClient; secrets: SecretSource }): Tool {
  return {
    name: 'mcp',
    description: 'Calls a tool of an MCP server (the tool definition says which server and tool).',
    inputSchema: { type: 'object' },
    run: (input: unknown, ctx: ToolContext) => {
      if (ctx.definition === undefined)
        throw new NonRetriableError('the mcp tool runs only from a tool definition');
      return runMcpTool(ctx.workspace, ctx.definition, input, deps, ctx.signal);
    },
  };
}
