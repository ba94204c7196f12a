/**
 * The network guard under attack. Servers listen on every address of the namespace (documentation, RFC 1918,
 * CGNAT, benchmarking, metadata, the host's own public addresses, IPv6 documentation and ULA, loopback), and
 * team-b aims definitions at them — an http tool, an api agent, an MCP tool agent, an A2A agent — in every
 * spelling a URL allows. Each request must be answered with an error and no server may see a request; team-a's
 * items stay as they were.
 *
 * What the stack cannot be made to reach (nothing in the namespace is a public address that is not the host's
 * own) is attacked through the same code in this process, with the host's own addresses declared empty so that
 * 1.2.3.4 and 2a01:4f8::10 stand for a public partner: redirectors, credential echoes, an oversized body, a DNS
 * rebinding resolver, an A2A card that points elsewhere.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkA2aClient } from '#shared/adapters/a2a/a2a-client.ts';
import { pooledChecks } from '#shared/adapters/checks/checks.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { createApiAgent } from '#shared/core/agents/api-agent.ts';
import { agentSpec } from '#shared/domain/agent-spec.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { createHttpTool } from '#shared/tools/http.ts';
import type { ToolContext } from '#shared/tools/tool.ts';
import { startA2aServer } from '../support/a2a-server.ts';
import { agentRun } from '../support/agent-run.ts';
import { NETNS_ADDRESSES } from '../support/netns.ts';
import { adversary, eventually, teamA, teamB, workspaceItems } from './support.ts';

interface Recorder {
  readonly host: string;
  readonly port: number;
  readonly requests: { url: string; headers: IncomingHttpHeaders }[];
  readonly server: Server;
}

const recorders: Recorder[] = [];

async function listen(
  host: string,
  port = 0,
  respond: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void = (
    _req,
    res,
  ) => res.end('reached'),
): Promise<Recorder> {
  const requests: Recorder['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    respond(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const recorder = { host, port: (server.address() as AddressInfo).port, requests, server };
  recorders.push(recorder);
  return recorder;
}

const bracket = (host: string) => (host.includes(':') ? `[${host}]` : host);
const urlOf = (r: Recorder, path = '/') => `http://${bracket(r.host)}:${r.port}${path}`;

/** The IPv4 address as one number, in hex, and in octal: spellings the URL parser turns back into dotted form. */
function odd(v4: string): string[] {
  const parts = v4.split('.').map(Number);
  const n = parts.reduce((acc, p) => acc * 256 + p, 0);
  return [String(n), `0x${n.toString(16)}`, parts.map((p) => `0${p.toString(8)}`).join('.')];
}

function hex32(v4: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

const allAddresses = [...Object.values(NETNS_ADDRESSES), '127.0.0.1', '::1'];
const byHost = new Map<string, Recorder>();
/** Servers on port 80 of a few addresses, for URLs without a port. */
const onPort80 = new Map<string, Recorder>();

beforeAll(async () => {
  for (const host of allAddresses) byHost.set(host, await listen(host));
  for (const host of [NETNS_ADDRESSES.documentation, NETNS_ADDRESSES.metadata, NETNS_ADDRESSES.ownPublic]) {
    onPort80.set(host, await listen(host, 80));
  }
});

afterAll(async () => {
  for (const r of recorders.splice(0)) {
    r.server.closeAllConnections();
    await new Promise((resolve) => r.server.close(resolve));
  }
});

function target(host: string): Recorder {
  const r = byHost.get(host);
  if (!r) throw new Error(`no server on ${host}`);
  return r;
}

/** Every spelling of every namespace address this suite aims at, with the server it would reach. */
function attackUrls(): { url: string; server: Recorder }[] {
  const out: { url: string; server: Recorder }[] = [];
  for (const host of allAddresses) {
    const r = target(host);
    out.push({ url: urlOf(r), server: r });
    if (host.includes(':')) continue;
    for (const spelling of odd(host)) out.push({ url: `http://${spelling}:${r.port}/`, server: r });
    out.push({ url: `http://[::ffff:${host}]:${r.port}/`, server: r });
    out.push({ url: `http://[::ffff:${hex32(host)}]:${r.port}/`, server: r });
    out.push({ url: `http://[64:ff9b::${hex32(host)}]:${r.port}/`, server: r });
    out.push({ url: `http://[2002:${hex32(host)}::1]:${r.port}/`, server: r });
    out.push({ url: `http://${host}.:${r.port}/`, server: r });
    out.push({ url: `http://api.example.com@${host}:${r.port}/`, server: r });
  }
  for (const [host, r] of onPort80) out.push({ url: `http://${host}/`, server: r });
  out.push({ url: `http://localhost:${target('127.0.0.1').port}/`, server: target('127.0.0.1') });
  return out;
}

const noRequests = (servers: Iterable<Recorder>) =>
  [...servers].filter((s) => s.requests.length > 0).map((s) => `${s.host}:${s.port} ${s.requests[0]?.url}`);

// --- through the stack, as team-b ----------------------------------------------------------------------------

const uid = () => Math.random().toString(36).slice(2, 10);

async function define(id: string, schema_name: string, context: Record<string, unknown>) {
  const b = teamB();
  const put = await b.call('PUT', `/breadcrumbs/${id}`, { schema_name, title: id, tags: [], context });
  expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
  return eventually(async () => {
    const page = await b.call(
      'GET',
      `/breadcrumbs?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:${id}`)}&limit=1&view=full`,
    );
    const item = (page.body.items as { context: Record<string, unknown> }[] | undefined)?.[0];
    return item && Number(item.context.definition_version) >= Number(put.body.version)
      ? item.context
      : undefined;
  }, `the status of ${id}`);
}

async function answerTo(schema: string, requestId: string): Promise<Record<string, unknown>> {
  const b = teamB();
  return eventually(
    async () => {
      const page = await b.call(
        'GET',
        `/breadcrumbs?schema_name=${schema}&tag=${encodeURIComponent(`request:${requestId}`)}&limit=1&view=full`,
      );
      return (page.body.items as { context: Record<string, unknown> }[] | undefined)?.[0]?.context;
    },
    `the answer to ${requestId}`,
    60_000,
  );
}

describe('definitions of team-b aimed at the namespace addresses, through the stack', () => {
  it('an http tool reaches none of them in any spelling, nor the stack itself through the host address', async () => {
    const before = await workspaceItems(teamA().workspace);
    const name = `probe-${uid()}`;
    const status = await define(`tool-${name}`, 'tool.def.v1', {
      name,
      implementation: 'http',
      config: { allowed_hosts: ['*'] },
    });
    expect(status.state, JSON.stringify(status.errors)).toBe('active');

    const { dynamodb, sqs, api } = adversary();
    const stackPorts = [dynamodb, sqs, api].map((u) => new URL(u).port);
    const urls = [
      ...attackUrls().map((a) => a.url),
      // The attack that read another workspace: the emulators through the host's own address.
      ...stackPorts.map((port) => `http://${NETNS_ADDRESSES.ownPublic}:${port}/`),
      ...stackPorts.map((port) => `http://[${NETNS_ADDRESSES.ownPublic6}]:${port}/`),
    ];
    const requests = urls.map((url) => ({ url, requestId: `net-${uid()}` }));
    for (const { url, requestId } of requests) {
      const created = await teamB().call('POST', '/breadcrumbs', {
        schema_name: 'tool.request.v1',
        title: 'probe',
        tags: [],
        context: {
          tool: name,
          requestId,
          requestedBy: 'team-b',
          input: { url, method: 'POST', body: { TableName: 'crumbs' } },
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
    }
    for (const { url, requestId } of requests) {
      const answer = await answerTo('tool.response.v1', requestId);
      expect(answer.status, url).toBe('error');
      expect(String(answer.error), url).toMatch(/not a public address/);
    }
    expect(noRequests(recorders)).toEqual([]);
    expect(await workspaceItems(teamA().workspace)).toEqual(before);
  });

  it('an http tool asking for a 1e12-byte body or 50 redirects is invalid, naming the field and the limit', async () => {
    const status = await define(`tool-greedy-${uid()}`, 'tool.def.v1', {
      name: `greedy-${uid()}`,
      implementation: 'http',
      config: { allowed_hosts: ['*'], max_response_bytes: 1e12, max_redirects: 50 },
    });
    expect(status.state).toBe('invalid');
    expect(status.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          path: 'config.max_response_bytes',
          message: expect.stringMatching(/at most 5242880 bytes \(CRUMBS_MAX_RESPONSE_BYTES/),
        }),
        expect.objectContaining({ path: 'config.max_redirects' }),
      ]),
    );
  });

  it('api, MCP and A2A agents reach none of them either', async () => {
    const before = await workspaceItems(teamA().workspace);
    const urls = [
      urlOf(target(NETNS_ADDRESSES.metadata), '/latest/meta-data/'),
      urlOf(target(NETNS_ADDRESSES.documentation)),
      urlOf(target(NETNS_ADDRESSES.ownPublic)),
      urlOf(target(NETNS_ADDRESSES.ula6)),
      urlOf(target(NETNS_ADDRESSES.ownPublic6)),
      `http://[::ffff:${NETNS_ADDRESSES.private10}]:${target(NETNS_ADDRESSES.private10).port}/`,
      `http://${odd(NETNS_ADDRESSES.cgnat)[1]}:${target(NETNS_ADDRESSES.cgnat).port}/`,
    ];
    const transports = (url: string) => [
      { type: 'api', transport: { kind: 'api', api: { endpoint: url, method: 'POST' } } },
      { type: 'tool', transport: { kind: 'mcp', mcp: { url } }, yaml: 'tools:\n  - add\n' },
      { type: 'external', transport: { kind: 'external', external: { endpoint: url, protocol: 'a2a' } } },
    ];
    const asked: { requestId: string; what: string }[] = [];
    for (const url of urls) {
      for (const def of transports(url)) {
        const agentId = `net-${def.type}-${uid()}`;
        const status = await define(`agent-${agentId}`, 'agent.def.v1', { agent_id: agentId, ...def });
        expect(status.state, JSON.stringify(status.errors)).toBe('active');
        const requestId = `ask-${uid()}`;
        await teamB().call('POST', '/breadcrumbs', {
          schema_name: 'agent.request.v1',
          title: 'ask',
          tags: [],
          context: { agent: agentId, request_id: requestId, input: { tool: 'add', arguments: {} } },
        });
        asked.push({ requestId, what: `${def.type} ${url}` });
      }
    }
    for (const { requestId, what } of asked) {
      const answer = await answerTo('agent.response.v1', requestId);
      expect(answer.status, what).toBe('error');
      expect(String(answer.error), what).toMatch(/not a public address/);
    }
    expect(noRequests(recorders)).toEqual([]);
    expect(await workspaceItems(teamA().workspace)).toEqual(before);
  });
});

// --- the same code in this process, with 1.2.3.4 and 2a01:4f8::10 standing for public partners ---------------

const noOwnAddresses = (): ReadonlySet<string> => new Set();
const publicHosts = [NETNS_ADDRESSES.ownPublic, NETNS_ADDRESSES.ownPublic6];

function toolContext(config: Record<string, unknown>): ToolContext {
  // The http tool reads only its config and signal.
  return {
    config: { allowed_hosts: ['*'], ...config },
    signal: AbortSignal.timeout(60_000),
  } as Partial<ToolContext> as ToolContext;
}

describe('the guard against partners that misbehave (in-process, the host addresses standing for the internet)', () => {
  const tool = createHttpTool({ allowPrivateNetwork: false, ownAddresses: noOwnAddresses });

  it('refuses a redirect from a public partner to any namespace address', async () => {
    // Every target but the two addresses that stand for the internet here.
    const targets = attackUrls().filter((t) => !(publicHosts as readonly string[]).includes(t.server.host));
    const redirector = await listen(NETNS_ADDRESSES.ownPublic, 0, (req, res) => {
      const to = decodeURIComponent((req.url ?? '/').slice(1));
      res.writeHead(302, { location: to }).end();
    });
    for (const { url } of targets) {
      await expect(
        tool.run({ url: urlOf(redirector, `/${encodeURIComponent(url)}`) }, toolContext({})),
        url,
      ).rejects.toThrow(/not a public address/);
    }
    expect(redirector.requests).toHaveLength(targets.length);
    expect(noRequests(targets.map((t) => t.server))).toEqual([]);
  });

  it('lets no credential reach another origin through a redirect (http tool and api agent with a secret header)', async () => {
    const echo = await listen(NETNS_ADDRESSES.ownPublic6, 0, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(req.headers));
    });
    const redirector = await listen(NETNS_ADDRESSES.ownPublic, 0, (_req, res) => {
      res.writeHead(307, { location: urlOf(echo, '/echo') }).end();
    });
    const answer = (await tool.run(
      {
        url: urlOf(redirector),
        method: 'POST',
        headers: { authorization: 'Bearer team-b-stolen', cookie: 's=1', 'x-api-key': 'k' },
        body: { q: 1 },
      },
      toolContext({}),
    )) as { body: Record<string, string> };
    expect(answer.body).not.toHaveProperty('authorization');
    expect(answer.body).not.toHaveProperty('cookie');
    expect(answer.body).not.toHaveProperty('x-api-key');

    const parsed = parseDefinition('agent.def.v1', {
      agent_id: 'partner',
      type: 'api',
      transport: {
        kind: 'api',
        api: {
          endpoint: urlOf(redirector, '/api'),
          allowed_hosts: ['*'],
          headers: { 'x-partner-token': { secret_ref: 'PARTNER_TOKEN' } },
          authentication: { type: 'bearer', secret_ref: 'PARTNER_TOKEN' },
        },
      },
    });
    const spec = agentSpec(parsed.definition as AgentDefinition);
    if (spec.type !== 'api') throw new Error('not an api agent');
    const guarded = guardedFetch({ allowPrivate: false, ownAddresses: noOwnAddresses });
    const agent = createApiAgent({
      fetchFor: (allowedHosts, maxResponseBytes) => guarded.within({ allowedHosts, maxResponseBytes }),
      // The run's own workspace (agent-run.ts) holds the secret the echo must never see.
      secrets: new LocalSecrets({
        inline: JSON.stringify({ 'ws-test': { PARTNER_TOKEN: 'team-a-secret-value' } }),
      }),
      checks: pooledChecks(undefined),
    });
    const outcome = (await agent.run(agentRun(spec, { input: {} }))) as { answer: { output: unknown } };
    expect(JSON.stringify(outcome.answer.output)).not.toContain('team-a-secret-value');
    const arrived = echo.requests.map((r) => JSON.stringify(r.headers)).join('\n');
    expect(arrived).not.toContain('team-a-secret-value');
    expect(arrived).not.toContain('team-b-stolen');
  });

  it('stops reading an oversized body at the cap, and says so, without the process taking it into memory', async () => {
    const total = 400 * 1024 * 1024;
    let written = 0;
    const flood = await listen(NETNS_ADDRESSES.ownPublic, 0, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(256 * 1024, 97);
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
      pump();
    });
    const rssBefore = process.memoryUsage().rss;
    await expect(tool.run({ url: urlOf(flood) }, toolContext({}))).rejects.toThrow(
      /larger than config\.max_response_bytes \(1048576 bytes\)/,
    );
    await expect(
      tool.run({ url: urlOf(flood) }, toolContext({ max_response_bytes: 5 * 1024 * 1024 })),
    ).rejects.toThrow(/larger than config\.max_response_bytes \(5242880 bytes\)/);
    // A stored definition past the ceiling (written before it was lowered) is refused when it runs.
    await expect(tool.run({ url: urlOf(flood) }, toolContext({ max_response_bytes: 1e12 }))).rejects.toThrow(
      /config\.max_response_bytes: at most 5242880 bytes/,
    );
    expect(written).toBeLessThan(total);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(150 * 1024 * 1024);
  });

  it('connects to the address it checked, whatever a rebinding resolver answers next', async () => {
    const partner = await listen(NETNS_ADDRESSES.ownPublic, 0);
    const loopback = await listen('127.0.0.1', partner.port);
    let lookups = 0;
    const rebinding = createHttpTool({
      allowPrivateNetwork: false,
      ownAddresses: noOwnAddresses,
      lookup: async () => [{ address: lookups++ === 0 ? NETNS_ADDRESSES.ownPublic : '127.0.0.1', family: 4 }],
    });
    const answer = (await rebinding.run(
      { url: `http://rebind.example:${partner.port}/` },
      toolContext({}),
    )) as { body: string };
    expect(answer.body).toBe('reached');
    expect(lookups).toBe(1);
    expect(partner.requests).toHaveLength(1);
    expect(loopback.requests).toHaveLength(0);

    // With the host's real addresses: a public first answer that leads nowhere here, then loopback.
    let second = 0;
    const unreachable = createHttpTool({
      allowPrivateNetwork: false,
      lookup: async () => [{ address: second++ === 0 ? '8.8.8.8' : '127.0.0.1', family: 4 }],
    });
    await expect(
      unreachable.run({ url: `http://rebind.example:${loopback.port}/` }, toolContext({})),
    ).rejects.toThrow();
    expect(second).toBe(1);
    expect(loopback.requests).toHaveLength(0);
  });

  it('keeps an A2A call on its configured origin when the card points elsewhere', async () => {
    // The partner's real card, served from a public address, names the partner's own (loopback) endpoint.
    const partner = await startA2aServer();
    try {
      const cardJson = await (await fetch(`${partner.baseUrl}/.well-known/agent-card.json`)).text();
      const cardServer = await listen(NETNS_ADDRESSES.ownPublic, 0, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(cardJson);
      });
      const cardUrl = urlOf(cardServer, '/.well-known/agent-card.json');
      const send = (a2a: SdkA2aClient, origins?: string[]) =>
        a2a.send(
          { cardUrl, ...(origins ? { origins } : {}) },
          { messageId: `m-${uid()}`, parts: [{ kind: 'data', data: { a: 1, b: 2 } }] },
          AbortSignal.timeout(30_000),
        );
      const devGuard = () => guardedFetch({ allowPrivate: true, ownAddresses: noOwnAddresses });
      // Bound to the card's origin only (what an agent definition gets): refused, by origin and by address.
      for (const fetchIt of [
        devGuard(),
        guardedFetch({ allowPrivate: false, ownAddresses: noOwnAddresses }),
      ]) {
        await expect(send(new SdkA2aClient({ fetch: fetchIt }))).rejects.toThrow(
          /not the A2A partner's configured origins|not a public address/,
        );
      }
      expect(partner.requests).toEqual([]);
      // The same card with the partner's origin configured too reaches it: the refusal above was the binding.
      const reply = await send(new SdkA2aClient({ fetch: devGuard() }), [
        new URL(cardUrl).origin,
        new URL(partner.baseUrl).origin,
      ]);
      expect(reply.state).toBe('completed');
      expect(partner.requests.length).toBeGreaterThan(0);
    } finally {
      await partner.close();
    }
  });

  it('has public partners to stand for: the host addresses answer when declared not our own', async () => {
    for (const host of publicHosts) {
      const r = await listen(host, 0);
      const answer = (await tool.run({ url: urlOf(r) }, toolContext({}))) as { status: number };
      expect(answer.status).toBe(200);
    }
  });
});
