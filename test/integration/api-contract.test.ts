/**
 * The API against its own document, route by route, on the local stack: every entry of the route table
 * (`shared/core/api/contract/route-table.ts`, which `docs/openapi.json` is generated from) is sent a valid request
 * and its answer checked against the document — a documented status, and a body valid against that status's
 * schema (JSON Schema 2020-12, `@cfworker/json-schema`) — and, where the route takes input, an invalid one,
 * expecting a documented 4xx with a problem+json body. A route added to the table without a case here fails.
 */
import { createHash } from 'node:crypto';
import { Validator } from '@cfworker/json-schema';
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '#shared/core/api/contract/openapi.ts';
import { ROUTE_TABLE, type RouteContract } from '#shared/core/api/contract/route-table.ts';
import { eventually, localStack, uniqueWorkspace } from '../support/local.ts';

type Json = Record<string, unknown>;
const doc = openApiDocument() as Json & { components: Json; paths: Record<string, Record<string, Json>> };

interface Req {
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
  /** No Authorization header. */
  anonymous?: true;
}
interface Case {
  valid: Req;
  /** Why no invalid request can be made (a public route that reads no input). */
  invalid: Req | { none: string };
}

const ws = uniqueWorkspace('contract');
const W = `/v1/workspaces/${ws}`;
const B = `${W}/breadcrumbs`;
const ids = { note: '', deleted: 'contract-del', put: 'contract-put', run: '', wf: 'wf-contract' };
const jsonRpc = (method: string, params: unknown = {}) => ({ jsonrpc: '2.0', id: 1, method, params });
const MCP_ACCEPT = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const noToken = (path: string): Req => ({ path, anonymous: true });
/** A small file the attachments' routes store and read back. */
const HELLO = {
  base64: Buffer.from('hello').toString('base64'),
  sha256: createHash('sha256').update('hello').digest('hex'),
};

function cases(): Record<string, Case> {
  return {
    'GET /health': { valid: { path: '/health' }, invalid: { none: 'public, reads no input' } },
    'GET /v1/openapi.json': {
      valid: { path: '/v1/openapi.json' },
      invalid: { none: 'public, reads no input' },
    },
    'GET /ui/sign-in.json': {
      valid: { path: '/ui/sign-in.json' },
      invalid: { none: 'public, reads no input' },
    },
    [`POST ${'/v1/workspaces/{ws}/breadcrumbs'}`]: {
      valid: {
        path: B,
        body: { schema_name: 'note.v1', context: { text: 'hi' } },
        headers: { 'idempotency-key': 'k-1' },
      },
      invalid: { path: B, body: { schema_name: 'Not A Schema', context: 3 } },
    },
    'GET /v1/workspaces/{ws}/breadcrumbs': {
      valid: { path: B, query: { schema_name: 'note.v1', limit: '1' } },
      invalid: { path: B, query: { limit: '0' } },
    },
    'GET /v1/workspaces/{ws}/breadcrumbs/search': {
      valid: { path: `${B}/search`, query: { q: 'hello' } },
      invalid: { path: `${B}/search`, query: { q: '' } },
    },
    'GET /v1/workspaces/{ws}/breadcrumbs/{id}': {
      valid: { path: `${B}/${ids.note}` },
      invalid: { path: `${B}/${ids.note}`, query: { view: 'everything' } },
    },
    'PUT /v1/workspaces/{ws}/breadcrumbs/{id}': {
      valid: { path: `${B}/${ids.put}`, body: { schema_name: 'note.v1', title: 'put', context: { n: 1 } } },
      invalid: { path: `${B}/${ids.put}`, body: { schema_name: 'note.v1' } },
    },
    'PATCH /v1/workspaces/{ws}/breadcrumbs/{id}': {
      valid: { path: `${B}/${ids.note}`, body: { title: 'patched' } },
      invalid: { path: `${B}/${ids.note}`, body: {} },
    },
    'DELETE /v1/workspaces/{ws}/breadcrumbs/{id}': {
      valid: { path: `${B}/${ids.deleted}` },
      invalid: { path: `${B}/${ids.note}`, headers: { 'if-match': 'not-a-version' } },
    },
    'GET /v1/workspaces/{ws}/breadcrumbs/{id}/full': {
      valid: { path: `${B}/${ids.note}/full` },
      invalid: { path: `${B}/no-such-crumb/full` },
    },
    'GET /v1/workspaces/{ws}/breadcrumbs/{id}/history': {
      valid: { path: `${B}/${ids.note}/history`, query: { view: 'full' } },
      invalid: { path: `${B}/${ids.note}/history`, query: { limit: '1000' } },
    },
    'GET /v1/workspaces/{ws}/breadcrumbs/{id}/versions/{n}': {
      valid: { path: `${B}/${ids.note}/versions/1` },
      invalid: { path: `${B}/${ids.note}/versions/0` },
    },
    'GET /v1/workspaces/{ws}/threads/{id}': {
      valid: { path: `${W}/threads/${ids.note}` },
      invalid: { path: `${W}/threads/no-such-thread` },
    },
    'GET /v1/workspaces/{ws}/changes': {
      valid: { path: `${W}/changes`, query: { wait: '0', backlog: '5' } },
      invalid: { path: `${W}/changes`, query: { wait: '99' } },
    },
    'GET /v1/workspaces/{ws}/changes/channel': {
      valid: { path: `${W}/changes/channel` },
      invalid: noToken(`${W}/changes/channel`),
    },
    'GET /v1/workspaces/{ws}/definitions': {
      valid: { path: `${W}/definitions` },
      invalid: noToken(`${W}/definitions`),
    },
    'GET /v1/workspaces/{ws}/definitions/{id}/explain': {
      valid: { path: `${W}/definitions/${ids.wf}/explain`, query: { breadcrumb: ids.note } },
      invalid: { path: `${W}/definitions/${ids.wf}/explain` },
    },
    'GET /v1/workspaces/{ws}/errors': {
      valid: { path: `${W}/errors`, query: { limit: '5' } },
      invalid: { path: `${W}/errors`, query: { limit: 'many' } },
    },
    'GET /v1/workspaces/{ws}/usage': {
      valid: { path: `${W}/usage`, query: { by: 'agent' } },
      invalid: { path: `${W}/usage`, query: { by: 'planet' } },
    },
    'GET /v1/workspaces/{ws}/usage/requests/{id}': {
      valid: { path: `${W}/usage/requests/${ids.run.replace(/^run-/, '')}` },
      invalid: noToken(`${W}/usage/requests/x`),
    },
    'POST /v1/workspaces/{ws}/runs': {
      valid: { path: `${W}/runs`, body: { workflow: 'contract', input: {} } },
      invalid: { path: `${W}/runs`, body: { workflow: '' } },
    },
    'GET /v1/workspaces/{ws}/runs': {
      valid: { path: `${W}/runs`, query: { limit: '5' } },
      invalid: { path: `${W}/runs`, query: { status: 'asleep' } },
    },
    'GET /v1/workspaces/{ws}/runs/{run_id}': {
      valid: { path: `${W}/runs/${ids.run}` },
      invalid: { path: `${W}/runs/run-nothing` },
    },
    ...Object.fromEntries(
      ['approve', 'reject', 'pause', 'resume', 'cancel', 'retry'].map((action) => [
        `POST /v1/workspaces/{ws}/runs/{run_id}/${action}`,
        {
          valid: {
            path: `${W}/runs/${ids.run}/${action}`,
            ...(action === 'retry' ? { body: { from_step: 'ask' } } : {}),
            ...(action === 'approve' ? { body: { input: { ok: true } } } : {}),
          },
          invalid: { path: `${W}/runs/${ids.run}/${action}`, body: { not: 'a field' } },
        } satisfies Case,
      ]),
    ),
    'GET /v1/workspaces/{ws}/guardrails': {
      valid: { path: `${W}/guardrails` },
      invalid: noToken(`${W}/guardrails`),
    },
    'POST /v1/workspaces/{ws}/guardrails/{id}/test': {
      valid: { path: `${W}/guardrails/guardrail-nothing/test`, body: { text: 'card 4111 1111 1111 1111' } },
      invalid: { path: `${W}/guardrails/guardrail-nothing/test`, body: { text: 5 } },
    },
    'GET /v1/workspaces/{ws}/threads/{thread}/guardrail-events': {
      valid: { path: `${W}/threads/thread-nothing/guardrail-events` },
      invalid: noToken(`${W}/threads/thread-nothing/guardrail-events`),
    },
    'GET /v1/workspaces/{ws}/approvals': {
      valid: { path: `${W}/approvals`, query: { status: 'all' } },
      invalid: { path: `${W}/approvals`, query: { status: 'some' } },
    },
    'GET /v1/workspaces/{ws}/approvals/{id}': {
      valid: { path: `${W}/approvals/approval-nothing` },
      invalid: noToken(`${W}/approvals/approval-nothing`),
    },
    'POST /v1/workspaces/{ws}/approvals/{id}': {
      valid: { path: `${W}/approvals/approval-nothing`, body: { decision: 'approve' } },
      invalid: { path: `${W}/approvals/approval-nothing`, body: { decision: 'maybe' } },
    },
    'GET /v1/workspaces/{ws}/streams/{stream_id}': {
      valid: { path: `${W}/streams/stream-contract-1` },
      invalid: { path: `${W}/streams/x` },
    },
    'GET /v1/workspaces/{ws}/streams/{stream_id}/events': {
      valid: { path: `${W}/streams/stream-contract-1/events` },
      invalid: { path: `${W}/streams/x/events` },
    },
    'POST /v1/workspaces/{ws}/requests/{id}/cancel': {
      valid: { path: `${W}/requests/${ids.note}/cancel`, body: { reason: 'done' } },
      invalid: { path: `${W}/requests/${ids.note}/cancel`, body: { reason: 42 } },
    },
    'GET /v1/workspaces/{ws}/export': {
      valid: { path: `${W}/export`, query: { limit: '2' } },
      invalid: { path: `${W}/export`, query: { limit: '-1' } },
    },
    'DELETE /v1/workspaces/{ws}': {
      valid: { path: `/v1/workspaces/${uniqueWorkspace('contract-gone')}` },
      invalid: noToken(W),
    },
    'POST /v1/workspaces/{ws}/mcp': {
      valid: {
        path: `${W}/mcp`,
        headers: MCP_ACCEPT,
        body: jsonRpc('initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'contract', version: '1' },
        }),
      },
      invalid: { path: `${W}/mcp`, headers: MCP_ACCEPT, body: '{"jsonrpc":' },
    },
    'GET /v1/workspaces/{ws}/mcp': {
      valid: { path: `${W}/mcp`, headers: MCP_ACCEPT },
      invalid: noToken(`${W}/mcp`),
    },
    'DELETE /v1/workspaces/{ws}/mcp': {
      valid: { path: `${W}/mcp`, headers: MCP_ACCEPT },
      invalid: noToken(`${W}/mcp`),
    },
    'GET /.well-known/oauth-protected-resource/v1/workspaces/{ws}/mcp': {
      valid: { path: `/.well-known/oauth-protected-resource/v1/workspaces/${ws}/mcp`, anonymous: true },
      invalid: {
        path: '/.well-known/oauth-protected-resource/v1/workspaces/not%20a%20workspace/mcp',
        anonymous: true,
      },
    },
    'POST /a2a/workspaces/{ws}/agents/{agent}': {
      valid: {
        path: `/a2a/workspaces/${ws}/agents/helper`,
        body: jsonRpc('GetTask', { id: 'no-such-task' }),
      },
      // A malformed message is a JSON-RPC error answered with 200 (documented so); a refused caller is a 401.
      invalid: { ...noToken(`/a2a/workspaces/${ws}/agents/helper`), body: jsonRpc('GetTask', { id: 'x' }) },
    },
    'GET /a2a/workspaces/{ws}/agents/{agent}/.well-known/agent-card.json': {
      valid: { path: `/a2a/workspaces/${ws}/agents/helper/.well-known/agent-card.json` },
      invalid: { path: `/a2a/workspaces/${ws}/agents/nobody/.well-known/agent-card.json` },
    },
    'GET /a2a/public/workspaces/{ws}/agents/{agent}/.well-known/agent-card.json': {
      valid: {
        path: `/a2a/public/workspaces/${ws}/agents/open/.well-known/agent-card.json`,
        anonymous: true,
      },
      invalid: {
        path: `/a2a/public/workspaces/${ws}/agents/helper/.well-known/agent-card.json`,
        anonymous: true,
      },
    },
    'GET /v1/workspaces/{ws}/memory': {
      valid: { path: `${W}/memory`, query: { actor: 'contract-person' } },
      invalid: { path: `${W}/memory`, query: { actor: 'not a sub!' } },
    },
    'DELETE /v1/workspaces/{ws}/memory': {
      valid: { path: `${W}/memory`, query: { actor: 'contract-person' } },
      invalid: { path: `${W}/memory`, query: { actor: 'not a sub!' } },
    },
    'GET /v1/workspaces/{ws}/memory/{id}': {
      // No record of that person: the documented 404 (the memory tests write and read records).
      valid: { path: `${W}/memory/no-such-record`, query: { actor: 'contract-person' } },
      invalid: { path: `${W}/memory/no-such-record`, query: { actor: 'not a sub!' } },
    },
    'POST /v1/workspaces/{ws}/attachments': {
      valid: { path: `${W}/attachments`, body: { media_type: 'text/plain', data_base64: HELLO.base64 } },
      invalid: { path: `${W}/attachments`, body: { media_type: 'text/plain', data_base64: 'not base64!' } },
    },
    'GET /v1/workspaces/{ws}/attachments': {
      valid: { path: `${W}/attachments` },
      invalid: noToken(`${W}/attachments`),
    },
    'POST /v1/workspaces/{ws}/attachments/uploads': {
      valid: { path: `${W}/attachments/uploads`, body: { media_type: 'text/plain', bytes: 10 } },
      invalid: { path: `${W}/attachments/uploads`, body: { media_type: 'text/plain', bytes: 0 } },
    },
    'POST /v1/workspaces/{ws}/attachments/uploads/{upload}': {
      // An upload id nobody staged: the documented 404 (staging and posting the file is the attachments tests' part).
      valid: { path: `${W}/attachments/uploads/up_${'a'.repeat(22)}` },
      invalid: { path: `${W}/attachments/uploads/up_${'a'.repeat(22)}`, body: { name: 'x'.repeat(300) } },
    },
    'GET /v1/workspaces/{ws}/attachments/{id}': {
      valid: { path: `${W}/attachments/att_${HELLO.sha256}`, query: { data: 'true' } },
      invalid: noToken(`${W}/attachments/att_${HELLO.sha256}`),
    },
  };
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function send(method: string, req: Req): Promise<Answer> {
  const query = new URLSearchParams(req.query ?? {}).toString();
  const res = await fetch(`${localStack().api}${req.path}${query ? `?${query}` : ''}`, {
    method,
    headers: {
      ...(req.anonymous ? {} : { authorization: `Bearer ${localStack().token}` }),
      ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...req.headers,
    },
    ...(req.body !== undefined
      ? { body: typeof req.body === 'string' ? req.body : JSON.stringify(req.body) }
      : {}),
    redirect: 'manual',
    signal: AbortSignal.timeout(30_000),
  });
  // An event stream that stays open (a stream's events) is read for its first events only.
  const reader = res.body?.getReader();
  let text = '';
  const decoder = new TextDecoder();
  const until = Date.now() + 3000;
  while (reader) {
    const chunk = await Promise.race([
      reader.read(),
      new Promise<{ done: true; value: undefined }>((r) =>
        setTimeout(() => r({ done: true, value: undefined }), Math.max(0, until - Date.now())),
      ),
    ]);
    if (chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
    if (Date.now() >= until) break;
  }
  await reader?.cancel().catch(() => undefined);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text };
}

/** The documented response of `status` (its own, or a problem the route lists), or undefined. */
function documented(route: RouteContract, status: number): Json | undefined {
  const op = doc.paths[route.path]?.[route.method.toLowerCase()] as { responses: Record<string, Json> };
  const r = op.responses[String(status)];
  if (r === undefined) return undefined;
  const ref = r.$ref;
  if (typeof ref === 'string')
    return (doc.components.responses as Record<string, Json>)[ref.split('/').pop() ?? ''];
  return r;
}

function check(route: RouteContract, answer: Answer): string[] {
  const response = documented(route, answer.status);
  if (response === undefined)
    return [`status ${answer.status} is not documented: ${answer.text.slice(0, 300)}`];
  const content = response.content as Record<string, { schema?: Json }> | undefined;
  if (content === undefined)
    return answer.text === '' ? [] : [`expected no body, got ${answer.text.slice(0, 200)}`];
  const type = answer.contentType.split(';')[0]?.trim() ?? '';
  const media = content[type];
  if (media === undefined)
    return [`content type ${type} is not documented (${Object.keys(content).join(', ')})`];
  if (type === 'text/event-stream') return [];
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return [`the body is not JSON: ${answer.text.slice(0, 200)}`];
  }
  const validator = new Validator({ ...media.schema, components: doc.components } as never, '2020-12', false);
  const result = validator.validate(body);
  return result.valid
    ? []
    : result.errors.slice(0, 5).map((e) => `${e.instanceLocation} ${e.error}: ${answer.text.slice(0, 300)}`);
}

beforeAll(async () => {
  const { api, token } = localStack();
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as Json };
  };
  const note = await call('POST', B, { schema_name: 'note.v1', title: 'a note', context: { text: 'hello' } });
  ids.note = String(note.body.id);
  await call('PUT', `${B}/${ids.deleted}`, { schema_name: 'note.v1', context: { gone: true } });
  await call('PUT', `${B}/${ids.wf}`, {
    schema_name: 'workflow.def.v1',
    context: { workflow_id: 'contract', steps: [{ id: 'ask', human: { prompt: 'ok?' } }] },
  });
  await call('PUT', `${B}/agent-helper`, {
    schema_name: 'agent.def.v1',
    context: { agent_id: 'helper', system_prompt: 'Help.', model: 'offline/echo' },
  });
  await call('PUT', `${B}/agent-open`, {
    schema_name: 'agent.def.v1',
    context: { agent_id: 'open', system_prompt: 'Help.', model: 'offline/echo', a2a: { public_card: true } },
  });
  await eventually(async () => {
    const defs = await call('GET', `${W}/definitions`);
    const items = (defs.body.items ?? []) as { state: string }[];
    return items.length === 3 && items.every((d) => d.state === 'active') ? true : undefined;
  }, 30_000);
  const run = await call('POST', `${W}/runs`, { workflow: 'contract', input: {} });
  ids.run = String(run.body.run_id);
  await eventually(
    async () => ((await call('GET', `${W}/runs/${ids.run}`)).body.status === 'waiting' ? true : undefined),
    30_000,
  );
}, 90_000);

describe('the API against docs/openapi.json, route by route', () => {
  it('has a case for every route of the table', () => {
    const all = cases();
    expect(ROUTE_TABLE.map((r) => `${r.method} ${r.path}`).filter((key) => !(key in all))).toEqual([]);
  });

  for (const route of ROUTE_TABLE) {
    const key = `${route.method} ${route.path}`;
    it(`${key}: a valid request is answered as documented, an invalid one with a documented 4xx`, async () => {
      const c = cases()[key];
      if (c === undefined) throw new Error(`no case for ${key}`);
      const valid = await send(route.method, c.valid);
      expect(check(route, valid), `valid ${key}`).toEqual([]);
      expect(valid.status, `valid ${key}: ${valid.text.slice(0, 300)}`).toBeLessThan(500);
      if ('none' in c.invalid) return;
      const invalid = await send(route.method, c.invalid);
      expect(invalid.status, `invalid ${key}: ${invalid.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
      expect(invalid.status).toBeLessThan(500);
      expect(check(route, invalid), `invalid ${key}`).toEqual([]);
    });
  }
});
