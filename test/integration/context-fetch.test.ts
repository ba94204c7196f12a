/**
 * Context fetches past what a listing cannot hand out, on the local stack, through the `context.build` tool (the
 * same context assembly a trigger's `latest` and `recent` selectors run): the newest matching breadcrumbs expired
 * (TTL has not removed them yet), or sit under a busy tag among another schema's — `latest` still finds the live
 * one that is older.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, eventually, uniqueWorkspace } from '../support/local.ts';

const ws = uniqueWorkspace('ctx-fetch');
let requests = 0;

async function build(sources: unknown[]): Promise<Record<string, unknown>> {
  const requestId = `fetch-${++requests}`;
  const written = await api(ws).call('POST', '', {
    schema_name: 'tool.request.v1',
    context: { tool: 'context.build', input: { sources }, requestId, requestedBy: 'tester' },
  });
  expect(written.status).toBe(201);
  const answer = await eventually(async () => {
    const res = await api(ws).call('GET', `?schema_name=tool.response.v1&tag=request:${requestId}&view=full`);
    return (
      res.body.items as { context: { status: string; output?: { sources: Record<string, unknown> } } }[]
    )?.[0];
  }, 30_000);
  expect(answer.context.status).toBe('success');
  return answer.context.output?.sources ?? {};
}

/** `n` POSTs, 20 at a time. */
async function post(n: number, body: (i: number) => Record<string, unknown>): Promise<void> {
  for (let i = 0; i < n; i += 20) {
    const written = await Promise.all(
      Array.from({ length: Math.min(20, n - i) }, (_, j) => api(ws).call('POST', '', body(i + j))),
    );
    for (const w of written) expect(w.status).toBe(201);
  }
}

beforeAll(async () => {
  const put = await api(ws).call('PUT', '/tool-context-build', {
    schema_name: 'tool.def.v1',
    context: { name: 'context.build', implementation: 'context.build' },
  });
  expect(put.status).toBe(201);
  // The live ones first: everything after is newer.
  expect(
    (
      await api(ws).call('POST', '', {
        schema_name: 'note.v1',
        tags: ['first', 'busy'],
        context: { text: 'the live note' },
      })
    ).status,
  ).toBe(201);
  await new Promise((r) => setTimeout(r, 10));
  await post(200, (i) => ({
    schema_name: 'other.v1',
    tags: ['first', 'busy'],
    context: { text: `another schema's ${i}` },
  }));
  await post(200, (i) => ({
    schema_name: 'note.v1',
    tags: ['first', 'busy'],
    context: { text: `expired ${i}` },
    expires_at: 1_000_000,
  }));
  await eventually(async () => {
    const page = await api(ws).call(
      'GET',
      '?schema_name=definition.status.v1&tag=definition:tool-context-build&view=full',
    );
    const status = (page.body.items as { context: { state?: string } }[] | undefined)?.[0];
    return status?.context.state === 'active' ? true : undefined;
  }, 45_000);
}, 180_000);

describe('latest under 200 newer expired breadcrumbs', () => {
  it('finds the older live one by schema, and by schema × tag under a busy tag', async () => {
    // `busy` is a further tag (tag items the publisher writes after the write): read until they are all there.
    const sources = await eventually(async () => {
      const found = await build([
        { schema_name: 'note.v1', method: 'latest', key: 'bySchema' },
        { schema_name: 'note.v1', all_tags: ['busy'], method: 'latest', key: 'bySchemaAndTag' },
        { schema_name: 'note.v1', all_tags: ['busy'], method: 'recent', limit: 3, key: 'recent' },
      ]);
      return (found.bySchemaAndTag as { text?: string } | null)?.text === 'the live note' ? found : undefined;
    }, 60_000);
    expect(sources.bySchema).toEqual({ text: 'the live note' });
    expect(sources.bySchemaAndTag).toEqual({ text: 'the live note' });
    expect(sources.recent).toEqual([{ text: 'the live note' }]);
  });
});
