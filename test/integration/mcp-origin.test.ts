/**
 * DNS rebinding protection of `crumbs dev`'s MCP and A2A endpoints (on loopback), end to end through the local API
 * server: a browser page of another origin gets a 403 with a JSON-RPC error, so does a rebound DNS name (its Host is
 * not a loopback name); a client that sends no Origin, the endpoint's own origin and a local tool's loopback origin
 * pass. Both endpoints keep one rule (`shared/core/api/origin.ts`).
 */
import { request as httpRequest } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';

const ws = uniqueWorkspace('mcp-origin');
const PING = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });

const ENDPOINTS = {
  mcp: { path: () => `/v1/workspaces/${ws}/mcp`, body: PING },
  a2a: {
    path: () => `/a2a/workspaces/${ws}/agents/greeter`,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'no-such-task' } }),
  },
} as const;

/** A POST with the given headers, Host included (fetch would set its own). */
function post(
  headers: Record<string, string>,
  endpoint: keyof typeof ENDPOINTS = 'mcp',
): Promise<{ status: number; body: string }> {
  const url = new URL(`${localStack().api}${ENDPOINTS[endpoint].path()}`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: {
          host: url.host,
          authorization: `Bearer ${localStack().token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(ENDPOINTS[endpoint].body);
  });
}

describe("crumbs dev's MCP endpoint against DNS rebinding", () => {
  it('refuses a page of another origin with 403 and a JSON-RPC error', async () => {
    const answer = await post({ origin: 'https://evil.example' });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32000,
        message: expect.stringMatching(/Origin "https:\/\/evil.example" is not allowed/),
      },
    });
  });

  it('refuses a rebound DNS name even when the page is same-origin with it', async () => {
    const port = new URL(localStack().api).port;
    const answer = await post({ host: `evil.example:${port}`, origin: `http://evil.example:${port}` });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).error.message).toMatch(/is not a loopback name/);
  });

  it("serves clients without an Origin, the endpoint's own origin and local tools' loopback origins", async () => {
    const own = new URL(localStack().api).origin;
    const cases: Record<string, string>[] = [{}, { origin: own }, { origin: 'http://localhost:6274' }];
    for (const headers of cases) {
      const answer = await post(headers);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    }
  });
});

describe("crumbs dev's A2A endpoint against DNS rebinding: the MCP endpoint's rule", () => {
  beforeAll(async () => {
    const { api: endpoint, token } = localStack();
    const c = new CrumbsClient({ endpoint, token, workspace: ws });
    const written = await c.put('agent-greeter', {
      schema_name: 'agent.def.v1',
      title: 'greeter',
      tags: [],
      context: { agent_id: 'greeter', model: 'offline/echo' },
    });
    await eventually(async () => {
      const d = (await c.definitions()).items.find((x) => x.id === 'agent-greeter');
      return d && d.version === written.version && d.state === 'active' ? d : undefined;
    }, 30_000);
  }, 60_000);

  it('refuses a page of another origin and a rebound DNS name with 403 and a JSON-RPC error', async () => {
    const evil = await post({ origin: 'https://evil.example' }, 'a2a');
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body)).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32000,
        message: expect.stringMatching(/Origin "https:\/\/evil.example" is not allowed/),
      },
    });
    const port = new URL(localStack().api).port;
    const rebound = await post(
      { host: `evil.example:${port}`, origin: `http://evil.example:${port}` },
      'a2a',
    );
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.message).toMatch(/is not a loopback name/);
  });

  it("serves clients without an Origin, the endpoint's own origin and local tools' loopback origins", async () => {
    const own = new URL(localStack().api).origin;
    const cases: Record<string, string>[] = [{}, { origin: own }, { origin: 'http://localhost:6274' }];
    for (const headers of cases) {
      const answer = await post(headers, 'a2a');
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        error: { message: expect.stringMatching(/no task/) },
      });
    }
  });
});
