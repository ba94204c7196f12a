/**
 * A real MCP server on loopback, built with the official SDK, for the MCP client's tests and the tool agent's
 * integration tests. `transport: 'streamable'` serves Streamable HTTP at `/mcp` (stateless: one server per
 * request, as the SDK's stateless example does); `transport: 'sse'` serves the older HTTP+SSE transport
 * (GET `/sse`, POST `/messages`) and answers a Streamable HTTP POST to `/sse` with 405, as old servers do.
 *
 * Tools: `add { a, b }` → text and structuredContent `{ sum }`; `greet { name }` → text; `fail { reason }` → a
 * result with `isError: true`; `whoami` → the Authorization header it was called with; `calculator
 * { expression }` → the value of `a+b`, `a*b`, … (named so crumbs' offline model calls it when imported).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

export interface TestMcpServer {
  readonly url: string;
  /** Requests received (method and path), to assert on what the client did. */
  readonly requests: string[];
  close(): Promise<void>;
}

function buildServer(authorization: () => string | undefined): McpServer {
  const server = new McpServer({ name: 'crumbs-test-mcp', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    'greet',
    { description: 'Greets someone by name', inputSchema: { name: z.string() } },
    async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }),
  );
  server.registerTool(
    'fail',
    { description: 'Always fails', inputSchema: { reason: z.string() } },
    async ({ reason }) => ({ content: [{ type: 'text', text: `failed: ${reason}` }], isError: true }),
  );
  server.registerTool(
    'calculator',
    {
      description: 'Evaluates a binary arithmetic expression like 17*23',
      inputSchema: { expression: z.string() },
    },
    async ({ expression }) => {
      const m = /^\s*(-?[\d.]+)\s*([-+*/])\s*(-?[\d.]+)\s*$/.exec(expression);
      if (!m) return { content: [{ type: 'text', text: `cannot evaluate ${expression}` }], isError: true };
      const [a, b] = [Number(m[1]), Number(m[3])];
      const value = m[2] === '+' ? a + b : m[2] === '-' ? a - b : m[2] === '*' ? a * b : a / b;
      return { content: [{ type: 'text', text: String(value) }], structuredContent: { value } };
    },
  );
  server.registerTool('whoami', { description: 'Echoes the Authorization header' }, async () => ({
    content: [{ type: 'text', text: authorization() ?? '(none)' }],
  }));
  return server;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

export async function startMcpServer(transport: 'streamable' | 'sse' = 'streamable'): Promise<TestMcpServer> {
  const requests: string[] = [];
  const sseSessions = new Map<string, SSEServerTransport>();
  let lastAuthorization: string | undefined;
  const http: Server = createServer((req, res) => {
    void (async () => {
      requests.push(`${req.method} ${req.url}`);
      lastAuthorization = req.headers.authorization;
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (transport === 'streamable' && path === '/mcp') {
        const server = buildServer(() => lastAuthorization);
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: false,
        });
        res.on('close', () => {
          void t.close();
          void server.close();
        });
        await server.connect(t);
        await t.handleRequest(req, res, req.method === 'POST' ? await readBody(req) : undefined);
        return;
      }
      if (transport === 'sse' && path === '/sse' && req.method === 'GET') {
        const t = new SSEServerTransport('/messages', res);
        sseSessions.set(t.sessionId, t);
        res.on('close', () => sseSessions.delete(t.sessionId));
        await buildServer(() => lastAuthorization).connect(t);
        return;
      }
      if (transport === 'sse' && path === '/messages' && req.method === 'POST') {
        const id = new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '';
        const t = sseSessions.get(id);
        if (!t) {
          res.writeHead(404).end('unknown session');
          return;
        }
        await t.handlePostMessage(req, res, await readBody(req));
        return;
      }
      res.writeHead(transport === 'sse' && path === '/sse' ? 405 : 404).end();
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/${transport === 'sse' ? 'sse' : 'mcp'}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
