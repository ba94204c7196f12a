/**
 * The `http` tool with credentials by `secret_ref`, through the local stack: a `tool.def.v1` whose config names
 * headers from the workspace's secrets, a `tool.request.v1` with literal headers of its own, and a loopback server
 * that checks both arrived. The secret's value is in no breadcrumb (request, answer, status). The same definition in
 * another workspace, naming the first one's secret, is `invalid` at that field and gets nothing; a malformed ref is
 * refused the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type TestHttpServer } from '../support/http-server.ts';
import { api, eventually, uniqueWorkspace, workspaceItems } from '../support/local.ts';
import { SECRETS_WORKSPACE, TEST_SECRETS } from '../support/shared-stack.ts';

const SECRET_VALUE = TEST_SECRETS[SECRETS_WORKSPACE]['partner-token'];
// A tool name of its own: the secrets workspace is shared with the agent-type tests.
const TOOL = `partner-http-${Math.random().toString(36).slice(2, 8)}`;

type Status = { context: { state: string; errors: { path: string; message: string }[] } };

async function statusOf(ws: string, id: string): Promise<Status['context']> {
  const status = await eventually(async () => {
    const res = await api(ws).call(
      'GET',
      `?schema_name=definition.status.v1&tag=definition:${id}&limit=1&view=full`,
    );
    const item = (res.body.items as Status[] | undefined)?.[0];
    return item && item.context.state !== 'pending' ? item : undefined;
  }, 45_000);
  return status.context;
}

let partner: TestHttpServer;
const definition = () => ({
  schema_name: 'tool.def.v1',
  context: {
    name: TOOL,
    implementation: 'http',
    config: {
      allowed_hosts: ['127.0.0.1'],
      allow_private: true,
      headers: { 'X-Client': 'crumbs', 'X-Partner-Key': { secret_ref: 'partner-token' } },
      authentication: { type: 'bearer', secret_ref: 'partner-token' },
    },
  },
});

beforeAll(async () => {
  partner = await startHttpServer((req, res) => {
    const authorized =
      req.headers.authorization === `Bearer ${SECRET_VALUE}` && req.headers['x-partner-key'] === SECRET_VALUE;
    res.writeHead(authorized ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ authorized, request_id: req.headers['x-request-id'] ?? null }));
  });
});
afterAll(() => partner.close());

describe('the http tool with credentials by secret_ref', () => {
  it("sends the workspace's secret and the request's own headers, and writes the secret nowhere", async () => {
    const ws = SECRETS_WORKSPACE;
    const id = `tool-${TOOL}`;
    expect((await api(ws).call('PUT', `/${id}`, definition())).status).toBe(201);
    expect((await statusOf(ws, id)).state).toBe('active');
    const requestId = `${TOOL}-1`;
    await api(ws).call('POST', '', {
      schema_name: 'tool.request.v1',
      context: {
        tool: TOOL,
        input: { url: `${partner.url}/v1/orders`, headers: { 'X-Request-Id': requestId } },
        requestId,
        requestedBy: 'tester',
      },
    });
    const answer = await eventually(async () => {
      const res = await api(ws).call(
        'GET',
        `?schema_name=tool.response.v1&tag=request:${requestId}&view=full`,
      );
      return (res.body.items as { context: Record<string, unknown> }[] | undefined)?.[0];
    }, 30_000);
    expect(answer.context).toMatchObject({
      status: 'success',
      output: { status: 200, body: { authorized: true, request_id: requestId } },
    });
    const received = partner.requests.find((r) => r.headers['x-request-id'] === requestId);
    expect(received?.headers['x-client']).toBe('crumbs');
    // Every record of this tool (definition, status, request, answer and their bookkeeping); the workspace is
    // shared with the agent-type tests, whose api agent's transform spells the value out.
    const ours = (await workspaceItems(ws)).filter((item) => JSON.stringify(item).includes(TOOL));
    expect(ours.length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(ours)).not.toContain(SECRET_VALUE);
  });

  it("makes the same definition in another workspace invalid at the field naming the first one's secret", async () => {
    const ws = uniqueWorkspace('http-secret-b');
    const id = `tool-${TOOL}`;
    expect((await api(ws).call('PUT', `/${id}`, definition())).status).toBe(201);
    const status = await statusOf(ws, id);
    expect(status.state).toBe('invalid');
    expect(status.errors.map((e) => e.path).sort()).toEqual([
      'config.authentication.secret_ref',
      'config.headers.X-Partner-Key.secret_ref',
    ]);
    expect(status.errors[0]?.message).toContain(ws);

    // It gets no rule: a request for the tool there is never answered, and the partner never called.
    const calls = partner.requests.length;
    await api(ws).call('POST', '', {
      schema_name: 'tool.request.v1',
      context: { tool: TOOL, input: { url: `${partner.url}/v1/orders` }, requestId: 'b-1', requestedBy: 'x' },
    });
    await new Promise((r) => setTimeout(r, 2_000));
    const answers = await api(ws).call('GET', '?schema_name=tool.response.v1&tag=request:b-1');
    expect(answers.body.items).toEqual([]);
    expect(partner.requests.length).toBe(calls);
  });

  it('makes a definition whose secret_ref is a path into another namespace invalid, naming the field', async () => {
    const ws = uniqueWorkspace('http-secret-path');
    const bad = definition();
    bad.context.config.headers['X-Partner-Key'] = { secret_ref: `../${SECRETS_WORKSPACE}/partner-token` };
    // Definitions are stored as written and judged by the rule manager: the status names the field.
    expect((await api(ws).call('PUT', '/tool-bad', bad)).status).toBe(201);
    const status = await statusOf(ws, 'tool-bad');
    expect(status.state).toBe('invalid');
    const errors = status.errors;
    expect(errors).toContainEqual({
      path: 'config.headers.X-Partner-Key.secret_ref',
      message: expect.stringMatching(/is a path/),
    });
  });
});
