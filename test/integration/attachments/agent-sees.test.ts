/**
 * An image attached to a message reaches the agent's model as an image part (the scripted OpenAI-compatible server
 * describes the parts it received), and an image of another workspace named in a message is never read.
 */
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { png } from '../../support/attachment-files.ts';
import { eventually, localStack, uniqueWorkspace } from '../../support/local.ts';

function client(workspace: string): CrumbsClient {
  const { api, token } = localStack();
  return new CrumbsClient({ endpoint: api, token, workspace });
}

async function applyAgent(c: CrumbsClient, model: string): Promise<void> {
  const written = await c.put('agent-looker', {
    schema_name: 'agent.def.v1',
    title: 'looker',
    tags: [],
    context: {
      agent_id: 'looker',
      system_prompt: 'Describe what you are shown.',
      model,
      subscriptions: {
        selectors: [{ schema_name: 'user.message.v1', role: 'trigger', all_tags: ['to:looker'] }],
      },
    },
  });
  await eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: 'definition:agent-looker',
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= written.version && s.state === 'active' ? s : undefined;
  }, 30_000);
}

describe('an agent sees the files of its message', () => {
  it('hands an attached image to an OpenAI-compatible model as an image part', async () => {
    const c = client(uniqueWorkspace('sees'));
    await applyAgent(c, 'openai-compatible/describe-parts-image');
    const image = png(6, 6, 77);
    const ref = await c.attach(image, 'image/png', 'screen.png');
    const message = await c.create({
      schema_name: 'user.message.v1',
      tags: ['to:looker'],
      context: { message: 'what is on my screen?', attachments: [{ $attachment: ref }] },
    });
    const answer = await eventually(
      async () =>
        (
          await c.list({
            schema_name: 'agent.response.v1',
            tag: `thread:${message.id}`,
            limit: 1,
            view: 'full',
          })
        ).items[0],
      60_000,
    );
    expect(String(answer.context.message)).toBe(`parts: text, image_url(image/png, ${image.length} bytes)`);
  });

  it("answers with an error, having read nothing, when a message names another workspace's attachment", async () => {
    const victim = client(uniqueWorkspace('victim'));
    const ref = await victim.attach(png(6, 6, 78), 'image/png', 'secret.png');
    const c = client(uniqueWorkspace('thief'));
    await applyAgent(c, 'openai-compatible/describe-parts-thief');
    const message = await c.create({
      schema_name: 'user.message.v1',
      tags: ['to:looker'],
      context: { message: 'describe it', attachments: [{ $attachment: ref }] },
    });
    const answered = await eventually(async () => {
      for (const schema of ['agent.response.v1', 'system.error.v1', 'agent.error.v1']) {
        const item = (
          await c.list({ schema_name: schema, tag: `thread:${message.id}`, limit: 1, view: 'full' })
        ).items[0];
        if (item) return item;
      }
      return undefined;
    }, 60_000);
    expect(JSON.stringify(answered.context)).not.toContain('image_url');
    expect(JSON.stringify(answered.context)).toMatch(/no attachment/);
  });
});
