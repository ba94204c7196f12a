/**
 * Fuzzes the MCP endpoint of the local stack with property-based generators (fast-check): JSON-RPC messages with
 * MCP's methods and made-up ones, any params and ids, batches, broken JSON, odd headers, and calls of the breadcrumb
 * tools with any arguments. What DESIGN.md and the MCP spec promise:
 *
 * - nothing a client sends produces a 5xx;
 * - a 200 carries JSON-RPC responses only (a result or an error per request); a 4xx is a JSON-RPC error or, for the
 *   token, method and media checks the HTTP layer makes, a problem document.
 *
 * Reproducible: a fixed seed (CRUMBS_FUZZ_SEED overrides it, CRUMBS_FUZZ_RUNS the count), printed with a failure.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localStack, uniqueWorkspace } from '../support/local.ts';

const SEED = Number(process.env.CRUMBS_FUZZ_SEED ?? 20_261_126);
const RUNS = Number(process.env.CRUMBS_FUZZ_RUNS ?? 1000);
const ws = uniqueWorkspace('mcp-fuzz');

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'prompts/list',
  'notifications/initialized',
  'logging/setLevel',
  'completion/complete',
  'tasks/get',
];

const json = fc.jsonValue({ maxDepth: 3 });
const id = fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null), json);
const toolCall = fc.record({
  name: fc.oneof(
    fc.constantFrom('crumbs_get', 'crumbs_list', 'crumbs_create', 'nope'),
    fc.string({ maxLength: 40 }),
  ),
  arguments: fc.oneof(
    fc.dictionary(
      fc.constantFrom('id', 'schema_name', 'tag', 'limit', 'cursor', 'context', 'tags', 'title'),
      json,
    ),
    json,
  ),
});
const resourceRead = fc.record({
  uri: fc.oneof(
    fc.constantFrom(`crumbs://${ws}/breadcrumbs/x`, `crumbs://${ws}/tags/%`, `crumbs://other/breadcrumbs/x`),
    fc.string({ maxLength: 80 }).map((s) => `crumbs://${ws}/${s}`),
    fc.string({ maxLength: 80 }),
  ),
});
const message = fc.record(
  {
    jsonrpc: fc.oneof({ arbitrary: fc.constant('2.0'), weight: 8 }, fc.constant('1.0'), json),
    id: fc.oneof({ arbitrary: fc.nat(), weight: 6 }, id),
    method: fc.oneof({ arbitrary: fc.constantFrom(...METHODS), weight: 6 }, fc.string({ maxLength: 30 })),
    params: fc.oneof(
      json,
      toolCall,
      resourceRead,
      fc.record({ protocolVersion: fc.string(), capabilities: json, clientInfo: json }),
    ),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  { arbitrary: message.map((m) => JSON.stringify(m)), weight: 6 },
  fc.array(message, { maxLength: 4 }).map((m) => JSON.stringify(m)),
  json.map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.constant(''),
);
const goodHeaders = fc.record(
  {
    accept: fc.constant('application/json, text/event-stream'),
    'content-type': fc.constant('application/json'),
    'mcp-protocol-version': fc.constantFrom('2025-11-25', '2025-06-18'),
  },
  { requiredKeys: ['accept', 'content-type'] },
);
const anyHeaders = fc.record(
  {
    accept: fc.constantFrom('application/json, text/event-stream', 'application/json', 'text/html', '*/*'),
    'content-type': fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8'),
    'mcp-protocol-version': fc.oneof(fc.constantFrom('2025-11-25', '2025-06-18', '1999-01-01'), fc.string()),
    'mcp-session-id': fc.string({ maxLength: 40 }),
  },
  { requiredKeys: [] },
);
const headers = fc.oneof({ arbitrary: goodHeaders, weight: 4 }, anyHeaders);
const method = fc.oneof(
  { arbitrary: fc.constant('POST'), weight: 8 },
  fc.constantFrom('GET', 'DELETE', 'PUT'),
);

function isJsonRpcResponse(value: unknown): boolean {
  const list = Array.isArray(value) ? value : [value];
  return list.every(
    (m) =>
      m !== null &&
      typeof m === 'object' &&
      (m as { jsonrpc?: unknown }).jsonrpc === '2.0' &&
      ('result' in (m as object) || 'error' in (m as object)),
  );
}

describe('MCP endpoint fuzz', () => {
  it('answers anything a client sends without a 5xx, in JSON-RPC or a problem document', async () => {
    const url = `${localStack().api}/v1/workspaces/${ws}/mcp`;
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(method, headers, body, async (m, h, b) => {
        // Header values fetch cannot send (control characters) are a client's own failure, not the server's.
        const sendable = Object.fromEntries(
          Object.entries(h).filter(([, v]) => /^[\t\x20-\x7e]*$/.test(v as string)),
        ) as Record<string, string>;
        const res = await fetch(url, {
          method: m,
          headers: { ...sendable, authorization: `Bearer ${localStack().token}` },
          ...(m === 'GET' || m === 'DELETE' ? {} : { body: b }),
        });
        const text = await res.text();
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expect(res.status, `${m} ${b.slice(0, 200)} → ${text.slice(0, 300)}`).toBeLessThan(500);
        if (res.status === 202) return;
        if (text === '') return;
        const type = res.headers.get('content-type') ?? '';
        if (res.status === 200) {
          expect(isJsonRpcResponse(JSON.parse(text)), text.slice(0, 300)).toBe(true);
        } else if (type.includes('problem+json')) {
          expect(JSON.parse(text)).toMatchObject({ status: res.status, detail: expect.any(String) });
        } else {
          expect(isJsonRpcResponse(JSON.parse(text)), `${res.status} ${text.slice(0, 300)}`).toBe(true);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(
      `mcp fuzz: ${RUNS} requests, seed ${SEED}, statuses ${JSON.stringify(Object.fromEntries(seen))}`,
    );
  }, 300_000);
});
