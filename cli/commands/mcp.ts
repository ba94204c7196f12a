/**
 * `crumbs mcp serve`: a stdio MCP server relaying to the workspace's MCP endpoint with the user's token
 * (`cli/mcp-proxy.ts`), for desktop clients that speak stdio.
 *
 * `crumbs mcp import <server-url> [--prefix P] [--bearer-secret REF]`: lists an MCP server's tools and writes one
 * `tool.def.v1` per tool (`implementation: "mcp"`, the server URL, the tool's name there, its description and its
 * input schema), so LLM agents can call them natively. Ids are `tool-<name>`, so importing again updates in place.
 *
 * Credentials stay references: `--bearer-secret REF` puts `authentication: { type: bearer, secret_ref: REF }`
 * into each definition (the workspace's secret REF, which the executors read); the CLI itself, which lists the
 * tools from the user's own machine, reads the token from the user's environment variable named after the ref
 * (`github-token` → `GITHUB_TOKEN`).
 */

import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import type { Breadcrumb } from '#shared/client/crumbs-client.ts';
import { definitionLimits } from '#shared/config.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { TOOL_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { secretNameProblem } from '#shared/domain/secret-refs.ts';
import type { McpToolInfo } from '#shared/ports/mcp.ts';
import { ENV } from '#shared/topology.ts';
import { type Command, InputError, optInt, optString, printJson, UsageError } from '../args.ts';
import { formatTable } from '../format.ts';
import { relayMcp } from '../mcp-proxy.ts';
import { statusOf } from './apply.ts';

export interface ImportOptions {
  readonly url: string;
  readonly prefix?: string;
  readonly bearerSecret?: string;
}

/** The environment variable the CLI reads a `--bearer-secret` ref's token from: `github-token` → `GITHUB_TOKEN`. */
export function envNameOf(ref: string): string {
  return ref.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

/** A tool name as a crumbs name (letters, digits, `._:-`), with the prefix. */
export function crumbsToolName(remote: string, prefix?: string): string {
  const clean = remote.replace(/[^A-Za-z0-9._:-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return prefix ? `${prefix}.${clean}` : clean;
}

/** The tool definitions for a server's tools. */
export function mcpToolDefinitions(
  tools: readonly McpToolInfo[],
  options: ImportOptions,
): {
  id: string;
  body: { schema_name: string; title: string; tags: string[]; context: Record<string, unknown> };
}[] {
  return tools.map((tool) => {
    const name = crumbsToolName(tool.name, options.prefix);
    const context = {
      name,
      description: tool.description ?? `${tool.name} (MCP tool at ${options.url})`,
      input_schema: tool.inputSchema,
      ...(tool.outputSchema !== undefined ? { output_schema: tool.outputSchema } : {}),
      implementation: 'mcp',
      mcp: {
        url: options.url,
        tool: tool.name,
        ...(options.bearerSecret
          ? { authentication: { type: 'bearer', secret_ref: options.bearerSecret } }
          : {}),
      },
    };
    validateDefinition(TOOL_DEF_SCHEMA, context, definitionLimits());
    return {
      id: `tool-${name}`.replace(/[^A-Za-z0-9._:-]/g, '-'),
      body: {
        schema_name: TOOL_DEF_SCHEMA,
        title: `${name} (MCP)`,
        tags: ['mcp', `mcp:${new URL(options.url).host}`],
        context,
      },
    };
  });
}

export const mcpCommand: Command = {
  name: 'mcp',
  summary: "serve a workspace over MCP on stdio, or import an MCP server's tools as tool definitions",
  usage: `Usage: crumbs mcp serve
       crumbs mcp import <server-url> [--prefix P] [--bearer-secret REF] [--wait-seconds N]

serve: an MCP server on stdin/stdout for desktop clients that speak stdio. It relays every message to the
workspace's MCP endpoint (<endpoint>/v1/workspaces/<ws>/mcp) with your token (--endpoint, --token, --workspace or
${ENV.endpoint}, ${ENV.localToken}, ${ENV.workspace}), until stdin closes. Client config, e.g.:
  { "mcpServers": { "crumbs": { "command": "npx", "args": ["crumbs", "mcp", "serve"],
      "env": { "${ENV.endpoint}": "http://127.0.0.1:4710", "${ENV.localToken}": "…", "${ENV.workspace}": "demo" } } } }

import:
Lists the tools of the MCP server at <server-url> (Streamable HTTP, or HTTP+SSE for older servers) and writes one
tool.def.v1 per tool (implementation "mcp"), so agents can call them. Importing again updates them in place.

Flags:
  --prefix P            name the tools P.<tool> (e.g. github.create_issue)
  --bearer-secret REF   the server wants a bearer token: the definitions reference the workspace's secret REF
                        (Secrets Manager crumbs/agents/<workspace>/REF on AWS; crumbs dev --secrets locally);
                        to list the tools, this command reads the token from the environment variable named
                        after REF (github-token → GITHUB_TOKEN)
  --wait-seconds N      how long to wait for each definition's status (default 15; 0 = do not wait)`,
  options: {
    prefix: { type: 'string' },
    'bearer-secret': { type: 'string' },
    'wait-seconds': { type: 'string' },
  },
  async run(ctx) {
    const [sub, url, extra] = ctx.positionals;
    if (sub === 'serve') {
      if (url !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(url)}`, true);
      const { endpoint, workspace } = ctx.global;
      await relayMcp({
        url: `${endpoint.replace(/\/+$/, '')}/v1/workspaces/${encodeURIComponent(workspace)}/mcp`,
        token: ctx.token,
        log: (line) => ctx.io.stderr(`${line}\n`),
      });
      return 0;
    }
    if (sub !== 'import')
      throw new UsageError(
        sub === undefined
          ? 'say `crumbs mcp serve` or `crumbs mcp import <server-url>`'
          : `unknown subcommand ${JSON.stringify(sub)}`,
        true,
      );
    if (url === undefined) throw new UsageError('give the MCP server URL', true);
    if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, true);
    try {
      new URL(url);
    } catch {
      throw new UsageError(`${JSON.stringify(url)} is not a URL`, true);
    }
    const prefix = optString(ctx.values, 'prefix');
    if (prefix !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/.test(prefix)) {
      throw new UsageError('--prefix: letters, digits, ".", "_", ":" or "-"', true);
    }
    const bearerSecret = optString(ctx.values, 'bearer-secret');
    const refProblem = bearerSecret === undefined ? undefined : secretNameProblem(bearerSecret);
    if (refProblem !== undefined) throw new UsageError(`--bearer-secret: ${refProblem}`, true);
    const waitSeconds = optInt(ctx.values, 'wait-seconds', { min: 0 }) ?? 15;

    // The CLI talks to the user's server from the user's machine: no private-network guard here (the executors
    // that call it later have theirs).
    const client = new SdkMcpClient({ fetch: (input, init) => fetch(input, init) });
    const token = bearerSecret === undefined ? undefined : ctx.io.env[envNameOf(bearerSecret)];
    if (bearerSecret !== undefined && !token) {
      throw new UsageError(
        `--bearer-secret ${bearerSecret}: set ${envNameOf(bearerSecret)} to the token, so the tools can be listed`,
      );
    }
    const headers = token ? { Authorization: `Bearer ${token}` } : undefined;
    let tools: McpToolInfo[];
    try {
      tools = await client.listTools({ url, ...(headers ? { headers } : {}) }, AbortSignal.timeout(30_000));
    } catch (error) {
      throw new InputError(`cannot list the tools of ${url}: ${(error as Error).message}`);
    }
    if (tools.length === 0) throw new InputError(`${url} offers no tools`);
    const defs = mcpToolDefinitions(tools, {
      url,
      ...(prefix ? { prefix } : {}),
      ...(bearerSecret ? { bearerSecret } : {}),
    });
    const api = ctx.client();
    const written: Breadcrumb[] = [];
    for (const d of defs) written.push(await api.put(d.id, d.body));
    const rows = await Promise.all(written.map((w) => statusOf(api, w, waitSeconds)));
    if (ctx.global.json) printJson(ctx.io, rows);
    else {
      ctx.io.stdout(
        `${formatTable(
          [
            { header: 'tool', value: (r: (typeof rows)[number]) => r.id.replace(/^tool-/, '') },
            { header: 'id', value: (r: (typeof rows)[number]) => r.id, max: 48 },
            { header: 'state', value: (r: (typeof rows)[number]) => r.state },
            { header: 'errors', value: (r: (typeof rows)[number]) => r.errors.join('; '), max: 80 },
          ],
          rows,
        )}\n`,
      );
    }
    return rows.some((r) => r.state !== 'active' && r.state !== 'pending') ? 1 : 0;
  },
};
