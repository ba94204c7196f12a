/**
 * Seed 004's agent types on the shared local stack, through the HTTP API and the CLI (issue 11, "What will be
 * checked"): each agent is a definition applied through the API, asked with an `agent.request.v1`, and answered
 * with one `agent.response.v1` tagged `request:<id>` — by the executor-agent-remote function (tool, api,
 * external, mcp tools) or executor-agent-sandbox (function) the rule manager routes it to. Partners are real
 * servers on loopback (MCP and A2A servers built with their official SDKs, a plain HTTP server); the test stack
 * allows private networks explicitly (global-setup.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrumbsClient } from '#cli/api-client.ts';
import { main } from '#cli/main.ts';
import { startA2aServer, type TestA2aServer } from '../support/a2a-server.ts';
import { startHttpServer, type TestHttpServer } from '../support/http-server.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.ts';
import { SECRETS_WORKSPACE } from '../support/shared-stack.ts';

function client(workspace: string): CrumbsClient {
  const { api, token } = localStack();
  return new CrumbsClient({ endpoint: api, token, workspace });
}

async function applyAndWait(
  c: CrumbsClient,
  id: string,
  schema_name: string,
  context: Record<string, unknown>,
) {
  const written = await c.put(id, { schema_name, title: id, tags: [], context });
  const status = await eventually(async () => {
    const page = await c.list({
      schema_name: 'definition.status.v1',
      tag: `definition:${id}`,
      limit: 1,
      view: 'full',
    });
    const s = page.items[0]?.context;
    return s && Number(s.definition_version) >= written.version ? s : undefined;
  }, 20_000);
  expect(status, JSON.stringify(status)).toMatchObject({ state: 'active' });
  return status;
}

/** Writes an agent.request.v1 and waits for its one answer. */
async function ask(c: CrumbsClient, agent: string, request: Record<string, unknown>, tags: string[] = []) {
  const requestId = `r-${Math.random().toString(36).slice(2, 10)}`;
  await c.create({
    schema_name: 'agent.request.v1',
    title: `ask ${agent}`,
    tags,
    context: { agent, request_id: requestId, ...request },
  });
  const answer = await eventually(
    async () =>
      (
        await c.list({
          schema_name: 'agent.response.v1',
          tag: `request:${requestId}`,
          limit: 5,
          view: 'full',
        })
      ).items[0],
    40_000,
  );
  return { requestId, answer };
}

describe('tool agent against a real MCP server over Streamable HTTP', () => {
  let mcp: TestMcpServer;
  beforeAll(async () => {
    mcp = await startMcpServer('streamable');
  });
  afterAll(() => mcp.close());

  it('calls a tool with arguments and surfaces a tool error as an error response', async () => {
    const ws = uniqueWorkspace('tool');
    const c = client(ws);
    const status = await applyAndWait(c, 'agent-math', 'agent.def.v1', {
      agent_id: 'math',
      type: 'tool',
      transport: { kind: 'mcp', mcp: { url: mcp.url } },
      yaml: 'tools:\n  - add\n  - fail\n',
    });
    expect(status.runner).toBe('agent-mcp');
    // It takes its arguments as given, so no model runs for it.
    expect(status.llm).toBeNull();

    const ok = await ask(c, 'math', { input: { tool: 'add', arguments: { a: 40, b: 2 } } }, [
      'run:run-7',
      'step:sum',
    ]);
    expect(ok.answer.context).toMatchObject({
      agent_id: 'math',
      status: 'success',
      output: { sum: 42 },
      text: '42',
    });
    expect(ok.answer.tags).toEqual(
      expect.arrayContaining([`request:${ok.requestId}`, 'run:run-7', 'step:sum']),
    );

    const failed = await ask(c, 'math', { input: { tool: 'fail', arguments: { reason: 'out of paper' } } });
    expect(failed.answer.context).toMatchObject({ status: 'error', error: 'failed: out of paper' });
  });
});

describe('crumbs mcp import, then an LLM agent calling an imported tool', () => {
  let mcp: TestMcpServer;
  beforeAll(async () => {
    mcp = await startMcpServer('streamable');
  });
  afterAll(() => mcp.close());

  it('imports the server tools as tool definitions the offline model calls natively', async () => {
    const ws = uniqueWorkspace('mcpimport');
    const { api, token } = localStack();
    let out = '';
    const code = await main(
      ['mcp', 'import', mcp.url, '--json', '--endpoint', api, '--token', token, '--workspace', ws],
      {
        stdout: (s) => {
          out += s;
        },
        stderr: () => undefined,
        env: {},
      },
    );
    expect(code).toBe(0);
    const rows = JSON.parse(out) as { id: string; state: string }[];
    expect(rows.map((r) => r.id).sort()).toEqual(
      ['tool-add', 'tool-calculator', 'tool-fail', 'tool-greet', 'tool-whoami'].sort(),
    );
    expect(rows.every((r) => r.state === 'active')).toBe(true);

    const c = client(ws);
    const calculator = await c.get('tool-calculator');
    expect(calculator.context).toMatchObject({
      implementation: 'mcp',
      input_schema: { properties: { expression: { type: 'string' } } },
    });
    await applyAndWait(c, 'agent-helper', 'agent.def.v1', {
      agent_id: 'helper',
      model: 'offline/crumbs',
      tools: ['calculator'],
    });
    const { answer } = await ask(c, 'helper', { message: 'what is 17*23?' });
    expect(answer.context).toMatchObject({ status: 'success', tool_rounds: 1 });
    expect(String(answer.context.message)).toContain('391');
    const [toolResponse] = (await c.list({ schema_name: 'tool.response.v1', limit: 5, view: 'full' })).items;
    expect(toolResponse?.context).toMatchObject({
      tool: 'calculator',
      status: 'success',
      output: { value: 391 },
    });
  });
});

describe('api agent with request and response transforms', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startHttpServer((req, res) => {
      const body = JSON.parse(req.body || '{}') as { city?: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ data: { name: body.city, temp_c: 21.5, auth: req.headers.authorization ?? null } }),
      );
    });
  });
  afterAll(() => server.close());

  it('sends the transformed request and answers with the transformed response', async () => {
    // The workspace whose secret partner-token the stack holds (shared-stack.ts).
    const ws = SECRETS_WORKSPACE;
    const c = client(ws);
    await applyAndWait(c, 'agent-weather', 'agent.def.v1', {
      agent_id: 'weather',
      type: 'api',
      transport: {
        kind: 'api',
        api: {
          endpoint: `${server.url}/v1/weather`,
          method: 'POST',
          authentication: { type: 'bearer', secret_ref: 'partner-token' },
        },
      },
      yaml: 'request_transform: \'{ "city": input.city }\'\nresponse_transform:\n  city: data.name\n  celsius: data.temp_c\n  authorized: data.auth = "Bearer partner-s3cret"\n',
    });
    const { answer } = await ask(c, 'weather', { input: { city: 'Bergen' } });
    expect(answer.context).toMatchObject({
      status: 'success',
      output: { city: 'Bergen', celsius: 21.5, authorized: true },
    });
    expect(JSON.parse(server.requests.at(-1)?.body ?? '')).toEqual({ city: 'Bergen' });
  });
});

describe('external agent against an A2A v1.0 server built with @a2a-js/sdk', () => {
  let partner: TestA2aServer;
  beforeAll(async () => {
    partner = await startA2aServer();
  });
  afterAll(() => partner.close());

  it('hands the request to the partner and answers with its artifacts', async () => {
    const ws = uniqueWorkspace('a2a');
    const c = client(ws);
    await applyAndWait(c, 'agent-adder', 'agent.def.v1', {
      agent_id: 'adder',
      type: 'external',
      transport: {
        kind: 'external',
        external: { endpoint: partner.baseUrl, protocol: 'a2a', healthCheck: { endpoint: '/health' } },
      },
    });
    const { answer } = await ask(c, 'adder', { message: 'please add', input: { a: 2, b: 3 } });
    expect(answer.context).toMatchObject({ status: 'success', output: { sum: 5 }, text: 'the sum is 5' });
  });

  it('fails fast with a clear error once the circuit of a partner that is down is open', async () => {
    const down = await startA2aServer();
    const url = down.baseUrl;
    await down.close();
    const ws = uniqueWorkspace('a2adown');
    const c = client(ws);
    await applyAndWait(c, 'agent-gone', 'agent.def.v1', {
      agent_id: 'gone',
      type: 'external',
      transport: {
        kind: 'external',
        external: {
          endpoint: url,
          protocol: 'a2a',
          circuit_breaker: { failure_threshold: 1, cooldown_ms: 600_000 },
        },
      },
    });
    const first = await ask(c, 'gone', { message: 'hello?' });
    expect(first.answer.context).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/is unavailable: the circuit is open after 1 consecutive failures/),
    });
    const second = await ask(c, 'gone', { message: 'still there?' });
    expect(second.answer.context).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/circuit is open.*the next attempt goes through after/),
    });
  });
});

describe('function agent in the sandbox', () => {
  it('returns a computed result, contains every escape, and keeps working after them', async () => {
    const ws = uniqueWorkspace('fn');
    const c = client(ws);
    const fn = async (id: string, code: string) =>
      applyAndWait(c, `agent-${id}`, 'agent.def.v1', {
        agent_id: id,
        type: 'function',
        function_code: code,
        transport: { kind: 'function', function: { timeout_ms: 500, memory_mb: 16 } },
      });
    await fn(
      'stats',
      `async function handler(input, ctx) {
      const sum = input.values.reduce((a, b) => a + b, 0);
      console.log('n =', input.values.length);
      await ctx.create({ schema_name: 'stats.result.v1', title: 'mean', context: { mean: sum / input.values.length } });
      return { sum, mean: sum / input.values.length };
    }`,
    );
    const { answer } = await ask(c, 'stats', { input: { values: [2, 4, 9] } });
    expect(answer.context).toMatchObject({
      status: 'success',
      output: { sum: 15, mean: 5 },
      logs: ['log: n = 3'],
    });
    const created = await eventually(
      async () => (await c.list({ schema_name: 'stats.result.v1', limit: 1, view: 'full' })).items[0],
    );
    expect(created.context).toEqual({ mean: 5 });

    const escapes: [string, string, RegExp][] = [
      ['loop', 'async function handler() { for (;;) {} }', /time limit of 500 ms/],
      [
        'bomb',
        'async function handler() { const a = []; let s = "x"; for (;;) { s += s.length; a.push(s.split("")); } }',
        /memory|time limit/,
      ],
      ['proc', 'async function handler() { return process.env; }', /ReferenceError/],
      ['req', 'async function handler() { return require("fs"); }', /ReferenceError/],
      ['imp', 'async function handler() { return await import("fs"); }', /./],
      [
        'net',
        'async function handler() { return await fetch("http://169.254.169.254/"); }',
        /ReferenceError/,
      ],
      [
        'tamper',
        'Object.prototype.x = 1; globalThis.JSON = null; async function handler() { return 1; }',
        /./,
      ],
    ];
    for (const [id, code] of escapes) await fn(id, code);
    const answers = await Promise.all(escapes.map(([id]) => ask(c, id, { input: {} })));
    escapes.forEach(([id, , message], i) => {
      expect(answers[i]?.answer.context, id).toMatchObject({
        status: 'error',
        error: expect.stringMatching(message),
      });
    });
    const after = await ask(c, 'stats', { input: { values: [1, 1] } });
    expect(after.answer.context).toMatchObject({ status: 'success', output: { sum: 2, mean: 1 } });
  });
});
