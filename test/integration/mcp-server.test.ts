/**
 * crumbs as an MCP server, end to end on the shared local stack, with the official SDK's `Client` over Streamable
 * HTTP: a workspace's active tools and agents appear in `tools/list` the moment the rule manager calls them active;
 * calling one writes the request an API user would (created_by the caller) and answers from its response; the
 * breadcrumb tools and resources read context views; the token and workspace checks are the API's; hostile or
 * malformed requests get JSON-RPC errors or 4xx, never a 5xx.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { SCOPED_TOKEN, SCOPED_WORKSPACE } from '../support/shared-stack.ts';

const ws = uniqueWorkspace('mcp');
const other = uniqueWorkspace('mcp-other');
const clients: Client[] = [];

function crumbsClient(workspace: string): CrumbsClient {
  const { api: endpoint, token } = localStack();
  return new CrumbsClient({ endpoint, token, workspace });
}

async function connect(workspace: string, token = localStack().token): Promise<Client> {
  const client = new Client({ name: 'mcp-server-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(
    new URL(`${localStack().api}/v1/workspaces/${workspace}/mcp`),
    { requestInit: { headers: { authorization: `Bearer ${token}` } } },
  );
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function applyAndWait(c: CrumbsClient, id: string, body: { schema_name: string; context: object }) {
  const written = await c.put(id, { title: id, tags: [], ...body });
  await eventually(async () => {
    const d = (await c.definitions()).items.find((x) => x.id === id);
    return d && d.version === written.version && d.state === 'active' ? d : undefined;
  }, 30_000);
  return written;
}

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
});

describe('MCP server', () => {
  it("lists a workspace's active tools and agents, and the breadcrumb tools", async () => {
    const c = crumbsClient(ws);
    await applyAndWait(c, 'tool-echo', {
      schema_name: 'tool.def.v1',
      context: {
        name: 'echo',
        description: 'Echoes its input.',
        implementation: 'echo',
        input_schema: { type: 'object', properties: { text: { type: 'string' } } },
        annotations: { read_only: true, idempotent: true },
      },
    });
    await applyAndWait(c, 'agent-helper', {
      schema_name: 'agent.def.v1',
      context: { agent_id: 'helper', system_prompt: 'Help.', model: 'offline/echo' },
    });
    const mcp = await connect(ws);
    expect(mcp.getServerCapabilities()).toMatchObject({
      tools: { listChanged: false },
      resources: { subscribe: false, listChanged: false },
    });
    const { tools } = await mcp.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(['echo', 'ask_helper', 'crumbs_get', 'crumbs_list', 'crumbs_create']),
    );
    const echo = tools.find((t) => t.name === 'echo');
    expect(echo).toMatchObject({
      description: 'Echoes its input.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      annotations: { readOnlyHint: true, idempotentHint: true },
    });

    // Another workspace lists none of them.
    const elsewhere = await connect(other);
    const theirs = (await elsewhere.listTools()).tools.map((t) => t.name);
    expect(theirs).not.toContain('echo');
    expect(theirs).not.toContain('ask_helper');
  });

  it('calls a tool and an agent through the request breadcrumbs an API user would write', async () => {
    const mcp = await connect(ws);
    const result = await mcp.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ text: 'hello' });
    const requestId = (result._meta as Record<string, string>)['crumbs/request_id'] as string;
    const request = await crumbsClient(ws).getFull(requestId);
    expect(request).toMatchObject({
      schema_name: 'tool.request.v1',
      created_by: 'user:local',
      context: { tool: 'echo', input: { text: 'hello' } },
    });

    const asked = await mcp.callTool({ name: 'ask_helper', arguments: { message: 'What is crumbs?' } });
    expect(asked.isError).toBeFalsy();
    const text = (asked.content as { type: string; text: string }[])[0]?.text ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(asked.structuredContent).toMatchObject({ answer: text });
  });

  it('reads and writes breadcrumbs as the API does, and reports refusals as tool errors', async () => {
    const mcp = await connect(ws);
    const created = await mcp.callTool({
      name: 'crumbs_create',
      arguments: { schema_name: 'note.v1', context: { text: 'from mcp' } },
    });
    expect(created.isError).toBeFalsy();
    const id = (created.structuredContent as { id: string }).id;
    const got = await mcp.callTool({ name: 'crumbs_get', arguments: { id } });
    expect(got.structuredContent).toMatchObject({ id, context: { text: 'from mcp' } });

    const bad = await mcp.callTool({
      name: 'crumbs_create',
      arguments: { schema_name: 'NOT A SCHEMA', context: {} },
    });
    expect(bad.isError).toBe(true);
    expect((bad.content as { text: string }[])[0]?.text).toMatch(/schema_name/);

    const resource = await mcp.readResource({ uri: `crumbs://${ws}/breadcrumbs/${id}` });
    expect(JSON.parse((resource.contents[0] as { text: string }).text)).toMatchObject({ id });
    // A resource of another workspace is not found from here.
    await expect(mcp.readResource({ uri: `crumbs://${other}/breadcrumbs/${id}` })).rejects.toThrow(
      /not found/i,
    );
    await expect(mcp.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
    const templates = await mcp.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toContain(
      `crumbs://${ws}/breadcrumbs/{id}`,
    );
  });

  it('serves the same over stdio through `crumbs mcp serve`, with the token and workspace from the environment', async () => {
    const stdio = (token: string) =>
      new StdioClientTransport({
        command: process.execPath,
        args: ['bin/crumbs.js', 'mcp', 'serve'],
        env: {
          ...getDefaultEnvironment(),
          CRUMBS_ENDPOINT: localStack().api,
          CRUMBS_TOKEN: token,
          CRUMBS_WORKSPACE: ws,
        },
        stderr: 'pipe',
      });
    const client = new Client({ name: 'mcp-stdio-test', version: '1' });
    await client.connect(stdio(localStack().token));
    clients.push(client);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['echo', 'ask_helper', 'crumbs_get']),
    );
    const result = await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } });
    expect(result.structuredContent).toEqual({ text: 'over stdio' });

    const refused = new Client({ name: 'mcp-stdio-test', version: '1' });
    await expect(refused.connect(stdio('not-a-token'))).rejects.toThrow(/answered 401/);
    await refused.close().catch(() => undefined);
  });

  it('refuses callers the API refuses, and answers hostile requests with 4xx or JSON-RPC errors', async () => {
    const url = `${localStack().api}/v1/workspaces/${ws}/mcp`;
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${localStack().token}`,
          ...headers,
        },
        body,
      });
    expect((await post('{}', { authorization: 'Bearer wrong' })).status).toBe(401);
    await expect(connect(ws, SCOPED_TOKEN)).rejects.toThrow(/403/);
    const scoped = await connect(SCOPED_WORKSPACE, SCOPED_TOKEN);
    expect((await scoped.listTools()).tools.map((t) => t.name)).toContain('crumbs_get');

    for (const body of [
      'not json',
      '{"jsonrpc":"2.0"',
      '[]',
      '{"jsonrpc":"2.0","id":1,"method":"nope"}',
      'null',
    ]) {
      const res = await post(body);
      expect(res.status, body).toBeLessThan(500);
    }
    const get = await fetch(url, { headers: { authorization: `Bearer ${localStack().token}` } });
    expect(get.status).toBe(405);

    const metadata = await fetch(
      `${localStack().api}/.well-known/oauth-protected-resource/v1/workspaces/${ws}/mcp`,
    );
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({ resource: url, bearer_methods_supported: ['header'] });
  });
});
