/**
 * The MCP endpoint's DNS rebinding check (`originRefusal`): a present Origin must be the endpoint's own, or a
 * loopback origin when the request came over loopback; over loopback the Host must name loopback. A refusal is a
 * 403 with a JSON-RPC error body, before the token check; clients that send no Origin pass.
 */
import { describe, expect, it } from 'vitest';
import type { HttpRequest } from '#shared/core/api/http.ts';
import { createMcpHttp, originRefusal } from '#shared/core/mcp/http.ts';

function request(headers: Record<string, string>): HttpRequest {
  return {
    method: 'POST',
    path: '/v1/workspaces/ws/mcp',
    headers,
    query: {},
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    caller: { principal: 'user:ann', workspaces: ['ws'] },
  };
}

describe('originRefusal', () => {
  it('lets clients without an Origin through (CLIs, SDKs, desktop clients)', () => {
    expect(originRefusal(request({ host: 'api.example.com' }), false)).toBeUndefined();
    expect(originRefusal(request({ host: '127.0.0.1:3000' }), true)).toBeUndefined();
  });

  it("accepts the endpoint's own origin, with the scheme the proxy in front reports", () => {
    const own = { host: 'api.example.com', 'x-forwarded-proto': 'https', origin: 'https://api.example.com' };
    expect(originRefusal(request(own), false)).toBeUndefined();
    expect(originRefusal(request({ ...own, origin: 'https://api.example.com:443' }), false)).toBeUndefined();
    expect(originRefusal(request({ ...own, origin: 'http://api.example.com' }), false)).toMatch(/Origin/);
  });

  it('refuses any other origin, malformed and opaque ones included', () => {
    for (const origin of [
      'https://evil.example',
      'null',
      'not a url',
      'https://api.example.com.evil.example',
    ]) {
      expect(originRefusal(request({ host: 'api.example.com', origin }), false)).toMatch(
        /Origin .* not allowed/,
      );
    }
  });

  it('accepts loopback origins on any port only for a request over loopback', () => {
    for (const origin of ['http://localhost:6274', 'http://127.0.0.1:5173', 'http://[::1]:8080']) {
      expect(originRefusal(request({ host: 'localhost:3000', origin }), true)).toBeUndefined();
      expect(originRefusal(request({ host: 'api.example.com', origin }), false)).toMatch(/not allowed/);
    }
  });

  it('refuses a request over loopback that names another host (a rebound DNS name)', () => {
    const rebound = { host: 'evil.example:3000', origin: 'http://evil.example:3000' };
    expect(originRefusal(request(rebound), false)).toBeUndefined(); // same-origin by its Host: only loopback tells
    expect(originRefusal(request(rebound), true)).toMatch(/Host "evil.example:3000" is not a loopback name/);
    expect(originRefusal(request({ host: 'evil.example:3000' }), true)).toMatch(/loopback name/);
    expect(originRefusal(request({}), true)).toMatch(/loopback name/);
    for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000', 'localhost']) {
      expect(originRefusal(request({ host }), true)).toBeUndefined();
    }
  });
});

describe('the MCP endpoint', () => {
  const mcp = (viaLoopback: boolean) =>
    createMcpHttp({
      api: async () => {
        throw new Error('not reached');
      },
      viaLoopback: () => viaLoopback,
    });

  it('answers a refused Origin with 403 and a JSON-RPC error, before the token check', async () => {
    for (const caller of [request({}).caller, undefined]) {
      const answer = await mcp(true)({
        ...request({ host: '127.0.0.1:3000', origin: 'https://evil.example' }),
        caller,
      });
      expect(answer.statusCode).toBe(403);
      expect(JSON.parse(String(answer.body))).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: 'Forbidden: Origin "https://evil.example" is not allowed' },
      });
    }
  });

  it('serves a loopback origin over loopback', async () => {
    const answer = await mcp(true)(
      request({
        host: '127.0.0.1:3000',
        origin: 'http://localhost:6274',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      }),
    );
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(String(answer.body))).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });
});
