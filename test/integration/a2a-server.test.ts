/**
 * crumbs agents as A2A v1.0 agents, end to end on the shared local stack, with the official SDK's client (JSON-RPC
 * binding): the card needs the token unless the definition opts into a public one; `SendMessage` writes the
 * agent.request.v1 an API user would write and answers with the completed task (its answer as an artifact), or a
 * working task when asked to return at once, which `GetTask` then reads; a plain request's task cannot be cancelled
 * (nor an ended one: "has ended"); `message/send` (A2A 0.3's name) is served by the SDK's compat handler; another
 * caller's task is not found; `a2a: false` hides an agent. And crumbs' own external agent, in another workspace,
 * calls an agent served this way with a scoped token from its secrets.
 */
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { A2A_CALLER_WORKSPACE, SCOPED_TOKEN, SCOPED_WORKSPACE } from '../support/shared-stack.ts';

const ws = uniqueWorkspace('a2a-served');

function crumbsClient(workspace: string, token = localStack().token): CrumbsClient {
  return new CrumbsClient({ endpoint: localStack().api, token, workspace });
}

async function applyAndWait(c: CrumbsClient, id: string, context: Record<string, unknown>) {
  const written = await c.put(id, { schema_name: 'agent.def.v1', title: id, tags: [], context });
  await eventually(async () => {
    const d = (await c.definitions()).items.find((x) => x.id === id);
    return d && d.version === written.version && d.state === 'active' ? d : undefined;
  }, 30_000);
}

function cardUrl(workspace: string, agent: string): string {
  return `${localStack().api}/a2a/workspaces/${workspace}/agents/${agent}/.well-known/agent-card.json`;
}

async function a2aClient(workspace: string, agent: string, token = localStack().token) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(cardUrl(workspace, agent), '');
}

function message(text: string, extra: Record<string, unknown> = {}) {
  return {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    contextId: '',
    taskId: '',
    role: 1,
    parts: [
      {
        content: { $case: 'text' as const, value: text },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

describe('A2A server', () => {
  it('serves a card behind the token, answers SendMessage with a completed task, and reads it back', async () => {
    const c = crumbsClient(ws);
    await applyAndWait(c, 'agent-helper', {
      agent_id: 'helper',
      description: 'Helps.',
      system_prompt: 'Help.',
      model: 'offline/echo',
    });
    expect((await fetch(cardUrl(ws, 'helper'))).status).toBe(401);

    const client = await a2aClient(ws, 'helper');
    const card = await client.getAgentCard();
    expect(card).toMatchObject({ name: 'helper', description: 'Helps.', capabilities: { streaming: true } });
    expect(card.supportedInterfaces[0]?.url).toBe(`${localStack().api}/a2a/workspaces/${ws}/agents/helper`);

    const sent = await client.sendMessage({
      tenant: '',
      message: message('What is crumbs?'),
      configuration: undefined,
      metadata: undefined,
    });
    const task = sent as {
      id: string;
      status: { state: number };
      artifacts: { parts: { content: { $case: string; value: string } }[] }[];
    };
    expect(task.status.state).toBe(3);
    expect(task.artifacts[0]?.parts[0]?.content.$case).toBe('text');
    expect((task.artifacts[0]?.parts[0]?.content.value ?? '').length).toBeGreaterThan(0);
    const request = await c.getFull(task.id);
    expect(request).toMatchObject({
      schema_name: 'agent.request.v1',
      created_by: 'user:local',
      context: { agent: 'helper', message: 'What is crumbs?' },
    });
    expect(await client.getTask({ tenant: '', id: task.id, historyLength: 0 })).toMatchObject({
      id: task.id,
      status: { state: 3 },
    });

    // Asked to return at once: a working task, completed later.
    const quick = (await client.sendMessage({
      tenant: '',
      message: message('And again?'),
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      },
      metadata: undefined,
    })) as { id: string; status: { state: number } };
    expect(quick.status.state).toBe(2);
    await eventually(async () => {
      const t = await client.getTask({ tenant: '', id: quick.id, historyLength: 0 });
      return t.status?.state === 3 ? t : undefined;
    }, 30_000);

    await expect(client.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(
      /cannot be cancelled: it has ended \(completed\)/,
    );
    const legacy = await fetch(`${localStack().api}/a2a/workspaces/${ws}/agents/helper`, {
      method: 'POST',
      headers: { authorization: `Bearer ${localStack().token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: 'm-legacy',
            role: 'user',
            parts: [{ kind: 'text', text: 'Hi' }],
          },
        },
      }),
    });
    expect(await legacy.json()).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: { kind: 'task', status: { state: 'completed' } },
    });
    await expect(client.getTask({ tenant: '', id: 'NO-SUCH-TASK', historyLength: 0 })).rejects.toThrow(
      /no task/,
    );
  });

  it('hides agents that opt out, serves opted-in public cards without a token, and refuses other workspaces', async () => {
    const c = crumbsClient(ws);
    await applyAndWait(c, 'agent-private', { agent_id: 'private', a2a: false, model: 'offline/echo' });
    await applyAndWait(c, 'agent-open', {
      agent_id: 'open',
      a2a: { public_card: true },
      model: 'offline/echo',
    });
    const auth = { authorization: `Bearer ${localStack().token}` };
    expect((await fetch(cardUrl(ws, 'private'), { headers: auth })).status).toBe(404);
    const publicUrl = (agent: string) =>
      `${localStack().api}/a2a/public/workspaces/${ws}/agents/${agent}/.well-known/agent-card.json`;
    const open = await fetch(publicUrl('open'));
    expect(open.status).toBe(200);
    expect(await open.json()).toMatchObject({ name: 'open' });
    expect((await fetch(publicUrl('helper'))).status).toBe(404);
    expect((await fetch(publicUrl('private'))).status).toBe(404);
    // The scoped token may use only its own workspace.
    expect(
      (await fetch(cardUrl(ws, 'helper'), { headers: { authorization: `Bearer ${SCOPED_TOKEN}` } })).status,
    ).toBe(403);
    // Malformed JSON-RPC is a JSON-RPC error, not a 5xx.
    const bad = await fetch(`${localStack().api}/a2a/workspaces/${ws}/agents/helper`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":42}}',
    });
    expect(bad.status).toBeLessThan(500);
    expect(await bad.json()).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
  });

  it("is called by crumbs' own external agent from another workspace, with a scoped token from its secrets", async () => {
    const served = crumbsClient(SCOPED_WORKSPACE, SCOPED_TOKEN);
    const agent = `served-${Math.random().toString(36).slice(2, 8)}`;
    await applyAndWait(served, `agent-${agent}`, {
      agent_id: agent,
      system_prompt: 'Help.',
      model: 'offline/echo',
    });

    const caller = crumbsClient(A2A_CALLER_WORKSPACE);
    await applyAndWait(caller, 'agent-partner', {
      agent_id: 'partner',
      type: 'external',
      transport: {
        kind: 'external',
        external: {
          endpoint: `${localStack().api}/a2a/workspaces/${SCOPED_WORKSPACE}/agents/${agent}`,
          agent_card_url: cardUrl(SCOPED_WORKSPACE, agent),
          protocol: 'a2a',
          authentication: { type: 'bearer', secret_ref: 'crumbs-token' },
        },
      },
    });
    const requestId = `r-${Math.random().toString(36).slice(2, 10)}`;
    await caller.create({
      schema_name: 'agent.request.v1',
      title: 'ask partner',
      tags: [],
      context: { agent: 'partner', request_id: requestId, message: 'Hello from another workspace' },
    });
    const answer = await eventually(
      async () =>
        (
          await caller.list({
            schema_name: 'agent.response.v1',
            tag: `request:${requestId}`,
            limit: 1,
            view: 'full',
          })
        ).items[0],
      40_000,
    );
    expect(answer.context).toMatchObject({ status: 'success' });
    expect(String(answer.context.text ?? '').length).toBeGreaterThan(0);
    // The served workspace holds the request its agent answered, written by the scoped token's caller.
    const requests = await served.list({
      schema_name: 'agent.request.v1',
      tag: `agent:${agent}`,
      limit: 5,
      view: 'full',
    });
    expect(requests.items[0]).toMatchObject({ context: { message: 'Hello from another workspace' } });
  });
});
