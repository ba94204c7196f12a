/**
 * Context keys JavaScript objects inherit (`constructor`, `prototype`, `toString`, …) are plain data on every path a
 * context takes: stored and returned as sent by POST, PUT and PATCH, in history and versions, through `llm_hints`
 * views (include, exclude, format, extract), and matched by selectors' `context_match` — routed end to end to a
 * tool. `__proto__` is the one key refused: a 422 in a context, an invalid definition in a selector path; hints
 * naming it reach nothing outside the record.
 */
import { describe, expect, it } from 'vitest';
import { api, eventually, uniqueWorkspace } from '../support/local.ts';

// Values that fooled the DynamoDB marshaller's type check (it reads `value.constructor.name`).
const CONTEXT = {
  constructor: { name: 'String' },
  prototype: { constructor: 1 },
  toString: 'plain',
  valueOf: null,
  nested: {
    constructor: { name: 'Set' },
    size: 1,
    list: [{ constructor: { name: 'Map' } }, { constructor: { name: 'Buffer' } }],
  },
  hasOwnProperty: { constructor: { name: 'Number' } },
};

describe('context keys objects inherit', () => {
  it('are stored and returned as sent by POST, PUT and PATCH, in history and at a version', async () => {
    const a = api(uniqueWorkspace('inherited'));
    const created = await a.call('POST', '', { schema_name: 'note.v1', context: CONTEXT });
    expect(created.status).toBe(201);
    expect(created.body.context).toEqual(CONTEXT);
    const put = await a.call('PUT', '/put-me', { schema_name: 'note.v1', context: { constructor: 1 } });
    expect(put.status).toBe(201);
    const patched = await a.call('PATCH', '/put-me', { context: CONTEXT }, { 'if-match': '1' });
    expect(patched.status).toBe(200);
    expect(patched.body.context).toEqual(CONTEXT);
    expect((await a.call('GET', '/put-me')).body.context).toEqual(CONTEXT);
    expect((await a.call('GET', '/put-me/full')).body.context).toEqual(CONTEXT);
    expect((await a.call('GET', '/put-me/versions/1')).body.context).toEqual({ constructor: 1 });
    const history = (await a.call('GET', '/put-me/history')).body.items as { context: unknown }[];
    expect(history.map((v) => v.context)).toEqual([CONTEXT, { constructor: 1 }]);
  });

  it('refuses a __proto__ key with a 422 naming it, and writes nothing', async () => {
    const a = api(uniqueWorkspace('inherited'));
    const res = await a.call(
      'PUT',
      '/proto',
      '{"schema_name":"note.v1","context":{"a":{"__proto__":{"x":1}}}}',
    );
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.errors)).toContain('__proto__');
    expect((await a.call('GET', '/proto')).status).toBe(404);
  });

  it('read through llm_hints as data; hints naming __proto__ reach nothing beyond the record', async () => {
    const a = api(uniqueWorkspace('inherited'));
    const res = await a.call('PUT', '/hinted', {
      schema_name: 'note.v1',
      context: { ...CONTEXT, secret: 's' },
      llm_hints: {
        exclude: ['secret', '__proto__.toString', 'constructor.prototype'],
        transform: {
          f: { type: 'format', format: '{constructor.name}|{toString}|{missing.constructor}' },
          x: { type: 'extract', value: '$.nested.constructor.name' },
          constructor: { type: 'literal', literal: 'replaced' },
        },
        mode: 'merge',
      },
    });
    expect(res.status).toBe(201);
    const { secret: _secret, ...visible } = CONTEXT as Record<string, unknown> & { secret?: string };
    expect((await a.call('GET', '/hinted')).body.context).toEqual({
      ...visible,
      f: 'String|plain|',
      x: 'Set',
      constructor: 'replaced',
    });
    // The process still has its prototypes: an exclude of `__proto__.toString` once deleted Object's toString.
    expect(typeof Object.prototype.toString).toBe('function');
    const other = await a.call('POST', '', { schema_name: 'note.v1', context: { a: 1 } });
    expect(other.status).toBe(201);
    const included = await a.call('PUT', '/included', {
      schema_name: 'note.v1',
      context: { a: 1 },
      llm_hints: { include: ['a', 'constructor', 'constructor.name', 'toString'] },
    });
    expect(included.status).toBe(201);
    // Not own keys of this context: nothing is picked up from Object.
    expect((await a.call('GET', '/included')).body.context).toEqual({ a: 1 });
  });

  it('are matched by context_match and routed to a tool; a __proto__ path makes the definition invalid', async () => {
    const ws = uniqueWorkspace('inherited');
    const a = api(ws);
    const refused = await a.call('PUT', '/t-proto', {
      schema_name: 'tool.def.v1',
      context: {
        name: 't-proto',
        description: 'never',
        implementation: 'echo',
        subscriptions: {
          selectors: [
            { role: 'trigger', context_match: [{ path: '$.__proto__.x', op: 'exists', value: true }] },
          ],
        },
      },
    });
    // Definitions are data: stored, and their status says why they cannot run.
    expect(refused.status).toBe(201);
    const invalid = await eventually(async () => {
      const items = (
        await a.call('GET', '?schema_name=definition.status.v1&tag=definition:t-proto&view=full')
      ).body.items as { context: { state?: string; errors?: unknown } }[] | undefined;
      return items?.find((s) => s.context.state === 'invalid');
    }, 30_000);
    expect(JSON.stringify(invalid.context.errors)).toContain('__proto__');

    const def = await a.call('PUT', '/t-ctor', {
      schema_name: 'tool.def.v1',
      context: {
        name: 't-ctor',
        description: 'echoes what names constructor.kind go',
        implementation: 'echo',
        subscriptions: {
          selectors: [
            {
              role: 'trigger',
              schema_name: 'inherited.request.v1',
              context_match: [{ path: '$.constructor.kind', op: 'eq', value: 'go' }],
            },
          ],
        },
      },
    });
    expect(def.status).toBe(201);
    await eventually(async () => {
      const statuses = (
        await a.call('GET', '?schema_name=definition.status.v1&tag=definition:t-ctor&view=full')
      ).body.items as { context: { state?: string } }[] | undefined;
      return statuses?.some((s) => s.context.state === 'active') ? true : undefined;
    }, 30_000);

    const miss = await a.call('POST', '', {
      schema_name: 'inherited.request.v1',
      context: { constructor: { kind: 'stay' } },
    });
    const hit = await a.call('POST', '', {
      schema_name: 'inherited.request.v1',
      context: { constructor: { kind: 'go' }, prototype: 'p' },
    });
    const answer = await eventually(async () => {
      const items = (await a.call('GET', '?schema_name=tool.response.v1&view=full')).body.items as
        | { causation?: { caused_by: string }; context: Record<string, unknown> }[]
        | undefined;
      return items?.find((i) => i.causation?.caused_by === `${String(hit.body.id)}@1`);
    }, 30_000);
    expect(JSON.stringify(answer.context)).toContain('go');
    const all = (await a.call('GET', '?schema_name=tool.response.v1&view=full')).body.items as {
      causation?: { caused_by: string };
    }[];
    expect(all.some((i) => i.causation?.caused_by === `${String(miss.body.id)}@1`)).toBe(false);
  });
});
