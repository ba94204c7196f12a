/**
 * The per-workspace request rate on DynamoDB Local: several limiter instances (as several Lambda containers) share
 * one cell per workspace, so together they admit exactly the burst and then the rate; a refused request writes
 * nothing after an instance has seen the cell full, and a flood's concurrent requests send about one write per
 * admission; and through the local API (`crumbs dev`), the MCP and the A2A
 * servers, a workspace over its rate gets 429 with Retry-After and a problem naming the limit while another
 * workspace is served.
 */
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoRateCells } from '#shared/adapters/dynamodb/rate-cells.ts';
import { RequestRate } from '#shared/core/api/request-rate.ts';
import { TooManyRequestsError } from '#shared/domain/errors.ts';
import type { RateCells } from '#shared/ports/rate-cells.ts';
import { topology } from '#shared/topology.ts';
import { localDynamoClient, localStack, uniqueWorkspace } from '../support/local.ts';
import { RATE_LIMITED_WORKSPACE, RATE_LIMITS } from '../support/shared-stack.ts';

const doc = () =>
  DynamoDBDocumentClient.from(localDynamoClient(), { marshallOptions: { removeUndefinedValues: true } });

/** Counts the writes an instance sends to the table. */
function counted(cells: RateCells): RateCells & { takes: number } {
  const wrapper = {
    takes: 0,
    take: async (...args: Parameters<RateCells['take']>) => {
      wrapper.takes++;
      return cells.take(...args);
    },
  };
  return wrapper;
}

async function admitted(limiters: RequestRate[], ws: string, n: number): Promise<number> {
  const results = await Promise.allSettled(
    Array.from({ length: n }, (_, i) => (limiters[i % limiters.length] as RequestRate).admit(ws)),
  );
  for (const r of results) {
    if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(TooManyRequestsError);
  }
  return results.filter((r) => r.status === 'fulfilled').length;
}

describe('DynamoRateCells on DynamoDB Local, shared by instances', () => {
  it('admits exactly the burst across four instances at one instant, then the rate as time passes', async () => {
    const ws = uniqueWorkspace('rate');
    let now = 1_900_000_000_000;
    const cells = new DynamoRateCells(topology.table.name, doc());
    const limiters = Array.from(
      { length: 4 },
      () => new RequestRate({ cells, limits: { requestsPerSecond: 10, burst: 20 }, now: () => now }),
    );
    expect(await admitted(limiters, ws, 60)).toBe(20);
    // 1.5 s later, 15 more fit (10 per second); the instances' own view does not let them admit more.
    now += 1_500;
    expect(await admitted(limiters, ws, 60)).toBe(15);
    // Another workspace has an allowance of its own.
    expect(await admitted(limiters, uniqueWorkspace('rate'), 30)).toBe(20);
    const cell = await doc().send(
      new GetCommand({ TableName: topology.table.name, Key: { id: '#rate#requests', workspace: ws } }),
    );
    // 20 at the start and 15 more 1.5 s later: the TAT is 35 intervals (3.5 s) past the start.
    expect(cell.Item).toMatchObject({ kind: 'rate', tat: now - 1_500 + 3_500 });
  });

  it('says when to come back, and refuses without a write once an instance has seen the cell full', async () => {
    const ws = uniqueWorkspace('rate');
    const now = 1_900_000_000_000;
    const cells = counted(new DynamoRateCells(topology.table.name, doc()));
    const limiter = new RequestRate({ cells, limits: { requestsPerSecond: 2, burst: 4 }, now: () => now });
    for (let i = 0; i < 4; i++) await limiter.admit(ws);
    const refused = await limiter.admit(ws).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TooManyRequestsError);
    expect((refused as TooManyRequestsError).retryAfterSeconds).toBe(1);
    expect((refused as TooManyRequestsError).limit).toMatchObject({
      name: 'workspace_request_rate',
      requests_per_second: 2,
      burst: 4,
    });
    const writes = cells.takes;
    for (let i = 0; i < 50; i++) await expect(limiter.admit(ws)).rejects.toBeInstanceOf(TooManyRequestsError);
    expect(cells.takes).toBe(writes);
  });

  it("sends the table about one write per admitted request while a flood's requests arrive at one instance at once", async () => {
    const ws = uniqueWorkspace('rate');
    let now = 1_900_000_000_000;
    const client = doc();
    let updates = 0;
    client.middlewareStack.add(
      (next) => async (args) => {
        updates++;
        return next(args);
      },
      { step: 'initialize', name: 'countUpdates' },
    );
    const limiter = new RequestRate({
      cells: new DynamoRateCells(topology.table.name, client),
      limits: { requestsPerSecond: 10, burst: 10 },
      now: () => now,
    });
    // Three waves of 100 concurrent requests, 0.5 s apart: 10, then 5, then 5 fit.
    let admittedTotal = 0;
    for (let wave = 0; wave < 3; wave++) {
      admittedTotal += await admitted([limiter], ws, 100);
      now += 500;
    }
    expect(admittedTotal).toBe(20);
    // Without the takes in flight counted, each of the 300 requests would have sent at least one write. With them, a
    // take goes out only while the cell may have room: one write per admission, and a retry where two concurrent
    // takes reach a fresh or idle cell in the other order (one UpdateItem creates it, the other's condition fails).
    expect(updates).toBeGreaterThanOrEqual(admittedTotal);
    expect(updates).toBeLessThanOrEqual(2 * admittedTotal);
  });

  it('admits while the cell cannot be reached (fails open) and says so in the log', async () => {
    const warnings: string[] = [];
    const limiter = new RequestRate({
      cells: {
        take: async () => {
          throw new Error('ProvisionedThroughputExceededException');
        },
      },
      limits: { requestsPerSecond: 1, burst: 1 },
      log: {
        debug: () => {},
        info: () => {},
        warn: (message: string) => warnings.push(message),
        error: () => {},
      },
    });
    await limiter.admit('ws-a');
    await limiter.admit('ws-a');
    expect(warnings).toHaveLength(2);
  });
});

describe('the request rate through the local stack', () => {
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${localStack().api}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${localStack().token}`, ...(init.headers ?? {}) },
    });
  const flood = (n: number, path: string, init: RequestInit = {}) =>
    Promise.all(Array.from({ length: n }, () => call(path, init)));

  it('answers 429 with Retry-After and a problem naming the limit past the workspace rate, and serves another workspace', async () => {
    const answers = await flood(
      RATE_LIMITS.requestBurst * 6,
      `/v1/workspaces/${RATE_LIMITED_WORKSPACE}/breadcrumbs?schema_name=note.v1&limit=1`,
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    // The burst, and what the rate adds while the flood is served (a few seconds on a busy machine).
    expect(statuses.filter((s) => s === 200).length).toBeLessThan(statuses.length / 2);
    const refused = answers.find((r) => r.status === 429);
    expect(refused?.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(refused?.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused?.json()).toMatchObject({
      type: 'https://crumbs.dev/problems/rate-limited',
      status: 429,
      title: 'Too many requests',
      limit: {
        name: 'workspace_request_rate',
        scope: `workspace ${RATE_LIMITED_WORKSPACE}`,
        requests_per_second: RATE_LIMITS.requestRate,
        burst: RATE_LIMITS.requestBurst,
      },
    });
    for (const r of answers) if (r !== refused) await r.body?.cancel();
    const other = await call(`/v1/workspaces/${uniqueWorkspace('served')}/breadcrumbs?schema_name=note.v1`);
    expect(other.status).toBe(200);
  });

  it('counts MCP messages (a batch counts each) and A2A requests against the same allowance', async () => {
    const mcpInit = (body: unknown): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
    const batch = Array.from({ length: RATE_LIMITS.requestBurst + 1 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'tools/list',
    }));
    const tooBig = await call(`/v1/workspaces/${RATE_LIMITED_WORKSPACE}/mcp`, mcpInit(batch));
    expect(tooBig.status).toBe(413);
    await tooBig.body?.cancel();

    const mcp = await flood(
      RATE_LIMITS.requestBurst * 6,
      `/v1/workspaces/${RATE_LIMITED_WORKSPACE}/mcp`,
      mcpInit({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    expect(mcp.filter((r) => r.status === 429).length).toBeGreaterThan(mcp.length / 2);
    for (const r of mcp) await r.body?.cancel();

    const a2a = await flood(
      RATE_LIMITS.requestBurst * 6,
      `/a2a/workspaces/${RATE_LIMITED_WORKSPACE}/agents/nobody`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
      },
    );
    const refused = a2a.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(a2a.length / 2);
    expect(refused[0]?.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    // The admitted ones reach the server, which knows no agent "nobody".
    expect(a2a.filter((r) => r.status !== 429).every((r) => r.status === 404)).toBe(true);
    for (const r of a2a) await r.body?.cancel();
  });
});
