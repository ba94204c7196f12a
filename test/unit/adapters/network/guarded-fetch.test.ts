import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import {
  HostNotAllowedError,
  NetworkGuardError,
  PrivateNetworkError,
  RedirectRefusedError,
  ResponseTooLargeError,
} from '#shared/adapters/network/network-guard.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { startHttpServer, type TestHttpServer } from '../../../support/http-server.ts';

const publicDns = async () => [{ address: '93.184.216.34', family: 4 }];

describe('guardedFetch', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startHttpServer((req, res) => {
      if (req.path === '/to-metadata') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' });
        res.end();
        return;
      }
      if (req.path === '/see-other') {
        res.writeHead(303, { location: '/echo' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, body: req.body }));
    });
  });
  afterAll(() => server.close());

  it('refuses loopback unless the stack allows private networks, and reads the switch at each request', async () => {
    let allowed = false;
    const fetchIt = guardedFetch({ allowPrivate: () => allowed });
    await expect(fetchIt(`${server.url}/echo`)).rejects.toBeInstanceOf(PrivateNetworkError);
    allowed = true;
    const response = await fetchIt(`${server.url}/echo`);
    expect(await response.json()).toEqual({ method: 'GET', body: '' });
  });

  it('checks every redirect hop, so an allowed server cannot bounce a call to the metadata address', async () => {
    const calls: string[] = [];
    const fetchIt = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      fetch: async (url) => {
        calls.push(String(url));
        return new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/latest/' } });
      },
    });
    await expect(fetchIt('https://partner.example.com/')).rejects.toThrow(/169\.254\.169\.254/);
    expect(calls).toEqual(['https://partner.example.com/']);
  });

  it('refuses hosts off the allow-list, naming the field, on the first call and on redirects', async () => {
    const fetchIt = guardedFetch({
      allowPrivate: true,
      allowedHosts: ['127.0.0.1'],
      fields: { allowedHosts: 'transport.api.allowed_hosts' },
    });
    await expect(fetchIt(`${server.url}/to-metadata`)).rejects.toThrow(
      /host 169\.254\.169\.254 is not in transport\.api\.allowed_hosts \(127\.0\.0\.1\)/,
    );
    await expect(fetchIt('http://localhost:1/')).rejects.toBeInstanceOf(HostNotAllowedError);
    // Every refusal is a NetworkGuardError and not retriable: a retry would be refused the same way.
    const refused = await fetchIt('http://localhost:1/').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NetworkGuardError);
    expect(refused).toBeInstanceOf(NonRetriableError);
  });

  it('follows a 303 as a GET without the body, and stops after maxRedirects', async () => {
    const fetchIt = guardedFetch({ allowPrivate: true });
    const response = await fetchIt(`${server.url}/see-other`, { method: 'POST', body: 'x' });
    expect(await response.json()).toEqual({ method: 'GET', body: '' });
    const looping = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      maxRedirects: 2,
      fields: { maxRedirects: 'config.max_redirects' },
      fetch: async () => new Response(null, { status: 302, headers: { location: '/again' } }),
    });
    await expect(looping('https://loop.example.com/')).rejects.toThrow(
      /more than 2 redirects \(config\.max_redirects\)/,
    );
  });

  it('refuses other protocols', async () => {
    await expect(guardedFetch({ allowPrivate: true })('file:///etc/passwd')).rejects.toThrow(
      /only http and https/,
    );
  });
});

describe('guardedFetch: where the connection goes and what it carries', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
  });

  async function listen(host: string, port: number, handler: Parameters<typeof createServer>[1]) {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
    return (server.address() as AddressInfo).port;
  }

  it('connects to the address it resolved first, whatever the name resolves to on a second lookup (DNS rebinding)', async () => {
    const hits: string[] = [];
    const port = await listen('127.0.0.1', 0, (_req, res) => {
      hits.push('first');
      res.end('first');
    });
    await listen('127.0.0.2', port, (_req, res) => {
      hits.push('second');
      res.end('second');
    });
    let lookups = 0;
    const fetchIt = guardedFetch({
      allowPrivate: true,
      lookup: async () => [{ address: lookups++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }],
    });
    const response = await fetchIt(`http://rebind.example:${port}/`);
    expect(await response.text()).toBe('first');
    expect(lookups).toBe(1);
    expect(hits).toEqual(['first']);
  });

  it('answers with a global Response whose body streams', async () => {
    const port = await listen('127.0.0.1', 0, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: 2\n\n'), 20);
    });
    const response = await guardedFetch({ allowPrivate: true })(`http://127.0.0.1:${port}/sse`);
    expect(response).toBeInstanceOf(Response);
    expect(response.url).toBe(`http://127.0.0.1:${port}/sse`);
    expect(await response.text()).toBe('data: 1\n\ndata: 2\n\n');
  });

  it('drops credentials and every other header a caller set when a redirect changes the origin, keeps them on the same origin', async () => {
    const received: Record<string, IncomingHttpHeaders> = {};
    const other = await listen('127.0.0.1', 0, (req, res) => {
      received[req.url ?? ''] = req.headers;
      res.end('ok');
    });
    const first = await listen('127.0.0.1', 0, (req, res) => {
      received[req.url ?? ''] = req.headers;
      if (req.url === '/same') res.writeHead(307, { location: '/landed' }).end();
      else if (req.url === '/away')
        res.writeHead(307, { location: `http://127.0.0.1:${other}/elsewhere` }).end();
      else res.end('ok');
    });
    const headers = {
      authorization: 'Bearer team-secret',
      cookie: 'session=1',
      'proxy-authorization': 'Basic eA==',
      'x-api-key': 'from-a-secret',
      'x-tenant': 'team-a',
      accept: 'application/json',
      'content-type': 'application/json',
    };
    const fetchIt = guardedFetch({ allowPrivate: true });
    await (await fetchIt(`http://127.0.0.1:${first}/same`, { method: 'POST', headers, body: '{}' })).text();
    expect(received['/landed']).toMatchObject(headers);
    await (await fetchIt(`http://127.0.0.1:${first}/away`, { method: 'POST', headers, body: '{}' })).text();
    const elsewhere = received['/elsewhere'] ?? {};
    for (const name of ['authorization', 'cookie', 'proxy-authorization', 'x-api-key', 'x-tenant']) {
      expect(elsewhere[name], name).toBeUndefined();
    }
    expect(elsewhere).toMatchObject({ accept: 'application/json', 'content-type': 'application/json' });
  });

  it('refuses a redirect from https to http, and never follows more than 5 redirects', async () => {
    const calls: string[] = [];
    const downgrade = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      fetch: async (url) => {
        calls.push(url.href);
        return new Response(null, { status: 302, headers: { location: 'http://partner.example.com/plain' } });
      },
    });
    await expect(downgrade('https://partner.example.com/')).rejects.toBeInstanceOf(RedirectRefusedError);
    expect(calls).toEqual(['https://partner.example.com/']);

    let hops = 0;
    const looping = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      maxRedirects: 50,
      fetch: async () => {
        hops++;
        return new Response(null, { status: 302, headers: { location: '/again' } });
      },
    });
    await expect(looping('https://loop.example.com/')).rejects.toThrow(/more than 5 redirects/);
    expect(hops).toBe(6);
  });

  it('binds a call to its origins with within(): the first request and every redirect', async () => {
    const other = await listen('127.0.0.1', 0, (_req, res) => res.end('elsewhere'));
    const home = await listen('127.0.0.1', 0, (_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${other}/` }).end();
    });
    const bound = guardedFetch({ allowPrivate: true }).within({
      allowedOrigins: [`http://127.0.0.1:${home}`],
      fields: { allowedOrigins: "the MCP server's origin" },
    });
    await expect(bound(`http://127.0.0.1:${other}/`)).rejects.toThrow(/is not the MCP server's origin/);
    await expect(bound(`http://127.0.0.1:${home}/`)).rejects.toBeInstanceOf(HostNotAllowedError);
  });

  it('counts the decoded bytes: a small gzip body that inflates past the cap is stopped', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 48));
    const port = await listen('127.0.0.1', 0, (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': String(bomb.length) }).end(bomb);
    });
    expect(bomb.length).toBeLessThan(64 * 1024);
    const response = await guardedFetch({ allowPrivate: true, ceiling: 256 * 1024 })(
      `http://127.0.0.1:${port}/`,
    );
    await expect(response.arrayBuffer()).rejects.toBeInstanceOf(ResponseTooLargeError);
  });

  it('narrows and never widens with within(): hosts, origins and the cap of both scopes hold', async () => {
    const calls: string[] = [];
    const base = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      allowedHosts: ['a.example.com'],
      allowedOrigins: ['https://a.example.com'],
      maxResponseBytes: 10,
      fields: { maxResponseBytes: 'the outer cap' },
      fetch: async (url) => {
        calls.push(url.href);
        return new Response('x'.repeat(100), { headers: { 'content-length': '100' } });
      },
    });
    const wider = base.within({
      allowedHosts: ['*'],
      allowedOrigins: ['https://a.example.com', 'https://b.example.com'],
      maxResponseBytes: 1000,
    });
    await expect(wider('https://b.example.com/')).rejects.toBeInstanceOf(HostNotAllowedError);
    await expect(wider('https://a.example.com/')).rejects.toThrow(/more than the outer cap \(10\)/);
    expect(calls).toEqual(['https://a.example.com/']);
  });

  it('stops reading a body at the cap: a declared length before reading, a stream as it grows', async () => {
    let written = 0;
    const total = 64 * 1024 * 1024;
    const port = await listen('127.0.0.1', 0, (req, res) => {
      if (req.url === '/declared') {
        res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = () => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => undefined);
      pump();
    });
    const fetchIt = guardedFetch({ allowPrivate: true, ceiling: 256 * 1024 });
    await expect(fetchIt(`http://127.0.0.1:${port}/declared`)).rejects.toThrow(
      /10485760 bytes, more than CRUMBS_MAX_RESPONSE_BYTES, the operator's ceiling \(262144\)/,
    );
    const response = await fetchIt(`http://127.0.0.1:${port}/stream`);
    const error = await response.arrayBuffer().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(written).toBeLessThan(total);

    // A definition's own cap under the ceiling is named as the definition spells it; above it, the ceiling holds.
    const mine = fetchIt.within({
      maxResponseBytes: 1000,
      fields: { maxResponseBytes: 'config.max_response_bytes' },
    });
    await expect(mine(`http://127.0.0.1:${port}/declared`)).rejects.toThrow(
      /config\.max_response_bytes \(1000\)/,
    );
    const greedy = fetchIt.within({ maxResponseBytes: 1e12 });
    await expect(greedy(`http://127.0.0.1:${port}/declared`)).rejects.toThrow(
      /operator's ceiling \(262144\)/,
    );
  });
});
