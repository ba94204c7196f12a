/**
 * Both Cognito token shapes at the streaming routes, on the local stack started as `crumbs dev --oidc-issuer` starts
 * it (a real OpenID Connect issuer on loopback, test/support/oidc-issuer.ts): an ID token (`aud` = the client) and
 * an access token (`client_id`, no `aud`) each reach MCP (Streamable HTTP), A2A's `SendStreamingMessage` (the
 * official SDK's client) and the SSE route of a streamed answer — which subscribes to the delta channel with the
 * caller's own token, so the events server's check of the shape is on that path too — in the workspace the token
 * grants, and get a 403 (MCP, A2A, SSE) in another. The API and the channels alone: sign-in.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, inject, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import type { DeltaEvent } from '#shared/core/streaming/events.ts';
import { eventually, uniqueWorkspace } from '../support/local.ts';
import { OIDC_CLIENT_ID, signWith } from '../support/oidc-issuer.ts';

const crumbs = inject('crumbs');
const { issuer, privateJwk } = inject('oidc');
const now = () => Math.floor(Date.now() / 1000);

/** A JWT of the stack's issuer, valid for 5 minutes, granting `workspaces`, in one of Cognito's two shapes. */
function token(shape: 'id' | 'access', workspaces: readonly string[]) {
  return signWith(privateJwk, {
    iss: issuer,
    sub: `${shape}-streamer`,
    iat: now(),
    exp: now() + 300,
    token_use: shape,
    ...(shape === 'id' ? { aud: OIDC_CLIENT_ID } : { client_id: OIDC_CLIENT_ID, scope: 'openid' }),
    'crumbs:workspaces': [...workspaces],
  });
}

/** Defines an echoing agent (the offline model streams its words) as `bearer`, and waits until its rule is active. */
async function defineAgent(workspace: string, bearer: string, agent: string) {
  const c = new CrumbsClient({ endpoint: crumbs.api, token: bearer, workspace });
  const id = `agent-${agent}`;
  const written = await c.put(id, {
    schema_name: 'agent.def.v1',
    title: id,
    tags: [],
    context: { agent_id: agent, system_prompt: 'Echo.', model: 'offline/echo', max_tool_rounds: 0 },
  });
  await eventually(async () => {
    const d = (await c.definitions()).items.find((x) => x.id === id);
    return d && d.version === written.version && d.state === 'active' ? d : undefined;
  }, 30_000);
  return c;
}

function mcp(workspace: string, bearer: string) {
  return fetch(`${crumbs.api}/v1/workspaces/${workspace}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${bearer}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'token-shapes', version: '1' },
      },
    }),
  });
}

function a2aUrl(workspace: string, agent: string) {
  return `${crumbs.api}/a2a/workspaces/${workspace}/agents/${agent}`;
}

async function a2aClient(workspace: string, agent: string, bearer: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${bearer}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(`${a2aUrl(workspace, agent)}/.well-known/agent-card.json`, '');
}

describe.each(['id', 'access'] as const)('a %s token at the streaming routes', (shape) => {
  const ws = uniqueWorkspace(`stream-${shape}`);
  const other = uniqueWorkspace('stream-other');
  const own = token(shape, [ws]);

  it('MCP: initializes in the workspace it grants, 403 in another', async () => {
    const ok = await mcp(ws, own);
    expect(ok.status).toBe(200);
    const text = await ok.text();
    // JSON or one SSE frame, as the server chose: either way the initialize result names the server.
    expect(text).toContain('"serverInfo"');
    expect((await mcp(other, own)).status).toBe(403);
  });

  it('A2A: SendStreamingMessage streams the task to completion in its workspace; another workspace answers 403', async () => {
    await defineAgent(ws, own, 'echo');
    const client = await a2aClient(ws, 'echo', own);
    const states: number[] = [];
    for await (const event of client.sendMessageStream({
      message: {
        messageId: `m-${randomUUID()}`,
        contextId: '',
        taskId: '',
        role: 1,
        parts: [
          {
            content: { $case: 'text', value: 'stream me' },
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
      tenant: '',
    } as never)) {
      const payload = (event as { payload?: { $case: string; value: Record<string, unknown> } }).payload;
      if (payload?.$case === 'statusUpdate') states.push((payload.value.status as { state: number }).state);
      if (payload?.$case === 'task') states.push((payload.value.status as { state: number }).state);
    }
    expect(states.at(-1)).toBe(3);
    const refused = await fetch(a2aUrl(other, 'echo'), {
      method: 'POST',
      headers: { authorization: `Bearer ${own}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(refused.status).toBe(403);
  });

  it('SSE: the events route carries a streamed answer to it (subscribed with its token), 403 in another workspace', async () => {
    const c = await defineAgent(ws, own, 'sse');
    const streamId = randomUUID();
    const info = await c.streamInfo(streamId);
    expect(info?.events_url).toBe(`/v1/workspaces/${ws}/streams/${streamId}/events`);
    const refused = await fetch(`${crumbs.api}/v1/workspaces/${other}/streams/${streamId}/events`, {
      headers: { authorization: `Bearer ${own}` },
    });
    expect(refused.status).toBe(403);
    const response = await fetch(`${crumbs.api}${info?.events_url}`, {
      headers: { authorization: `Bearer ${own}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await c.create({
      schema_name: 'agent.request.v1',
      context: { agent: 'sse', message: 'hello stream', stream_id: streamId },
    });
    const events = (await response.text())
      .split('\n\n')
      .flatMap((frame) => frame.split('\n').filter((l) => l.startsWith('data: ')))
      .map((l) => JSON.parse(l.slice(6)) as DeltaEvent);
    expect(events.some((e) => e.type === 'delta')).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'final', status: 'completed' });
  });
});
