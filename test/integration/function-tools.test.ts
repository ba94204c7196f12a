/**
 * Function tools (`tool.def.v1` with `implementation: "function"`) on the shared local stack: the definition is
 * checked when written, the rule manager routes its requests to the runner that loads the sandbox
 * (executor-agent-sandbox), and the code's answer is held to the tool's schemas — called as an API user writes a
 * tool.request.v1, from a workflow step, and over MCP (the official SDK's client). Code written to escape or to
 * run forever is answered with an error naming the limit, and the tool answers the next request as before.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { api, eventually, localStack, uniqueWorkspace } from '../support/local.ts';

type Json = Record<string, unknown>;
const ws = uniqueWorkspace('fntool');
const call = api(ws).call;
const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
});

async function define(id: string, context: Json, schema_name = 'tool.def.v1'): Promise<void> {
  const put = await call('PUT', `/${id}`, { schema_name, context });
  expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
  const version = Number(put.body.version);
  const status = await eventually(async () => {
    const page = await call(
      'GET',
      `?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:${id}`)}&limit=1&view=full`,
    );
    const s = ((page.body.items ?? []) as { context: Json }[])[0]?.context;
    return s && Number(s.definition_version) >= version ? s : undefined;
  }, 30_000);
  expect(status, JSON.stringify(status)).toMatchObject({ state: 'active' });
}

/** A tool.request.v1 as an API user writes it; its one answer. */
async function request(tool: string, input: unknown): Promise<Json> {
  const requestId = `r-${Math.random().toString(36).slice(2, 10)}`;
  const created = await call('POST', '', {
    schema_name: 'tool.request.v1',
    tags: [`request:${requestId}`],
    context: { tool, input, requestId },
  });
  expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
  return eventually(async () => {
    const page = await call(
      'GET',
      `?schema_name=tool.response.v1&tag=${encodeURIComponent(`request:${requestId}`)}&limit=1&view=full`,
    );
    return ((page.body.items ?? []) as { context: Json }[])[0]?.context;
  }, 40_000);
}

const SUM = {
  name: 'sum',
  description: 'Adds numbers.',
  implementation: 'function',
  function: {
    code: `async function handler(input, ctx) {
      const total = input.values.reduce((a, b) => a + b, 0);
      const checked = await ctx.callTool({ tool: 'calculator', input: { expression: input.values.join(' + ') || '0' } });
      return { total, checked: checked.result, by: (await ctx.request()).tool };
    }`,
    timeout_ms: 2_000,
    memory_mb: 16,
  },
  input_schema: {
    type: 'object',
    properties: { values: { type: 'array', items: { type: 'number' }, maxItems: 100 } },
    required: ['values'],
  },
  output_schema: {
    type: 'object',
    properties: { total: { type: 'number' }, checked: { type: 'number' }, by: { type: 'string' } },
    required: ['total'],
  },
};

describe('function tools', () => {
  it('makes a definition whose function is missing, misplaced or past its limits invalid, naming the field', async () => {
    const cases: [Json, RegExp][] = [
      [{ name: 'f1', implementation: 'function' }, /"function"/],
      [
        { name: 'f2', implementation: 'echo', function: { code: 'async function handler() {}' } },
        /"implementation"/,
      ],
      [{ name: 'f3', implementation: 'function', function: { code: '' } }, /function\.code/],
      [
        {
          name: 'f4',
          implementation: 'function',
          function: { code: 'async function handler() {}', memory_mb: 1024 },
        },
        /(?=.*function\.memory_mb)(?=.*256 MB)/,
      ],
      [
        {
          name: 'f5',
          implementation: 'function',
          function: { code: 'async function handler() {}', timeout_ms: 600_000 },
        },
        /function\.timeout_ms/,
      ],
    ];
    for (const [context, field] of cases) {
      const id = `tool-${String(context.name)}`;
      const put = await call('PUT', `/${id}`, { schema_name: 'tool.def.v1', context });
      expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
      const status = await eventually(async () => {
        const page = await call(
          'GET',
          `?schema_name=definition.status.v1&tag=${encodeURIComponent(`definition:${id}`)}&limit=1&view=full`,
        );
        return ((page.body.items ?? []) as { context: Json }[])[0]?.context;
      }, 30_000);
      expect(status.state, JSON.stringify(status)).toBe('invalid');
      expect(JSON.stringify(status.errors)).toMatch(field);
    }
  });

  it('runs the code in the sandbox, its input and output held to the schemas', async () => {
    await define('tool-sum', SUM);
    expect(await request('sum', { values: [2, 4, 9] })).toMatchObject({
      status: 'success',
      output: { total: 15, checked: 15, by: 'sum' },
    });
    expect(await request('sum', { values: ['x'] })).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/^invalid input: input\.values\[0\]/),
    });
    await define('tool-liar', {
      name: 'liar',
      implementation: 'function',
      function: { code: 'async function handler() { return { total: "many" }; }' },
      output_schema: SUM.output_schema,
    });
    expect(await request('liar', {})).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/^invalid output: output\.total/),
    });
  });

  it('answers code that escapes, loops or eats memory with an error naming it, and goes on answering', async () => {
    const escapes: [string, string, RegExp][] = [
      ['loop', 'async function handler() { for (;;) {} }', /time limit of 300 ms \(function\.timeout_ms\)/],
      [
        'bomb',
        'async function handler() { const a = []; let s = "x"; for (;;) { s += s.length; a.push(s.split("")); } }',
        /memory|time limit/,
      ],
      ['proc', 'async function handler() { return process.env; }', /ReferenceError/],
      ['req', 'async function handler() { return require("fs"); }', /ReferenceError/],
      [
        'net',
        'async function handler() { return await fetch("http://169.254.169.254/"); }',
        /ReferenceError/,
      ],
      [
        'store',
        'async function handler(input, ctx) { return await ctx.search({}); }',
        /not a function|undefined/,
      ],
      ['throws', 'async function handler() { throw new Error("no way"); }', /no way/],
    ];
    for (const [name, code] of escapes) {
      await define(`tool-${name}`, {
        name,
        implementation: 'function',
        // Time for the sandbox to start on a busy machine, but for the two that run until a limit stops them.
        function: { code, timeout_ms: name === 'loop' || name === 'bomb' ? 300 : 10_000, memory_mb: 8 },
      });
    }
    const answers = await Promise.all(escapes.map(([name]) => request(name, {})));
    escapes.forEach(([name, , message], i) => {
      expect(answers[i], name).toMatchObject({ status: 'error', error: expect.stringMatching(message) });
      expect(String(answers[i]?.error), name).toMatch(new RegExp(`^${name}: `));
    });
    expect(await request('sum', { values: [1, 1] })).toMatchObject({
      status: 'success',
      output: { total: 2 },
    });
  });

  it('is a step of a workflow', async () => {
    await define(
      'wf-adds',
      {
        workflow_id: 'adds',
        steps: [{ id: 'add', tool: 'sum', input: { values: '=input.values' } }],
        output: '=steps.add',
      },
      'workflow.def.v1',
    );
    const { api: endpoint, token } = localStack();
    const runs = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${endpoint}/v1/workspaces/${ws}/runs${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const started = await eventually(async () => {
      const res = await runs('POST', '', { workflow: 'adds', input: { values: [20, 22] } });
      return res.status < 300 ? res : undefined;
    }, 30_000);
    let last: Json = {};
    const run = await eventually(async () => {
      last = (await runs('GET', `/${String(started.body.run_id)}`)).body;
      return last.status === 'succeeded' || last.status === 'failed' ? last : undefined;
    }, 45_000).catch(() => last);
    expect(run).toMatchObject({ status: 'succeeded', output: { total: 42 } });
  });

  it('is called over MCP like any tool', async () => {
    const client = new Client({ name: 'function-tools-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${localStack().api}/v1/workspaces/${ws}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${localStack().token}` } },
      }),
    );
    clients.push(client);
    const listed = (await client.listTools()).tools.find((t) => t.name === 'sum');
    expect(listed).toMatchObject({ description: 'Adds numbers.', inputSchema: SUM.input_schema });
    const result = await client.callTool({ name: 'sum', arguments: { values: [3, 4] } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ total: 7, checked: 7 });
  });
});
