/**
 * An A2A file part (`raw` bytes with a media type and file name), sent with the official SDK's client, arrives as an
 * attachment of the workspace that the agent's model sees as an image part; a file part by url is refused.
 */
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { png } from '../../support/attachment-files.ts';
import { eventually, localStack, uniqueWorkspace } from '../../support/local.ts';

async function a2aClient(workspace: string, agent: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${localStack().token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(
    `${localStack().api}/a2a/workspaces/${workspace}/agents/${agent}/.well-known/agent-card.json`,
    '',
  );
}

const part = (
  content:
    | { $case: 'text'; value: string }
    | { $case: 'raw'; value: Buffer }
    | { $case: 'url'; value: string },
  mediaType: string,
  filename = '',
) => ({
  content,
  metadata: undefined,
  filename,
  mediaType,
});

const message = (parts: ReturnType<typeof part>[]) => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  contextId: '',
  taskId: '',
  role: 1,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

describe('A2A file parts', () => {
  it('stores a raw file part as an attachment the agent sees, and refuses one by url', async () => {
    const ws = uniqueWorkspace('a2a-file');
    const c = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    const written = await c.put('agent-viewer', {
      schema_name: 'agent.def.v1',
      title: 'viewer',
      tags: [],
      context: { agent_id: 'viewer', system_prompt: 'Look.', model: 'openai-compatible/describe-parts-a2a' },
    });
    await eventually(async () => {
      const d = (await c.definitions()).items.find((x) => x.id === 'agent-viewer');
      return d && d.version === written.version && d.state === 'active' ? d : undefined;
    }, 30_000);
    const client = await a2aClient(ws, 'viewer');
    const image = png(9, 9, 12);
    const sent = (await client.sendMessage({
      tenant: '',
      message: message([
        part({ $case: 'text', value: 'what is this?' }, 'text/plain'),
        part({ $case: 'raw', value: image }, 'image/png', 'photo.png'),
      ]),
      configuration: undefined,
      metadata: undefined,
    })) as {
      id: string;
      status: { state: number };
      artifacts: { parts: { content: { value: string } }[] }[];
    };
    expect(sent.status.state).toBe(3);
    expect(sent.artifacts[0]?.parts[0]?.content.value).toBe(
      `parts: text, image_url(image/png, ${image.length} bytes)`,
    );
    const request = await c.getFull(sent.id);
    const attachments = request.context.attachments as {
      $attachment: { name: string; media_type: string; bytes: number };
    }[];
    expect(attachments[0]?.$attachment).toMatchObject({
      name: 'photo.png',
      media_type: 'image/png',
      bytes: image.length,
    });

    await expect(
      client.sendMessage({
        tenant: '',
        message: message([
          part({ $case: 'url', value: 'http://169.254.169.254/latest/meta-data/' }, 'image/png'),
        ]),
        configuration: undefined,
        metadata: undefined,
      }),
    ).rejects.toThrow(/not fetched/);
  });
});
