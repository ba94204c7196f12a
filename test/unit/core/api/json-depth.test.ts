/**
 * The protocol servers' nesting check (`json-depth.ts`) against what `JSON.parse` reads: on generated JSON
 * documents (strings full of brackets, quotes and escapes included) the depth read from the text is the depth of
 * the parsed value; past the limit it stops counting there; 10,000 levels are refused without recursion. The MCP
 * and A2A endpoints answer a message nested 10,000 deep with a 422 (as the API answers a body past its depth) and a JSON-RPC Invalid Request naming the limit
 * (it was a -32603 "Maximum call stack size exceeded"), and still take data as deep as a breadcrumb stores.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createA2aHttp } from '#shared/core/a2a/http.ts';
import type { Caller, HttpRequest } from '#shared/core/api/http.ts';
import { depthProblem, jsonNestingDepth, MAX_MESSAGE_DEPTH } from '#shared/core/api/json-depth.ts';
import { createMcpHttp } from '#shared/core/mcp/http.ts';
import { activeDefinition, inMemoryApi } from '../../../support/memory/api.ts';

const BASE = 'https://api.example.com/prod';

/** The depth of a parsed value, walked without recursion. */
function parsedDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, d + 1);
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

describe('jsonNestingDepth', () => {
  it('agrees with the parsed value on generated documents, brackets inside strings included', () => {
    const tricky = fc.stringMatching(/^[[\]{}"\\a,:]{0,12}$/);
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.integer(),
        fc.oneof(fc.string(), tricky),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(fc.oneof(fc.string(), tricky), tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, fc.boolean(), (v, pretty) => {
        const text = JSON.stringify(v, null, pretty ? 2 : undefined);
        expect(jsonNestingDepth(text)).toBe(parsedDepth(JSON.parse(text)));
      }),
      { numRuns: 500 },
    );
  });

  it('stops at the first level past the limit, and refuses 10,000 levels', () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    expect(jsonNestingDepth(deep, 5)).toBe(6);
    expect(depthProblem(deep)).toBe(
      `the message is nested more than ${MAX_MESSAGE_DEPTH} levels deep (the limit of arrays and objects within one another)`,
    );
    const fits = `${'{"a":'.repeat(MAX_MESSAGE_DEPTH)}1${'}'.repeat(MAX_MESSAGE_DEPTH)}`;
    expect(depthProblem(fits)).toBeUndefined();
    expect(depthProblem(`[${fits}]`)).toMatch(/nested more than/);
    expect(depthProblem(undefined)).toBeUndefined();
  });
});

describe('the MCP and A2A endpoints', () => {
  const ann: Caller = { principal: 'user:ann', workspaces: ['ws'] };
  const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  const post = (path: string, body: string): HttpRequest => ({
    method: 'POST',
    path,
    headers: {
      host: 'api.example.com',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    query: {},
    body,
    caller: ann,
  });
  const refusal = {
    jsonrpc: '2.0',
    id: null,
    error: {
      code: -32600,
      message: `Invalid Request: the message is nested more than ${MAX_MESSAGE_DEPTH} levels deep (the limit of arrays and objects within one another)`,
    },
  };

  it('refuse a message nested 10,000 deep with a 422 naming the limit, as the API does', async () => {
    const { store, api } = inMemoryApi();
    await activeDefinition(store, 'ws', 'agent-helper', 'agent.def.v1', {
      agent_id: 'helper',
      model: 'offline/echo',
    });
    const mcp = createMcpHttp({ api, baseUrl: BASE });
    const a2a = createA2aHttp({ api, baseUrl: BASE });
    const deepCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crumbs_create","arguments":${nested(10_000)}}}`;
    const deepSend = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":${nested(10_000)}}`;
    for (const answer of [
      await mcp(post('/v1/workspaces/ws/mcp', deepCall)),
      await a2a(post('/a2a/workspaces/ws/agents/helper', deepSend)),
    ]) {
      expect(answer.statusCode).toBe(422);
      expect(JSON.parse(String(answer.body))).toEqual(refusal);
    }
  });

  it('take data as deep as a breadcrumb stores', async () => {
    const { api } = inMemoryApi();
    const mcp = createMcpHttp({ api, baseUrl: BASE });
    const context = JSON.parse(nested(30)) as Record<string, unknown>;
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'crumbs_create', arguments: { schema_name: 'note.deep.v1', title: 'deep', context } },
    });
    const answer = await mcp(post('/v1/workspaces/ws/mcp', body));
    expect(answer.statusCode).toBe(200);
    const result = JSON.parse(String(answer.body)) as { result: { isError?: boolean } };
    expect(result.result.isError).toBeFalsy();
  });
});
