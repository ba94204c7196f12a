/**
 * Only people write or delete `guardrail.def.v1`, through the API as themselves: an agent's or a tool's principal,
 * and the plain-put principal that names nobody, are refused with 403 before anything is read or stored; a person's
 * policy with a bad pattern is refused with 422 naming it. An agent's own writes are refused by the allow-list.
 */
import { describe, expect, it } from 'vitest';
import { createApi } from '#shared/core/api/api.ts';
import type { Caller, HttpRequest } from '#shared/core/api/http.ts';
import { PLAIN_PUT_PRINCIPAL } from '#shared/domain/breadcrumb.ts';
import { protocolRefusal } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { guardrailsApi } from '#shared/rooms/guardrails/routes.ts';

const writes: string[] = [];
const store = {
  create: async () => {
    writes.push('create');
    throw new Error('stored');
  },
  upsert: async () => {
    writes.push('upsert');
    throw new Error('stored');
  },
  get: async () => ({ schema_name: 'guardrail.def.v1' }),
  delete: async () => {
    writes.push('delete');
  },
} as unknown as BreadcrumbStore;

const app = createApi({ store, rooms: [guardrailsApi({ store })] });

function call(method: string, path: string, principal: string, body?: unknown) {
  const caller: Caller = { principal, workspaces: '*' };
  const request: HttpRequest = {
    method,
    path: `/v1/workspaces/ws/breadcrumbs${path}`,
    headers: { 'content-type': 'application/json' },
    query: {},
    body: body === undefined ? undefined : JSON.stringify(body),
    caller,
  };
  return app(request);
}

const POLICY = {
  schema_name: 'guardrail.def.v1',
  context: { guardrail_id: 'p', words: { terms: ['x'], action: 'block' } },
};

describe('The guardrail.def.v1 write gate', () => {
  it('refuses every writer but a person, for create, replace and delete, storing nothing', async () => {
    for (const principal of ['agent:helper', 'tool:http', PLAIN_PUT_PRINCIPAL, 'system:rule-manager']) {
      expect((await call('POST', '', principal, POLICY)).statusCode).toBe(403);
      expect((await call('PUT', '/g1', principal, POLICY)).statusCode).toBe(403);
      expect((await call('DELETE', '/g1', principal)).statusCode).toBe(403);
    }
    expect(writes).toEqual([]);
  });

  it("refuses a person's policy whose pattern cannot compile, naming it", async () => {
    const bad = await call('PUT', '/g1', 'user:ann', {
      schema_name: 'guardrail.def.v1',
      context: { guardrail_id: 'p', patterns: [{ name: 'lookbehind', pattern: '(?<=a)b', action: 'mask' }] },
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('pattern lookbehind cannot compile');
    expect(writes).toEqual([]);
  });

  it("lets a person's valid policy through to the store", async () => {
    await call('PUT', '/g1', 'user:ann', POLICY);
    expect(writes).toEqual(['upsert']);
  });

  it('is never written by an agent: the allow-list refuses it as a definition', () => {
    expect(protocolRefusal('guardrail.def.v1', [])).toMatch(/does not write definitions/);
    expect(protocolRefusal('guardrail.event.v1', [])).toMatch(/written by crumbs and people/);
  });
});
