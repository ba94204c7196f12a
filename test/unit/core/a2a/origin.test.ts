/**
 * The A2A endpoint applies the MCP endpoint's DNS rebinding rule (`originRefusal`): over loopback, a page of another
 * origin or a rebound DNS name (a Host that is not loopback) gets a 403 with a JSON-RPC error before the token
 * check, for the JSON-RPC route and the card alike; clients without an Origin, the endpoint's own origin and local
 * tools' loopback origins pass; an opted-in public card, readable by anyone, is served whatever the Origin.
 */
import { describe, expect, it } from 'vitest';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import type { Caller, HttpRequest } from '#shared/core/api/http.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';

const WS = 'ws';
const ann: Caller = { principal: 'user:ann', workspaces: [WS] };
const GET_TASK = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'nothing' } });

async function setup(viaLoopback: boolean) {
  const { store, api } = inMemoryApi();
  await activeDefinition(store, WS, 'agent-helper', 'agent.def.v1', {
    agent_id: 'helper',
    model: 'offline/echo',
    a2a: { public_card: true },
  });
  // The configured endpoint (crumbs dev's own, or the API's on AWS): its origin is the one a page may call from.
  const baseUrl = viaLoopback ? 'http://127.0.0.1:3000' : 'https://api.example.com/prod';
  return createA2aHttp({ api, baseUrl, viaLoopback: () => viaLoopback });
}

function post(headers: Record<string, string>, caller: Caller | undefined = ann): HttpRequest {
  return {
    method: 'POST',
    path: `/a2a/workspaces/${WS}/agents/helper`,
    headers: { 'content-type': 'application/json', ...headers },
    query: {},
    body: GET_TASK,
    caller,
  };
}

describe('the A2A endpoint against DNS rebinding', () => {
  it('refuses another origin and a rebound Host with 403 and a JSON-RPC error, before the token check', async () => {
    const a2a = await setup(true);
    for (const caller of [ann, undefined]) {
      const evil = await a2a(post({ host: '127.0.0.1:3000', origin: 'https://evil.example' }, caller));
      expect(evil.statusCode).toBe(403);
      expect(JSON.parse(String(evil.body))).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: 'Forbidden: Origin "https://evil.example" is not allowed' },
      });
    }
    const rebound = await a2a(post({ host: 'evil.example:3000', origin: 'http://evil.example:3000' }));
    expect(rebound.statusCode).toBe(403);
    expect(JSON.parse(String(rebound.body)).error.message).toMatch(/is not a loopback name/);
    const card = await a2a({
      ...post({ host: '127.0.0.1:3000', origin: 'https://evil.example' }),
      method: 'GET',
      path: `/a2a/workspaces/${WS}/agents/helper/.well-known/agent-card.json`,
      body: undefined,
    });
    expect(card.statusCode).toBe(403);
  });

  it("serves clients without an Origin, the endpoint's own origin and loopback tools", async () => {
    const a2a = await setup(true);
    const cases: Record<string, string>[] = [
      { host: '127.0.0.1:3000' },
      { host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3000' },
      { host: 'localhost:3000', origin: 'http://localhost:6274' },
    ];
    for (const headers of cases) {
      const answer = await a2a(post(headers));
      expect(answer.statusCode, JSON.stringify(headers)).toBe(200);
      expect(JSON.parse(String(answer.body))).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        error: expect.anything(),
      });
    }
  });

  it('behind API Gateway (not loopback) refuses loopback origins too; a public card is served to anyone', async () => {
    const a2a = await setup(false);
    const local = await a2a(post({ host: 'api.example.com', origin: 'http://localhost:6274' }));
    expect(local.statusCode).toBe(403);
    const own = await a2a(
      post({ host: 'api.example.com', 'x-forwarded-proto': 'https', origin: 'https://api.example.com' }),
    );
    expect(own.statusCode).toBe(200);
    const card = await a2a({
      method: 'GET',
      path: `/a2a/public/workspaces/${WS}/agents/helper/.well-known/agent-card.json`,
      headers: { host: 'api.example.com', origin: 'https://evil.example' },
      query: {},
      body: undefined,
      caller: undefined,
    });
    expect(card.statusCode).toBe(200);
  });
});
