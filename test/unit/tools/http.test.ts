import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { createHttpTool, httpTool, isPrivateAddress } from '#shared/tools/http.ts';
import type { ToolContext } from '#shared/tools/tool.ts';
import { startHttpServer, type TestHttpServer } from '../../support/http-server.ts';

/** A tool context for unit tests; the store refuses every call unless the test gives one. */
function toolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    workspace: 'ws-test',
    store: new Proxy({} as BreadcrumbStore, {
      get: (_, name) => () => Promise.reject(new Error(`unexpected store.${String(name)}`)),
    }),
    signal: new AbortController().signal,
    config: {},
    principal: 'tool:test',
    causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
    log: silentLog,
    context: {},
    ...overrides,
  };
}

let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/json') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ items: [{ name: 'a' }, { name: 'b' }], method: req.method }));
    } else if (url.pathname === '/big') {
      res.end('x'.repeat(4096));
    } else if (url.pathname === '/big-chunked') {
      res.write('x'.repeat(1024));
      res.write('x'.repeat(1024));
      res.end('x'.repeat(1024));
    } else if (url.pathname === '/busy') {
      res.statusCode = 503;
      res.end('try later');
    } else if (url.pathname === '/slow') {
      setTimeout(() => res.end('late'), 2000).unref();
    } else if (url.pathname === '/echo') {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ body: JSON.parse(body || 'null'), contentType: req.headers['content-type'] }),
        );
      });
    } else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const local = (extra: Record<string, unknown> = {}) =>
  toolContext({ config: { allowed_hosts: ['127.0.0.1', 'localhost'], allow_private: true, ...extra } });
/** The tool on a stack started with `--allow-private-network` (the test server listens on loopback). */
const devTool = createHttpTool({ allowPrivateNetwork: true });

describe('http tool', () => {
  it('calls an allowed host and parses a JSON body', async () => {
    const out = await devTool.run({ url: `http://127.0.0.1:${port}/json` }, local());
    expect(out).toMatchObject({
      status: 200,
      body: { items: [{ name: 'a' }, { name: 'b' }], method: 'GET' },
    });
  });

  it('sends a JSON body and maps the response with JSONata', async () => {
    const out = await devTool.run(
      {
        method: 'POST',
        url: `http://127.0.0.1:${port}/echo`,
        body: { q: 1 },
        response_mapping: '{"q": body.body.q, "type": body.contentType}',
      },
      local(),
    );
    expect(out).toEqual({ q: 1, type: 'application/json' });
  });

  it('refuses a loopback address unless allow_private is set', async () => {
    const ctx = toolContext({ config: { allowed_hosts: ['127.0.0.1'] } });
    await expect(httpTool.run({ url: `http://127.0.0.1:${port}/json` }, ctx)).rejects.toThrow(
      /private, loopback or link-local/,
    );
    // Even on a stack that allows private network access, the definition has to ask for it.
    await expect(devTool.run({ url: `http://127.0.0.1:${port}/json` }, ctx)).rejects.toThrow(
      /private, loopback or link-local/,
    );
  });

  it('refuses a definition asking for allow_private on a stack that does not allow it, whatever the URL', async () => {
    const calls: string[] = [];
    const tool = createHttpTool({
      allowPrivateNetwork: false,
      lookup: async () => [{ address: '93.184.216.34', family: 4 }],
      fetch: async (url) => {
        calls.push(String(url));
        return new Response('ok');
      },
    });
    const asking = toolContext({ config: { allowed_hosts: ['*'], allow_private: true } });
    for (const url of [`http://127.0.0.1:${port}/json`, 'http://public.example.com/']) {
      await expect(tool.run({ url }, asking), url).rejects.toThrow(
        /config\.allow_private .* which this stack does not allow: only a stack started with `crumbs dev --allow-private-network`/,
      );
    }
    expect(calls).toEqual([]);
  });

  it('reads CRUMBS_ALLOW_PRIVATE_NETWORK once: off unless it is 1', async () => {
    const saved = process.env.CRUMBS_ALLOW_PRIVATE_NETWORK;
    try {
      delete process.env.CRUMBS_ALLOW_PRIVATE_NETWORK;
      const strict = createHttpTool();
      await expect(strict.run({ url: `http://127.0.0.1:${port}/json` }, local())).rejects.toThrow(
        /does not allow/,
      );
      process.env.CRUMBS_ALLOW_PRIVATE_NETWORK = '1';
      // Read once: the variable set later changes nothing for a tool that already ran.
      await expect(strict.run({ url: `http://127.0.0.1:${port}/json` }, local())).rejects.toThrow(
        /does not allow/,
      );
      await expect(
        createHttpTool().run({ url: `http://127.0.0.1:${port}/json` }, local()),
      ).resolves.toMatchObject({
        status: 200,
      });
    } finally {
      if (saved === undefined) delete process.env.CRUMBS_ALLOW_PRIVATE_NETWORK;
      else process.env.CRUMBS_ALLOW_PRIVATE_NETWORK = saved;
    }
  });

  it('refuses a DNS name that resolves to 127.0.0.1', async () => {
    const ctx = toolContext({ config: { allowed_hosts: ['localhost'] } });
    await expect(httpTool.run({ url: `http://localhost:${port}/json` }, ctx)).rejects.toThrow(
      /localhost resolves to/,
    );
    const tool = createHttpTool({ lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
    await expect(
      tool.run(
        { url: `http://rebind.example.com:${port}/json` },
        toolContext({ config: { allowed_hosts: ['*.example.com'] } }),
      ),
    ).rejects.toThrow(/rebind\.example\.com resolves to 127\.0\.0\.1/);
  });

  it('refuses the metadata address and IPv6 forms of private addresses', async () => {
    const ctx = toolContext({ config: { allowed_hosts: ['*'] } });
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://10.1.2.3/',
      'http://[fd00::1]/',
    ]) {
      await expect(httpTool.run({ url }, ctx), url).rejects.toThrow(/private, loopback or link-local/);
    }
  });

  it('refuses hosts outside config.allowed_hosts, and calls without an allow-list', async () => {
    await expect(
      devTool.run(
        { url: `http://127.0.0.1:${port}/json` },
        toolContext({ config: { allowed_hosts: ['api.example.com'], allow_private: true } }),
      ),
    ).rejects.toThrow(/not in the http tool's config.allowed_hosts/);
    await expect(httpTool.run({ url: `http://127.0.0.1:${port}/json` }, toolContext())).rejects.toThrow(
      /no config.allowed_hosts/,
    );
  });

  it('checks every redirect hop', async () => {
    const tool = createHttpTool({
      lookup: async () => [{ address: '93.184.216.34', family: 4 }],
      fetch: async () =>
        new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/latest/' } }),
    });
    await expect(
      tool.run({ url: 'http://public.example.com/' }, toolContext({ config: { allowed_hosts: ['*'] } })),
    ).rejects.toThrow(/169\.254\.169\.254/);
  });

  it('cuts off responses larger than max_response_bytes', async () => {
    await expect(
      devTool.run({ url: `http://127.0.0.1:${port}/big` }, local({ max_response_bytes: 1024 })),
    ).rejects.toThrow(/more than config.max_response_bytes/);
    await expect(
      devTool.run({ url: `http://127.0.0.1:${port}/big-chunked` }, local({ max_response_bytes: 1500 })),
    ).rejects.toThrow(/larger than config.max_response_bytes/);
  });

  it('fails retriably on 503 so SQS retries, and returns other errors as output', async () => {
    await expect(devTool.run({ url: `http://127.0.0.1:${port}/busy` }, local())).rejects.toBeInstanceOf(
      RetriableError,
    );
    const notFound = await devTool.run({ url: `http://127.0.0.1:${port}/nope` }, local());
    expect(notFound).toMatchObject({ status: 404 });
    const configured = await devTool.run(
      { url: `http://127.0.0.1:${port}/busy` },
      local({ retry_on_status: [] }),
    );
    expect(configured).toMatchObject({ status: 503 });
  });

  it('times out', async () => {
    await expect(
      devTool.run({ url: `http://127.0.0.1:${port}/slow` }, local({ timeout_ms: 100 })),
    ).rejects.toThrow(/timed out after 100 ms/);
  });
});

describe('http tool credentials by secret_ref', () => {
  // Workspace team-a holds the partner's credentials; team-b holds nothing of the kind.
  const secrets = new LocalSecrets({
    inline: JSON.stringify({ 'team-a': { 'partner-key': 'key-of-a', 'partner-token': 'token-of-a' } }),
  });
  let partner: TestHttpServer;
  beforeAll(async () => {
    partner = await startHttpServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  afterAll(() => partner.close());

  const config = {
    allowed_hosts: ['127.0.0.1'],
    allow_private: true,
    headers: { 'X-Api-Key': { secret_ref: 'partner-key' }, 'X-Client': 'crumbs' },
    authentication: { type: 'bearer', secret_ref: 'partner-token' },
  };
  const inWorkspace = (workspace: string, extra: Partial<ToolContext> = {}) =>
    toolContext({ workspace, config, secrets, ...extra });

  it("sends the definition's secret headers beside the request's own, and answers with none of them", async () => {
    const before = partner.requests.length;
    const out = await devTool.run(
      { url: `${partner.url}/v1/items`, headers: { 'X-Request-Id': 'r-1' } },
      inWorkspace('team-a'),
    );
    const received = partner.requests[before]?.headers;
    expect(received?.['x-api-key']).toBe('key-of-a');
    expect(received?.authorization).toBe('Bearer token-of-a');
    expect(received?.['x-client']).toBe('crumbs');
    expect(received?.['x-request-id']).toBe('r-1');
    expect(out).toMatchObject({ status: 200, body: { ok: true } });
    expect(JSON.stringify(out)).not.toMatch(/key-of-a|token-of-a/);
  });

  it("keeps the definition's credential when the request names the same header", async () => {
    const before = partner.requests.length;
    await devTool.run(
      { url: `${partner.url}/v1/items`, headers: { authorization: 'Bearer forged', 'x-api-key': 'forged' } },
      inWorkspace('team-a'),
    );
    expect(partner.requests[before]?.headers.authorization).toBe('Bearer token-of-a');
    expect(partner.requests[before]?.headers['x-api-key']).toBe('key-of-a');
  });

  it("gives a definition in another workspace nothing of team-a's secrets: an error naming the ref, no call", async () => {
    const before = partner.requests.length;
    const call = devTool.run({ url: `${partner.url}/v1/items` }, inWorkspace('team-b'));
    await expect(call).rejects.toThrow(NonRetriableError);
    await expect(call).rejects.toThrow(/secret_ref "partner-key"/);
    expect(partner.requests.length).toBe(before);
  });

  it('answers a secret missing at call time with an error naming the ref, never the value', async () => {
    const call = devTool.run(
      { url: `${partner.url}/v1/items` },
      inWorkspace('team-a', {
        config: { ...config, headers: { 'X-Api-Key': { secret_ref: 'rotated-away' } } },
      }),
    );
    await expect(call).rejects.toThrow(/secret_ref "rotated-away".*is not set/);
  });

  it('refuses secret headers in an executor without a secret source, and sends literal ones anyway', async () => {
    await expect(
      devTool.run({ url: `${partner.url}/x` }, inWorkspace('team-a', { secrets: undefined })),
    ).rejects.toThrow(/no secret source/);
    const before = partner.requests.length;
    await devTool.run(
      { url: `${partner.url}/x` },
      toolContext({ config: { ...config, headers: { 'X-Client': 'crumbs' }, authentication: undefined } }),
    );
    expect(partner.requests[before]?.headers['x-client']).toBe('crumbs');
  });
});

describe('isPrivateAddress', () => {
  it('classifies IPv4 and IPv6 addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      '::ffff:10.0.0.1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::1',
    ]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ['8.8.8.8', '172.32.0.1', '93.184.216.34', '2001:4860:4860::8888', '::ffff:8.8.8.8']) {
      expect(isPrivateAddress(a), a).toBe(false);
    }
  });
});
