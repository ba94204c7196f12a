import { describe, expect, it } from 'vitest';
import {
  ApiConnectionError,
  ApiProblemError,
  ApiResponseError,
  CrumbsClient,
  type FetchLike,
} from '#cli/api-client.ts';

interface Call {
  url: string;
  init: RequestInit;
}

function fakeFetch(respond: (call: Call) => Response | Promise<Response>): {
  fetch: FetchLike;
  calls: Call[];
} {
  const calls: Call[] = [];
  return {
    calls,
    fetch: async (url, init) => {
      const call = { url, init };
      calls.push(call);
      return respond(call);
    },
  };
}

const json = (status: number, body: unknown, type = 'application/json') =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': type } });

function headersOf(call: Call | undefined): Record<string, string> {
  return (call?.init.headers ?? {}) as Record<string, string>;
}

describe('CrumbsClient', () => {
  it('sends a request refused by a rate limit (429) again after its Retry-After, and gives up after a few', async () => {
    const limited = () =>
      new Response(JSON.stringify({ type: 'x', title: 'Too many requests', status: 429 }), {
        status: 429,
        headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
      });
    let n = 0;
    const f = fakeFetch(() => (++n <= 2 ? limited() : json(201, { id: 'c1', version: 1 })));
    const client = new CrumbsClient({ endpoint: 'http://api.test', fetch: f.fetch });
    await client.create({ schema_name: 'a.b.v1', context: {} });
    expect(f.calls).toHaveLength(3);

    const always = fakeFetch(limited);
    const refused = await new CrumbsClient({ endpoint: 'http://api.test', fetch: always.fetch })
      .create({ schema_name: 'a.b.v1', context: {} })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiProblemError);
    expect((refused as ApiProblemError).status).toBe(429);
    expect(always.calls).toHaveLength(4);
  }, 20_000);

  it('builds workspace-scoped URLs, sends the token, and strips a trailing slash from the endpoint', async () => {
    const f = fakeFetch(() => json(200, { items: [], next_cursor: null }));
    const client = new CrumbsClient({
      endpoint: 'http://api.test/',
      token: 't',
      workspace: 'ws 1',
      fetch: f.fetch,
    });
    await client.list({ schema_name: 'a.b.v1', limit: 5 });
    expect(f.calls[0]?.url).toBe(
      'http://api.test/v1/workspaces/ws%201/breadcrumbs?schema_name=a.b.v1&limit=5',
    );
    expect(headersOf(f.calls[0]).authorization).toBe('Bearer t');
  });

  it('sends Idempotency-Key on create and If-Match on update', async () => {
    const f = fakeFetch(() => json(201, { id: 'c1', version: 1 }));
    const client = new CrumbsClient({ endpoint: 'http://api.test', fetch: f.fetch });
    await client.create({ schema_name: 'a.b.v1', context: {} }, { idempotencyKey: 'k' });
    await client.update('c1', { title: 't' }, { ifMatch: 7 });
    expect(headersOf(f.calls[0])['idempotency-key']).toBe('k');
    expect(f.calls[1]?.init.method).toBe('PATCH');
    expect(headersOf(f.calls[1])['if-match']).toBe('7');
    expect(JSON.parse(String(f.calls[1]?.init.body))).toEqual({ title: 't' });
  });

  it('does not send the token to /health', async () => {
    const f = fakeFetch(() => json(200, { status: 'ok' }));
    const client = new CrumbsClient({ endpoint: 'http://api.test', token: 't', fetch: f.fetch });
    expect(await client.health()).toEqual({ status: 'ok' });
    expect(f.calls[0]?.url).toBe('http://api.test/health');
    expect(headersOf(f.calls[0]).authorization).toBeUndefined();
  });

  it('throws ApiProblemError carrying the problem fields', async () => {
    const problem = {
      type: 'https://crumbs.dev/problems/validation-failed',
      title: 'Validation failed',
      status: 422,
      detail: 'bad',
      errors: [{ path: 'context', message: 'expected a JSON object' }],
    };
    const f = fakeFetch(() => json(422, problem, 'application/problem+json'));
    const client = new CrumbsClient({ endpoint: 'http://api.test', fetch: f.fetch });
    const error = await client.create({ schema_name: 'a.b.v1', context: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiProblemError);
    const problemError = error as ApiProblemError;
    expect(problemError).toMatchObject({
      status: 422,
      title: 'Validation failed',
      detail: 'bad',
      retriable: false,
    });
    expect(problemError.errors).toEqual(problem.errors);
    expect(problemError.message).toBe('Validation failed: bad');
  });

  it('marks 429 and 5xx problems as retriable', async () => {
    const f = fakeFetch(() => new Response('busy', { status: 503, statusText: 'Service Unavailable' }));
    const client = new CrumbsClient({ endpoint: 'http://api.test', fetch: f.fetch });
    const error = (await client.get('c1').catch((e: unknown) => e)) as ApiProblemError;
    expect(error).toMatchObject({
      status: 503,
      title: 'Service Unavailable',
      detail: 'busy',
      retriable: true,
    });
  });

  it('resolves delete on 204 without reading a body', async () => {
    const f = fakeFetch(() => new Response(null, { status: 204 }));
    const client = new CrumbsClient({ endpoint: 'http://api.test', fetch: f.fetch });
    await expect(client.delete('c1')).resolves.toBeUndefined();
    expect(f.calls[0]?.init.method).toBe('DELETE');
  });

  it('classifies a refused connection and a timeout as ApiConnectionError', async () => {
    const refused = fakeFetch(() => {
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
      });
    });
    const error = await new CrumbsClient({ endpoint: 'http://api.test', fetch: refused.fetch })
      .get('c1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiConnectionError);
    expect(error).toMatchObject({ code: 'ECONNREFUSED', endpoint: 'http://api.test', retriable: true });

    const hanging: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) =>
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    const timedOut = await new CrumbsClient({ endpoint: 'http://api.test', fetch: hanging, timeoutMs: 10 })
      .get('c1')
      .catch((e: unknown) => e);
    expect(timedOut).toMatchObject({ name: 'ApiConnectionError', code: 'TIMEOUT' });
  });

  it('rethrows the caller abort as it is, not as a connection error', async () => {
    const hanging: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) =>
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    const controller = new AbortController();
    const pending = new CrumbsClient({ endpoint: 'http://api.test', fetch: hanging })
      .get('c1', { signal: controller.signal })
      .catch((e: unknown) => e);
    controller.abort(new Error('cancelled'));
    expect(await pending).toEqual(new Error('cancelled'));
  });

  it('follows cursors in listAll and stops when a cursor repeats', async () => {
    const f = fakeFetch((call) => {
      const cursor = new URL(call.url).searchParams.get('cursor');
      return json(200, { items: [{ id: cursor ?? 'first' }], next_cursor: 'again' });
    });
    const client = new CrumbsClient({ endpoint: 'http://api.test', fetch: f.fetch });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const page of client.listAll({ tag: 'x' })) seen.push(...page.map((b) => b.id));
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['first', 'again']);
    expect(error).toBeInstanceOf(ApiResponseError);
  });

  it('rejects an endpoint that is not an http(s) URL', () => {
    expect(() => new CrumbsClient({ endpoint: 'localhost:4710' })).toThrow(/expected an http\(s\) URL/);
  });
});
