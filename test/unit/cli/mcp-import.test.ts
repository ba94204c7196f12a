import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crumbsToolName, mcpToolDefinitions } from '#cli/commands/mcp.ts';
import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { runMcpTool } from '#shared/core/agents/mcp-tools.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { startMcpServer, type TestMcpServer } from '../../support/mcp-server.ts';

let server: TestMcpServer;
const mcp = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate: true }) });
beforeAll(async () => {
  server = await startMcpServer();
});
afterAll(() => server.close());

describe('crumbs mcp import: tool definitions from an MCP server', () => {
  it('writes one valid tool.def.v1 per tool, with the MCP input schema, prefixed', async () => {
    const tools = await mcp.listTools({ url: server.url }, AbortSignal.timeout(5000));
    const defs = mcpToolDefinitions(tools, { url: server.url, prefix: 'test', bearerSecret: 'mcp-token' });
    expect(defs.map((d) => d.id)).toEqual([
      'tool-test.add',
      'tool-test.greet',
      'tool-test.fail',
      'tool-test.calculator',
      'tool-test.whoami',
    ]);
    expect(defs[0]?.body.context).toMatchObject({
      name: 'test.add',
      implementation: 'mcp',
      input_schema: { type: 'object', properties: { a: { type: 'number' } } },
      mcp: { url: server.url, tool: 'add', authentication: { type: 'bearer', secret_ref: 'mcp-token' } },
    });
  });

  it('makes remote names into crumbs names', () => {
    expect(crumbsToolName('create issue/v2')).toBe('create-issue-v2');
    expect(crumbsToolName('_x', 'gh')).toBe('gh.x');
  });

  it('runs an imported tool for the tool executor, failing with the tool message on isError', async () => {
    const tools = await mcp.listTools({ url: server.url }, AbortSignal.timeout(5000));
    const [add, , fail] = mcpToolDefinitions(tools, { url: server.url });
    const parse = (c: Record<string, unknown> | undefined) => {
      const p = validateDefinition('tool.def.v1', c);
      if (p.kind !== 'tool') throw new Error('not a tool');
      return p.definition;
    };
    const deps = { mcp, secrets: new LocalSecrets() };
    expect(
      await runMcpTool('ws', parse(add?.body.context), { a: 1, b: 2 }, deps, AbortSignal.timeout(5000)),
    ).toEqual({ sum: 3 });
    await expect(
      runMcpTool('ws', parse(fail?.body.context), { reason: 'x' }, deps, AbortSignal.timeout(5000)),
    ).rejects.toThrow('fail: failed: x');
  });

  it('refuses an mcp tool definition without its server, or with a literal credential', () => {
    expect(() => validateDefinition('tool.def.v1', { name: 'x', implementation: 'mcp' })).toThrow(
      ValidationError,
    );
    expect(() =>
      validateDefinition('tool.def.v1', {
        name: 'x',
        implementation: 'mcp',
        mcp: { url: 'https://m.example/mcp', headers: { 'X-Api-Key': 'abc' } },
      }),
    ).toThrow(/mcp.headers.X-Api-Key/);
  });
});
