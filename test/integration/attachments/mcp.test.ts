/**
 * MCP and attachments, with the official SDK's client against the local stack: a tool whose output refers to an
 * image answers with `image` content (its bytes), a PDF as an embedded resource; an attachment is a resource whose
 * contents are its bytes; another workspace's attachment is not found.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { pdf, png } from '../../support/attachment-files.ts';
import { eventually, localStack, uniqueWorkspace } from '../../support/local.ts';

const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
});

async function connect(workspace: string): Promise<Client> {
  const client = new Client({ name: 'attachments-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${localStack().api}/v1/workspaces/${workspace}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${localStack().token}` } },
    }),
  );
  clients.push(client);
  return client;
}

describe('MCP tool results and resources carry attachments', () => {
  it('answers a tool call whose output refers to an image with image content, and serves attachments as resources', async () => {
    const ws = uniqueWorkspace('mcp-att');
    const c = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    const written = await c.put('tool-echo', {
      schema_name: 'tool.def.v1',
      title: 'echo',
      tags: [],
      context: { name: 'echo', description: 'Echoes its input.', implementation: 'echo' },
    });
    await eventually(async () => {
      const d = (await c.definitions()).items.find((x) => x.id === 'tool-echo');
      return d && d.version === written.version && d.state === 'active' ? d : undefined;
    }, 30_000);
    const image = png(7, 7, 5);
    const doc = pdf('attached');
    const shot = await c.attach(image, 'image/png', 'shot.png');
    const report = await c.attach(doc, 'application/pdf', 'report.pdf');

    const mcp = await connect(ws);
    const result = await mcp.callTool({
      name: 'echo',
      arguments: { shot: { $attachment: shot }, report: { $attachment: report } },
    });
    const content = result.content as {
      type: string;
      data?: string;
      mimeType?: string;
      resource?: { blob?: string; mimeType?: string };
    }[];
    expect(content.map((p) => p.type).sort()).toEqual(['image', 'resource', 'text']);
    expect(content.find((p) => p.type === 'image')).toEqual({
      type: 'image',
      data: image.toString('base64'),
      mimeType: 'image/png',
    });
    expect(content.find((p) => p.type === 'resource')!.resource).toMatchObject({
      mimeType: 'application/pdf',
      blob: doc.toString('base64'),
    });

    const read = await mcp.readResource({ uri: `crumbs://${ws}/attachments/${shot.id}` });
    expect(read.contents[0]).toMatchObject({ mimeType: 'image/png', blob: image.toString('base64') });

    const other = await connect(uniqueWorkspace('mcp-other'));
    await expect(other.readResource({ uri: `crumbs://${ws}/attachments/${shot.id}` })).rejects.toThrow(
      /not found/i,
    );
  });
});
