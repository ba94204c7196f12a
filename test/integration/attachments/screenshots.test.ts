/**
 * 50 screenshots of about 150 KB flow through one agent conversation: each reaches the model as an image part,
 * and no table item of the workspace exceeds 400 KB nor any change event (built from the items as the publisher
 * builds it) 256 KB — files travel as references, never as bytes.
 */
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { toRecord } from '#shared/adapters/dynamodb/items.ts';
import { changeEntry } from '#shared/domain/change-event.ts';
import { noisePng } from '../../support/attachment-files.ts';
import { eventually, localStack, uniqueWorkspace, workspaceItems } from '../../support/local.ts';

const SCREENSHOTS = 50;

describe('a thread of screenshots', () => {
  it('keeps every item under 400 KB and every event under 256 KB while 50 screenshots flow through it', async () => {
    const ws = uniqueWorkspace('shots');
    const c = new CrumbsClient({ endpoint: localStack().api, token: localStack().token, workspace: ws });
    const written = await c.put('agent-shots', {
      schema_name: 'agent.def.v1',
      title: 'shots',
      tags: [],
      context: {
        agent_id: 'shots',
        system_prompt: 'Describe.',
        model: 'openai-compatible/describe-parts-shots',
        subscriptions: {
          selectors: [{ schema_name: 'user.message.v1', role: 'trigger', all_tags: ['to:shots'] }],
        },
      },
    });
    await eventually(async () => {
      const d = (await c.definitions()).items.find((x) => x.id === 'agent-shots');
      return d && d.version === written.version && d.state === 'active' ? d : undefined;
    }, 30_000);

    const sizes: number[] = [];
    for (let i = 0; i < SCREENSHOTS; i++) {
      const shot = noisePng(224, 224, i + 1);
      sizes.push(shot.length);
      const ref = await c.attach(shot, 'image/png', `screen-${i}.png`);
      await c.create({
        schema_name: 'user.message.v1',
        tags: ['to:shots', 'conversation:shots'],
        context: { message: `screen ${i}`, conversation_id: 'shots', attachments: [{ $attachment: ref }] },
      });
    }
    expect(Math.min(...sizes)).toBeGreaterThan(140 * 1024);
    const answers = await eventually(async () => {
      const page = await c.list({ schema_name: 'agent.response.v1', limit: 100, view: 'full' });
      return page.items.length >= SCREENSHOTS ? page.items : undefined;
    }, 120_000);
    for (const a of answers)
      expect(String(a.context.message)).toMatch(/^parts: text, image_url\(image\/png, \d+ bytes\)$/);

    const items = await workspaceItems(ws);
    const largestItem = Math.max(...items.map((i) => Buffer.byteLength(JSON.stringify(i))));
    expect(largestItem).toBeLessThan(400 * 1024);
    const events = items
      .filter((i) => i.kind === 'breadcrumb')
      .map((i) => Buffer.byteLength(JSON.stringify(changeEntry('Breadcrumb Created', toRecord(i)).detail)));
    expect(events.length).toBeGreaterThanOrEqual(2 * SCREENSHOTS);
    expect(Math.max(...events)).toBeLessThan(256 * 1024);
  }, 240_000);
});
