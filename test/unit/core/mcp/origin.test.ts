/**
 * The MCP endpoint's DNS rebinding check (`originRefusal`): a present Origin must be the endpoint's own — the
 * origin of the API's configured base URL, whatever the request's Host or X-Forwarded-Proto say — or a loopback
 * origin when the request came over loopback; over loopback the Host must name loopback. A refusal is a 403 with a
 * JSON-RPC error body, before the token check; clients that send no Origin pass.
 */
import { describe, expect, it } from 'vitest';
import type { HttpRequest } from '#shared/core/api/http.ts';
import { originRefusal } from '#shared/core/api/origin.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';

const BASE = 'https://api.example.com/prod';
const LOCAL = 'http://127.0.0.1:3000';

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
    expect(originRefusal(request({ host: 'api.example.com' }), false, BASE)).toBeUndefined();
    expect(originRefusal(request({ host: '127.0.0.1:3000' }), true, LOCAL)).toBeUndefined();
  });

  it("accepts the configured endpoint's origin, and no other whatever Host and X-Forwarded-Proto claim", () => {
    const own = { host: 'api.example.com', origin: 'https://api.example.com' };
    expect(originRefusal(request(own), false, BASE)).toBeUndefined();
    expect(
      originRefusal(request({ ...own, origin: 'https://api.example.com:443' }), false, BASE),
    ).toBeUndefined();
    expect(originRefusal(request({ ...own, origin: 'http://api.example.com' }), false, BASE)).toMatch(
      /Origin/,
    );
    // A client naming another host and scheme does not make that origin the endpoint's.
    const spoofed = { host: 'evil.example', 'x-forwarded-proto': 'http', origin: 'http://evil.example' };
    expect(originRefusal(request(spoofed), false, BASE)).toMatch(/not allowed/);
  });

  it('refuses any other origin, malformed and opaque ones included', () => {
    for (const origin of [
      'https://evil.example',
      'null',
      'not a url',
      'https://api.example.com.evil.example',
    ]) {
      expect(originRefusal(request({ host: 'api.example.com', origin }), false, BASE)).toMatch(
        /Origin .* not allowed/,
      );
    }
  });

  it('accepts loopback origins on any port only for a request over loopback', () => {
    for (const origin of ['http://localhost:6274', 'http://127.0.0.1:5173', 'http://[::1]:8080']) {
      expect(originRefusal(request({ host: 'localhost:3000', origin }), true, LOCAL)).toBeUndefined();
      expect(originRefusal(request({ host: 'api.example.com', origin }), false, BASE)).toMatch(/not allowed/);
    }
  });

  it('refuses a request over loopback that names another host (a rebound DNS name)', () => {
    const rebound = { host: 'evil.example:3000', origin: 'http://evil.example:3000' };
    // Its Origin matches its own Host, but not the configured endpoint: refused without the loopback check too.
    expect(originRefusal(request(rebound), false, BASE)).toMatch(/not allowed/);
    expect(originRefusal(request(rebound), true, LOCAL)).toMatch(
      /Host "evil.example:3000" is not a loopback name/,
    );
    expect(originRefusal(request({ host: 'evil.example:3000' }), true, LOCAL)).toMatch(/loopback name/);
    expect(originRefusal(request({}), true, LOCAL)).toMatch(/loopback name/);
    for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000', 'localhost']) {
      expect(originRefusal(request({ host }), true, LOCAL)).toBeUndefined();
    }
  });
});

describe('the MCP endpoint', () => {
  const mcp = (viaLoopback: boolean) =>
    createMcpHttp({
      api: async () => {
        throw new Error('not reached');
      },
      baseUrl: viaLoopback ? LOCAL : BASE,
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
