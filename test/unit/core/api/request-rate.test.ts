/**
 * The per-workspace request rate in the API core: GCRA's admissions (the burst at once, then the rate), the 429
 * problem a client reads (Retry-After, the limit and the setting that raises it), that only callers who may use a
 * workspace spend its allowance, and what a JSON-RPC body costs.
 */
import { describe, expect, it } from 'vitest';
import { createApi } from '#shared/core/api/api.ts';
import type { Caller, HttpRequest } from '#shared/core/api/http.ts';
import { jsonRpcCost, RequestRate } from '#shared/core/api/request-rate.ts';
import { PayloadTooLargeError, TooManyRequestsError, WorkspaceDeletedError } from '#shared/domain/errors.ts';
import type { Log } from '#shared/ports/log.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';
import { InMemoryRateCells } from '../../../support/memory/rate-cells.ts';

function request(path: string, caller: Caller | undefined): HttpRequest {
  return { method: 'GET', path, headers: {}, query: { schema_name: 'note.v1' }, body: undefined, caller };
}

describe('RequestRate (GCRA over shared cells)', () => {
  it('admits the burst at once, then one request per interval, and names the limit when it refuses', async () => {
    let now = 1_000_000;
    const rate = new RequestRate({
      cells: new InMemoryRateCells(),
      limits: { requestsPerSecond: 4, burst: 8 },
      now: () => now,
    });
    for (let i = 0; i < 8; i++) await rate.admit('ws');
    const refused = await rate.admit('ws').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TooManyRequestsError);
    expect((refused as TooManyRequestsError).retryAfterSeconds).toBe(1);
    expect((refused as TooManyRequestsError).message).toMatch(/workspace ws is over its request rate of 4/);
    now += 250;
    await rate.admit('ws');
    await expect(rate.admit('ws')).rejects.toBeInstanceOf(TooManyRequestsError);
    now += 2_000;
    for (let i = 0; i < 8; i++) await rate.admit('ws');
    await expect(rate.admit('ws')).rejects.toBeInstanceOf(TooManyRequestsError);
  });

  it('gives a workspace the operator set apart its own limit, and none when its rate is 0', async () => {
    const cells = new InMemoryRateCells();
    const rate = new RequestRate({
      cells,
      limits: {
        requestsPerSecond: 1,
        burst: 1,
        workspaces: { big: { burst: 5 }, free: { requestsPerSecond: 0 } },
      },
      now: () => 0,
    });
    for (let i = 0; i < 5; i++) await rate.admit('big');
    await expect(rate.admit('big')).rejects.toBeInstanceOf(TooManyRequestsError);
    const before = cells.takes;
    for (let i = 0; i < 20; i++) await rate.admit('free');
    expect(cells.takes).toBe(before);
  });

  it("admits a deleted workspace's requests without a warning: its cell's write is refused, as every write to it", async () => {
    const warnings: string[] = [];
    const log = { warn: (message: string) => warnings.push(message) } as unknown as Log;
    const rate = new RequestRate({
      cells: {
        take: async () => {
          throw new WorkspaceDeletedError('gone', '2026-01-01T00:00:00Z', undefined);
        },
      },
      limits: { requestsPerSecond: 4, burst: 8 },
      log,
    });
    await rate.admit('gone');
    expect(warnings).toEqual([]);
  });

  it("sends the cell no more takes than it can admit while a flood's requests are in flight at once", async () => {
    // Every take waits until the test lets the cells answer: the flood's 50 requests are all in flight together,
    // as when one instance serves many concurrent requests. The cell holds a burst of 8.
    const cells = new InMemoryRateCells();
    const gate: Array<() => void> = [];
    const slow = {
      take: async (...args: Parameters<InMemoryRateCells['take']>) => {
        await new Promise<void>((resolve) => gate.push(resolve));
        return cells.take(...args);
      },
    };
    const rate = new RequestRate({ cells: slow, limits: { requestsPerSecond: 4, burst: 8 }, now: () => 0 });
    const outcomes = Array.from({ length: 50 }, () =>
      rate.admit('ws').then(
        () => 'admitted',
        (e: unknown) => e,
      ),
    );
    await new Promise((resolve) => setImmediate(resolve));
    for (const release of gate.splice(0)) release();
    const settled = await Promise.all(outcomes);
    expect(settled.filter((o) => o === 'admitted')).toHaveLength(8);
    expect(settled.filter((o) => o instanceof TooManyRequestsError)).toHaveLength(42);
    expect(cells.takes).toBe(8);
  });

  it('refuses on takes in flight only what the cell could not hold: a take that fails lets the next one try', async () => {
    let fail = true;
    const cells = new InMemoryRateCells();
    const rate = new RequestRate({
      cells: {
        take: async (...args: Parameters<InMemoryRateCells['take']>) => {
          if (fail) throw new Error('throttled');
          return cells.take(...args);
        },
      },
      limits: { requestsPerSecond: 1, burst: 1 },
      now: () => 0,
    });
    await rate.admit('ws'); // fails open
    fail = false;
    await rate.admit('ws'); // nothing left in flight: the cell decides, and admits
    await expect(rate.admit('ws')).rejects.toBeInstanceOf(TooManyRequestsError);
  });

  it('refuses a request that costs more than the burst as too large, not as "later"', async () => {
    const rate = new RequestRate({
      cells: new InMemoryRateCells(),
      limits: { requestsPerSecond: 1, burst: 3 },
    });
    await expect(rate.admit('ws', 4)).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('counts a JSON-RPC batch per message', () => {
    expect(jsonRpcCost('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')).toBe(1);
    expect(jsonRpcCost(JSON.stringify([{ id: 1 }, { id: 2 }, { id: 3 }]))).toBe(3);
    expect(jsonRpcCost('[not json')).toBe(1);
    expect(jsonRpcCost(undefined)).toBe(1);
    expect(jsonRpcCost('[]')).toBe(1);
  });
});

describe('the API with a request rate', () => {
  const owner: Caller = { principal: 'user:ann', workspaces: ['team-a'] };
  const stranger: Caller = { principal: 'user:bob', workspaces: ['team-b'] };

  it('answers 429 problem+json with Retry-After and the limit, and keeps /health out of it', async () => {
    const api = createApi({
      store: new InMemoryBreadcrumbStore(),
      requestRate: new RequestRate({
        cells: new InMemoryRateCells(),
        limits: { requestsPerSecond: 1, burst: 2 },
        setting: 'CRUMBS_WORKSPACE_REQUEST_RATE',
        now: () => 5_000,
      }),
    });
    expect((await api(request('/v1/workspaces/team-a/breadcrumbs', owner))).statusCode).toBe(200);
    expect((await api(request('/v1/workspaces/team-a/breadcrumbs', owner))).statusCode).toBe(200);
    const refused = await api(request('/v1/workspaces/team-a/breadcrumbs', owner));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers).toMatchObject({ 'content-type': 'application/problem+json', 'retry-after': '1' });
    expect(JSON.parse(String(refused.body))).toEqual({
      type: 'https://crumbs.dev/problems/rate-limited',
      title: 'Too many requests',
      status: 429,
      detail: expect.stringContaining('workspace team-a is over its request rate'),
      retry_after_seconds: 1,
      limit: {
        name: 'workspace_request_rate',
        scope: 'workspace team-a',
        requests_per_second: 1,
        burst: 2,
        setting: 'CRUMBS_WORKSPACE_REQUEST_RATE',
      },
    });
    for (let i = 0; i < 10; i++) expect((await api(request('/health', undefined))).statusCode).toBe(200);
  });

  it("spends nothing of a workspace's allowance on callers it refuses (401, 403)", async () => {
    const cells = new InMemoryRateCells();
    const api = createApi({
      store: new InMemoryBreadcrumbStore(),
      requestRate: new RequestRate({ cells, limits: { requestsPerSecond: 1, burst: 2 }, now: () => 0 }),
    });
    for (let i = 0; i < 50; i++) {
      expect((await api(request('/v1/workspaces/team-a/breadcrumbs', stranger))).statusCode).toBe(403);
      expect((await api(request('/v1/workspaces/team-a/breadcrumbs', undefined))).statusCode).toBe(401);
    }
    expect(cells.takes).toBe(0);
    expect((await api(request('/v1/workspaces/team-a/breadcrumbs', owner))).statusCode).toBe(200);
  });
});
