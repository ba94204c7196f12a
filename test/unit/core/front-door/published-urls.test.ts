/**
 * The URLs the protocol servers publish — MCP's protected-resource metadata (RFC 9728) and the resource_metadata its
 * 401 names, an A2A agent's card, public or not — are built from the API's configured base URL. A client that sends
 * another `Host`, `X-Forwarded-Proto` or `X-Forwarded-Host` does not get its own host written into them (where a
 * card is cached, or read by someone else, that would point others at the client's server).
 */
import { describe, expect, it } from 'vitest';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import type { HttpRequest } from '#shared/core/api/http.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';

const BASE = 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod';
const WS = 'team-a';
const SPOOFED = { host: 'evil.example', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'evil.example' };

function get(path: string, caller?: HttpRequest['caller']): HttpRequest {
  return { method: 'GET', path, headers: { ...SPOOFED }, query: {}, body: undefined, caller };
}

describe('published URLs', () => {
  it("name the configured base in MCP's protected-resource metadata and its 401", async () => {
    const { api } = inMemoryApi();
    const mcp = createMcpHttp({ api, baseUrl: BASE, issuer: 'https://issuer.example.com/pool' });
    const metadata = await mcp(get(`/.well-known/oauth-protected-resource/v1/workspaces/${WS}/mcp`));
    expect(JSON.parse(String(metadata.body))).toMatchObject({
      resource: `${BASE}/v1/workspaces/${WS}/mcp`,
      authorization_servers: ['https://issuer.example.com/pool'],
    });
    const refused = await mcp({ ...get(`/v1/workspaces/${WS}/mcp`), method: 'POST', body: '{}' });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toBe(
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/v1/workspaces/${WS}/mcp"`,
    );
    expect(JSON.stringify(metadata) + JSON.stringify(refused)).not.toContain('evil.example');
  });

  it("name the configured base in an agent's card, behind the token and public", async () => {
    const { store, api } = inMemoryApi();
    await activeDefinition(store, WS, 'agent-helper', 'agent.def.v1', {
      agent_id: 'helper',
      model: 'offline/echo',
      a2a: { public_card: true },
    });
    const a2a = createA2aHttp({ api, baseUrl: BASE });
    const caller = { principal: 'user:ann', workspaces: [WS] };
    for (const card of [
      await a2a(get(`/a2a/workspaces/${WS}/agents/helper/.well-known/agent-card.json`, caller)),
      await a2a(get(`/a2a/public/workspaces/${WS}/agents/helper/.well-known/agent-card.json`)),
    ]) {
      expect(card.statusCode).toBe(200);
      const body = JSON.parse(String(card.body)) as { supportedInterfaces: { url: string }[] };
      expect(body.supportedInterfaces.map((i) => i.url)).toEqual([
        `${BASE}/a2a/workspaces/${WS}/agents/helper`,
      ]);
      expect(String(card.body)).not.toContain('evil.example');
    }
  });
});
