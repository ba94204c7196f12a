/**
 * The typed client's own behaviour (`crumbs/client`): which refused requests it sends again (429 any; 5xx only an
 * idempotent one or one with an Idempotency-Key), that it waits what Retry-After names, cursor iteration item by
 * item, and the SSE streaming helper reading events as they arrive.
 */
import { describe, expect, it } from 'vitest';
import { ApiProblemError, CrumbsClient } from '#shared/client/crumbs-client.ts';

interface Call {
  url: string;
  init: RequestInit;
  at: number;
}

function fakeFetch(answer: (call: Call, n: number) => Response) {
  const calls: Call[] = [];
  const fetch = async (url: string, init: RequestInit) => {
    const call = { url, init, at: Date.now() };
    calls.push(call);
    return answer(call, calls.length);
  };
  return { calls, fetch };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const problem = (status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: 'x', title: 'Unavailable', status, detail: 'later' }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
const client = (fetch: ReturnType<typeof fakeFetch>['fetch']) =>
  new CrumbsClient({ endpoint: 'http://api.test', token: 't', workspace: 'w', fetch });

describe('crumbs/client', () => {
  it('sends an idempotent request (GET, PUT, DELETE) again after a 503, waiting the Retry-After it names', async () => {
    const f = fakeFetch((_c, n) => (n === 1 ? problem(503, { 'retry-after': '1' }) : json(200, { id: 'a' })));
    await client(f.fetch).getFull('a');
    expect(f.calls).toHaveLength(2);
    expect((f.calls[1]?.at ?? 0) - (f.calls[0]?.at ?? 0)).toBeGreaterThanOrEqual(990);

    const put = fakeFetch((_c, n) => (n === 1 ? problem(502) : json(200, { id: 'a', version: 2 })));
    await client(put.fetch).put('a', { schema_name: 'a.b.v1', context: {} });
    expect(put.calls.map((c) => c.init.method)).toEqual(['PUT', 'PUT']);
  }, 20_000);

  it('does not send a POST without an Idempotency-Key again after a 5xx (it may have been written)', async () => {
    const f = fakeFetch(() => problem(500));
    const error = await client(f.fetch)
      .create({ schema_name: 'a.b.v1', context: {} })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiProblemError);
    expect((error as ApiProblemError).status).toBe(500);
    expect(f.calls).toHaveLength(1);
  });

  it('sends a POST with an Idempotency-Key again after a 5xx, with the same key, a bounded number of times', async () => {
    const f = fakeFetch(() => problem(503, { 'retry-after': '1' }));
    const error = await client(f.fetch)
      .create({ schema_name: 'a.b.v1', context: {} }, { idempotencyKey: 'k-1' })
      .catch((e: unknown) => e);
    expect((error as ApiProblemError).status).toBe(503);
    expect(f.calls).toHaveLength(4);
    expect(f.calls.map((c) => (c.init.headers as Record<string, string>)['idempotency-key'])).toEqual([
      'k-1',
      'k-1',
      'k-1',
      'k-1',
    ]);
  }, 20_000);

  it('does not wait a Retry-After longer than its bound: the problem is answered at once', async () => {
    const f = fakeFetch(() => problem(429, { 'retry-after': '3600' }));
    const error = await client(f.fetch)
      .getFull('a')
      .catch((e: unknown) => e);
    expect((error as ApiProblemError).status).toBe(429);
    expect(f.calls).toHaveLength(1);
  });

  it('iterates a listing item by item across pages, following next_cursor', async () => {
    const f = fakeFetch((call) => {
      const cursor = new URL(call.url).searchParams.get('cursor');
      if (cursor === null) return json(200, { items: [{ id: '1' }, { id: '2' }], next_cursor: 'c2' });
      if (cursor === 'c2')
        return json(200, { items: [], next_cursor: 'c3', read_bound: { entries_read: 500, bound: 500 } });
      return json(200, { items: [{ id: '3' }], next_cursor: null });
    });
    const ids: string[] = [];
    for await (const item of client(f.fetch).items({ schema_name: 'note.v1' })) ids.push(item.id);
    expect(ids).toEqual(['1', '2', '3']);
    expect(f.calls.map((c) => new URL(c.url).searchParams.get('cursor'))).toEqual([null, 'c2', 'c3']);
  });

  it('iterates runs across pages', async () => {
    const f = fakeFetch((call) =>
      new URL(call.url).searchParams.get('cursor') === null
        ? json(200, { items: [{ run_id: 'run-1', status: 'running' }], next_cursor: 'n' })
        : json(200, { items: [{ run_id: 'run-2', status: 'succeeded' }], next_cursor: null }),
    );
    const runs: string[] = [];
    for await (const run of client(f.fetch).runs({ status: 'running' })) runs.push(run.run_id);
    expect(runs).toEqual(['run-1', 'run-2']);
    expect(f.calls[0]?.url).toBe('http://api.test/v1/workspaces/w/runs?status=running');
  });

  it('reads a stream of server-sent events event by event, split across chunks as they arrive', async () => {
    const chunks = [
      'event: delta\ndata: {"text":"he',
      'l"}\n\nevent: delta\ndata: {"text":"lo"}\n\n',
      'event: final\ndata: {}\n\n',
    ];
    const f = fakeFetch(
      () =>
        new Response(
          new ReadableStream({
            start(controller) {
              for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
              controller.close();
            },
          }),
          { status: 200, headers: { 'content-type': 'text/event-stream' } },
        ),
    );
    const events: unknown[] = [];
    for await (const e of client(f.fetch).streamEvents('stream-abc-123')) events.push([e.event, e.data]);
    expect(events).toEqual([
      ['delta', { text: 'hel' }],
      ['delta', { text: 'lo' }],
      ['final', {}],
    ]);
    expect(f.calls[0]?.url).toBe('http://api.test/v1/workspaces/w/streams/stream-abc-123/events');
    expect((f.calls[0]?.init.headers as Record<string, string> | undefined)?.accept).toBe(
      'text/event-stream',
    );
  });
});
