/**
 * Seed 002's agent, written as the seed writes it (`agent.definition.v1`, `agent_name`), is served like any agent:
 * an MCP tool `ask_file-manager` that answers, and an A2A agent whose card and `SendMessage` work. Its bare model id
 * (`gpt-4`) runs on the stack's default provider (offline here).
 */
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { seed002Breadcrumb } from '../support/seeds.ts';

describe("seed 002's agent over MCP and A2A", () => {
  it('is ask_file-manager in tools/list and an A2A agent, and both answer', async () => {
    const ws = uniqueWorkspace('legacy-served');
    const c = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    const written = await c.put('agent-file-manager', seed002Breadcrumb);
    await eventually(async () => {
      const d = (await c.definitions()).items.find((x) => x.id === 'agent-file-manager');
      return d && d.version === written.version && d.state === 'active' ? d : undefined;
    }, 30_000);

    const mcp = new Client({ name: 'legacy-test', version: '1' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${localStack().api}/v1/workspaces/${ws}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${localStack().token}` } },
      }),
    );
    try {
      const tool = (await mcp.listTools()).tools.find((t) => t.name === 'ask_file-manager');
      expect(tool?.description).toContain('Helps users manage their stored files');
      const result = await mcp.callTool({
        name: 'ask_file-manager',
        arguments: { message: 'list my files' },
      });
      expect(result.isError).not.toBe(true);
      expect(JSON.stringify(result.content)).toContain('list my files');
    } finally {
      await mcp.close();
    }

    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${localStack().token}`);
      return fetch(input, { ...init, headers });
    };
    const a2a = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }).createFromUrl(
      `${localStack().api}/a2a/workspaces/${ws}/agents/file-manager/.well-known/agent-card.json`,
      '',
    );
    const task = (await a2a.sendMessage({
      tenant: '',
      message: {
        messageId: 'm-legacy',
        contextId: '',
        taskId: '',
        role: 1,
        parts: [
          {
            content: { $case: 'text', value: 'list my files' },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    } as never)) as { status?: { state: number } };
    expect(task.status?.state).toBe(3);
  });
});
