import { afterEach, describe, expect, it } from 'vitest';
import { pooledChecks } from '#shared/adapters/checks/checks.ts';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { createApiAgent, retryAfterSeconds } from '#shared/core/agents/api-agent.ts';
import { agentSpec } from '#shared/domain/agent-spec.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { agentRun } from '../../../support/agent-run.ts';
import { startHttpServer, type TestHttpServer } from '../../../support/http-server.ts';

let server: TestHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function apiAgent(allowPrivate = true, secrets: Record<string, string> = { 'partner-token': 's3cret' }) {
  return createApiAgent({
    fetchFor: (allowedHosts) =>
      guardedFetch({ allowPrivate, allowedHosts, fields: { allowedHosts: 'transport.api.allowed_hosts' } }),
    secrets: new LocalSecrets({ inline: JSON.stringify({ 'ws-test': secrets }) }),
    checks: pooledChecks(undefined),
  });
}

function spec(def: Record<string, unknown>) {
  const parsed = parseDefinition('agent.def.v1', { agent_id: 'weather', type: 'api', ...def });
  const s = agentSpec(parsed.definition as AgentDefinition, { parseYaml });
  if (s.type !== 'api') throw new Error('not an api spec');
  return s;
}

describe('api agent', () => {
  it('shapes the request with request_transform and the answer with response_transform', async () => {
    server = await startHttpServer((req, res) => {
      const body = JSON.parse(req.body) as { q: string; units: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { city: body.q, temp: { value: 21.5, unit: body.units } }, noise: 1 }));
    });
    const s = spec({
      transport: {
        kind: 'api',
        api: {
          endpoint: `${server.url}/v1/weather`,
          method: 'POST',
          authentication: { type: 'bearer', secret_ref: 'partner-token' },
        },
      },
      yaml: 'request_transform: |\n  { "q": input.city, "units": "metric", "asked_by": request.agent }\nresponse_transform:\n  city: data.city\n  celsius: data.temp.value\n  http: $status\n',
    });
    const outcome = await apiAgent().run(agentRun(s, { input: { city: 'Oslo' } }));
    expect(outcome).toEqual({
      kind: 'answer',
      answer: { status: 'success', output: { city: 'Oslo', celsius: 21.5, http: 200 } },
    });
    expect(server.requests[0]).toMatchObject({ method: 'POST', path: '/v1/weather' });
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({
      q: 'Oslo',
      units: 'metric',
      asked_by: 'test-agent',
    });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer s3cret');
  });

  it('sends the input as is without transforms, and a GET as query parameters', async () => {
    server = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    const post = spec({ transport: { kind: 'api', api: { endpoint: `${server.url}/p` } } });
    await apiAgent().run(agentRun(post, { input: { a: 1 } }));
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({ a: 1 });
    const get = spec({ transport: { kind: 'api', api: { endpoint: `${server.url}/g`, method: 'GET' } } });
    const outcome = await apiAgent().run(agentRun(get, { input: { q: 'x y', n: 2 } }));
    expect(server.requests[1]).toMatchObject({ method: 'GET', path: '/g?q=x+y&n=2', body: '' });
    expect(outcome).toMatchObject({ answer: { status: 'success', output: { ok: true } } });
  });

  it('asks for a later retry on 429 and 5xx, carrying Retry-After', async () => {
    server = await startHttpServer((_req, res) => {
      res.writeHead(429, { 'retry-after': '7' });
      res.end();
    });
    const s = spec({ transport: { kind: 'api', api: { endpoint: `${server.url}/busy` } } });
    const error = await apiAgent()
      .run(agentRun(s, { input: {} }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).retryAfterSeconds).toBe(7);
  });

  it('answers other error statuses with an error naming the status', async () => {
    server = await startHttpServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"no such city"}');
    });
    const s = spec({ transport: { kind: 'api', api: { endpoint: `${server.url}/x` } } });
    const outcome = await apiAgent().run(agentRun(s, { input: {} }));
    expect(outcome).toMatchObject({
      answer: {
        status: 'error',
        error: expect.stringMatching(/answered 404: \{"error":"no such city"\}/),
        output: { status: 404 },
      },
    });
  });

  it('refuses a response larger than max_response_bytes', async () => {
    server = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ blob: 'x'.repeat(5000) }));
    });
    const s = spec({
      transport: { kind: 'api', api: { endpoint: `${server.url}/big`, max_response_bytes: 1000 } },
    });
    await expect(apiAgent().run(agentRun(s, { input: {} }))).rejects.toThrow(/max_response_bytes/);
  });

  it('refuses hosts outside the allow-list, including redirects, and loopback unless the stack allows it', async () => {
    server = await startHttpServer((_req, res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' });
      res.end();
    });
    const s = spec({ transport: { kind: 'api', api: { endpoint: `${server.url}/r` } } });
    await expect(apiAgent().run(agentRun(s, { input: {} }))).rejects.toThrow(
      /not in transport\.api\.allowed_hosts/,
    );
    await expect(apiAgent(false).run(agentRun(s, { input: {} }))).rejects.toThrow(/private, loopback/);
  });

  it('fails clearly when a credential reference has no value', async () => {
    server = await startHttpServer((_req, res) => res.end());
    const s = spec({
      transport: {
        kind: 'api',
        api: {
          endpoint: `${server.url}/x`,
          authentication: { type: 'header', header_name: 'X-Key', secret_ref: 'missing' },
        },
      },
    });
    await expect(apiAgent(true, {}).run(agentRun(s, { input: {} }))).rejects.toThrow(NonRetriableError);
    expect(server.requests).toEqual([]);
  });

  it('reads Retry-After as seconds or a date', () => {
    expect(retryAfterSeconds('120')).toBe(120);
    expect(
      retryAfterSeconds(new Date(Date.UTC(2026, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2026, 0, 1)),
    ).toBe(30);
    expect(retryAfterSeconds('soon')).toBeUndefined();
  });
});
