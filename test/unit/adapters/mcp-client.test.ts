import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { startHttpServer } from '../../support/http-server.ts';
import { startMcpServer, type TestMcpServer } from '../../support/mcp-server.ts';

const signal = new AbortController().signal;
const client = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate: true }) });

describe('SdkMcpClient against a real MCP server over Streamable HTTP', () => {
  let server: TestMcpServer;
  beforeAll(async () => {
    server = await startMcpServer('streamable');
  });
  afterAll(() => server.close());

  it('lists the tools with their input schemas', async () => {
    const tools = await client.listTools({ url: server.url }, signal);
    expect(tools.map((t) => t.name)).toEqual(['add', 'greet', 'fail', 'calculator', 'whoami']);
    expect(tools[0]).toMatchObject({
      description: 'Adds two numbers',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
      outputSchema: { type: 'object', properties: { sum: { type: 'number' } } },
    });
  });

  it('calls a tool with arguments and returns content and structuredContent', async () => {
    const result = await client.callTool(
      { url: server.url },
      { name: 'add', arguments: { a: 2, b: 40 } },
      signal,
    );
    expect(result).toEqual({
      content: [{ type: 'text', text: '42' }],
      structuredContent: { sum: 42 },
      isError: false,
    });
  });

  it("returns a tool's own failure as isError, not as an exception", async () => {
    const result = await client.callTool(
      { url: server.url },
      { name: 'fail', arguments: { reason: 'no' } },
      signal,
    );
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'failed: no' }]);
  });

  it('sends the headers it is given (resolved credentials)', async () => {
    const result = await client.callTool(
      { url: server.url, headers: { Authorization: 'Bearer t0k' } },
      { name: 'whoami', arguments: {} },
      signal,
    );
    expect(result.content).toEqual([{ type: 'text', text: 'Bearer t0k' }]);
  });

  it('surfaces an unknown tool or bad arguments as a failure, never as a retry', async () => {
    // The SDK's server answers both with an isError result; other servers use a JSON-RPC error, which the client
    // turns into NonRetriableError.
    for (const call of [
      { name: 'nope', arguments: {} },
      { name: 'add', arguments: { a: 'x' } },
    ]) {
      const outcome = await client.callTool({ url: server.url }, call, signal).catch((e: unknown) => e);
      if (outcome instanceof Error) expect(outcome).toBeInstanceOf(NonRetriableError);
      else expect(outcome).toMatchObject({ isError: true });
    }
  });
});

describe('SdkMcpClient against an HTTP+SSE (2024-11-05) server', () => {
  let server: TestMcpServer;
  beforeAll(async () => {
    server = await startMcpServer('sse');
  });
  afterAll(() => server.close());

  it('falls back to SSE when Streamable HTTP is refused, and calls the tool', async () => {
    const result = await client.callTool(
      { url: server.url },
      { name: 'greet', arguments: { name: 'Ada' } },
      signal,
    );
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
    expect(server.requests.slice(0, 2)).toEqual(['POST /sse', 'GET /sse']);
  });
});

describe('SdkMcpClient and the network guard', () => {
  it('refuses a loopback server unless the stack allows private networks', async () => {
    const server = await startMcpServer('streamable');
    try {
      const guarded = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate: false }) });
      const error = await guarded.listTools({ url: server.url }, signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetriableError);
      expect(String(error)).toMatch(/private, loopback or link-local/);
      expect(server.requests).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("stays on the server's origin: a redirect to another origin is refused and never reaches it", async () => {
    const server = await startMcpServer('streamable');
    const redirector = await startHttpServer((_req, res) => {
      res.writeHead(307, { location: server.url }).end();
    });
    try {
      const error = await client.listTools({ url: `${redirector.url}/mcp` }, signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetriableError);
      // The SDK follows redirects within the origin only; the guard's binding holds for any fetch it makes.
      expect(String(error)).toMatch(/HTTP 307|is not the MCP server's origin/);
      expect(redirector.requests.length).toBeGreaterThan(0);
      expect(server.requests).toEqual([]);
    } finally {
      await redirector.close();
      await server.close();
    }
  });

  it("stops reading a server's answer at the operator's ceiling", async () => {
    const flood = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      res.end(`{"jsonrpc":"2.0","id":0,"result":{"pad":"${'x'.repeat(256 * 1024)}"}}`);
    });
    try {
      const capped = new SdkMcpClient({ fetch: guardedFetch({ allowPrivate: true, ceiling: 64 * 1024 }) });
      const error = await capped.listTools({ url: `${flood.url}/mcp` }, signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetriableError);
      expect(String(error)).toMatch(/CRUMBS_MAX_RESPONSE_BYTES, the operator's ceiling \(65536( bytes)?\)/);
    } finally {
      await flood.close();
    }
  });

  it.each([
    [408, RetriableError],
    [409, RetriableError],
    [429, RetriableError],
    [503, RetriableError],
    [400, NonRetriableError],
  ])('classifies a tool call answered %i by isRetriableStatus', async (status, expected) => {
    // The session starts normally; the tool call's POST is answered with `status`.
    const answering: typeof fetch = async (input, init) =>
      typeof init?.body === 'string' && init.body.includes('"tools/call"')
        ? new Response(`{"error":"answered ${status}"}`, { status })
        : guardedFetch({ allowPrivate: true })(input, init);
    const server = await startMcpServer('streamable');
    try {
      const refused = new SdkMcpClient({ fetch: answering });
      const error = await refused
        .callTool({ url: server.url }, { name: 'add', arguments: { a: 1, b: 2 } }, signal)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(expected);
      expect(String(error)).toMatch(new RegExp(`HTTP ${status}`));
    } finally {
      await server.close();
    }
  });

  it('reports a server that cannot be reached as retriable', async () => {
    const server = await startMcpServer('streamable');
    const url = server.url;
    await server.close();
    await expect(client.listTools({ url, timeoutMs: 2000 }, signal)).rejects.toThrow(RetriableError);
  });
});
