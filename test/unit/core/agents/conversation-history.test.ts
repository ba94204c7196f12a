import { describe, expect, it } from 'vitest';
import {
  conversationHistory,
  conversationTag,
  HISTORY_ENTRIES,
} from '#shared/core/agents/conversation-history.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';

const by = { principal: 'agent:reporter' };

/** A conversation as the modes write it: a request, then the plan or deliverable (and answer) it produced. */
async function exchange(
  store: InMemoryBreadcrumbStore,
  ws: string,
  n: number,
  artifact: { schema: string; content: Record<string, unknown>; conversation?: string },
) {
  const conversation = artifact.conversation ?? 'conv-1';
  const { breadcrumb: request } = await store.create(
    ws,
    {
      schema_name: 'agent.request.v1',
      title: `ask ${n}`,
      tags: [],
      context: {
        agent: 'reporter',
        message: `message ${n}`,
        request_id: `r${n}`,
        conversation_id: conversation,
      },
    },
    { principal: 'user:ann' },
  );
  await store.create(
    ws,
    {
      schema_name: artifact.schema,
      title: `artifact ${n}`,
      tags: [conversationTag(conversation)],
      context: { agent_id: 'reporter', request_id: `r${n}`, trigger_id: request.id, ...artifact.content },
    },
    by,
  );
}

describe('conversationHistory', () => {
  it('gives a plan or build the conversation’s earlier plans, deliverables, answers and messages, newest first', async () => {
    const store = new InMemoryBreadcrumbStore();
    await exchange(store, 'ws', 1, {
      schema: 'agent.plan.v1',
      content: { mode: 'plan', plan: { steps: ['a'] } },
    });
    await exchange(store, 'ws', 2, {
      schema: 'agent.deliverable.v1',
      content: { mode: 'build', type: 'report', content: '## Summary\nQ3 was fine' },
    });
    await exchange(store, 'ws', 3, {
      schema: 'agent.response.v1',
      content: { mode: 'converse', message: 'glad to help' },
    });
    // Another conversation, and the request being answered now, are not part of it.
    await exchange(store, 'ws', 4, {
      schema: 'agent.plan.v1',
      content: { plan: 'other' },
      conversation: 'conv-2',
    });
    await exchange(store, 'ws', 5, { schema: 'agent.plan.v1', content: { plan: 'this one' } });

    const text = await conversationHistory(store, 'ws', { conversationId: 'conv-1', requestId: 'r5' });
    expect(text).toBeDefined();
    const at = (s: string) => text!.indexOf(s);
    for (const part of ['user: message 1', 'plan by reporter: {"steps":["a"]}', 'user: message 2']) {
      expect(text).toContain(part);
    }
    expect(text).toContain('deliverable report (v1) by reporter: ## Summary\nQ3 was fine');
    expect(text).toContain('reporter answered: glad to help');
    expect(text).not.toContain('this one');
    expect(text).not.toContain('other');
    expect(at('message 3')).toBeLessThan(at('message 2'));
    expect(at('message 2')).toBeLessThan(at('message 1'));
  });

  it('reads nothing without a named conversation, and nothing of another workspace', async () => {
    const store = new InMemoryBreadcrumbStore();
    await exchange(store, 'ws-a', 1, { schema: 'agent.plan.v1', content: { plan: 'secret plan' } });
    expect(await conversationHistory(store, 'ws-a', { requestId: 'r9' })).toBeUndefined();
    expect(
      await conversationHistory(store, 'ws-b', { conversationId: 'conv-1', requestId: 'r9' }),
    ).toBeUndefined();
  });

  it(`reads at most the ${HISTORY_ENTRIES} newest entries, however long the conversation`, async () => {
    const store = new InMemoryBreadcrumbStore();
    for (let n = 1; n <= HISTORY_ENTRIES + 5; n++) {
      await exchange(store, 'ws', n, { schema: 'agent.plan.v1', content: { plan: `plan ${n}` } });
    }
    const text = await conversationHistory(store, 'ws', { conversationId: 'conv-1', requestId: 'now' });
    expect(text).toContain(`plan ${HISTORY_ENTRIES + 5}`);
    expect(text).toMatch(/^plan by reporter: plan 6$/m);
    expect(text).not.toMatch(/^plan by reporter: plan 5$/m);
    expect(text!.match(/^### request /gm)).toHaveLength(HISTORY_ENTRIES);
  });
});
