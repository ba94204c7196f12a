import { describe, expect, it } from 'vitest';
import { channelSubscriber } from '#shared/core/api/streaming-deps.ts';
import { StreamLeases, type StreamLimits } from '#shared/core/streaming/stream-leases.ts';
import { TooManyRequestsError } from '#shared/domain/errors.ts';
import type { WorkspaceSlots } from '#shared/ports/workspace-slots.ts';

/** Slots in memory (the table's item per partition, as `DynamoWorkspaceSlots` keeps it). */
function memorySlots() {
  const held = new Map<string, Map<string, number>>();
  const slots: WorkspaceSlots = {
    async take(partition, holder, until, cap, now) {
      const m = held.get(partition) ?? new Map<string, number>();
      held.set(partition, m);
      for (const [h, end] of m) if (end < now) m.delete(h);
      if (m.size >= cap) return false;
      m.set(holder, until);
      return true;
    },
    async give(partition, holder) {
      held.get(partition)?.delete(holder);
    },
  };
  const count = (partition: string) => held.get(partition)?.size ?? 0;
  const tokenPartitions = () => [...held.keys()].filter((k) => k.startsWith('#token#'));
  return { slots, count, tokenPartitions };
}

const LIMITS: StreamLimits = { perWorkspace: 3, perToken: 2, leaseMs: 60_000, retryAfterSeconds: 7 };

describe('StreamLeases', () => {
  it('refuses a token over its share with a 429 that says when to retry, holding nothing', async () => {
    const { slots, count } = memorySlots();
    const leases = new StreamLeases(slots, LIMITS);
    await leases.take('acme', 'Bearer t1');
    await leases.take('acme', 'Bearer t1');
    const refused = await leases.take('acme', 'Bearer t1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TooManyRequestsError);
    expect((refused as TooManyRequestsError).status).toBe(429);
    expect((refused as TooManyRequestsError).retryAfterSeconds).toBe(7);
    expect((refused as Error).message).toMatch(/token holds 2 streams/);
    // The workspace lease taken before the token's share refused was given back.
    expect(count('acme')).toBe(2);
  });

  it("refuses a workspace over its share whatever the token, and the neighbour's streams still open", async () => {
    const { slots } = memorySlots();
    const leases = new StreamLeases(slots, LIMITS);
    for (const t of ['a', 'b', 'c']) await leases.take('acme', `Bearer ${t}`);
    await expect(leases.take('acme', 'Bearer d')).rejects.toThrow(/workspace acme holds 3 streams/);
    await expect(leases.take('neighbour', 'Bearer n')).resolves.toBeTypeOf('function');
  });

  it('gives a lease back once when the stream ends, making room again', async () => {
    const { slots, count } = memorySlots();
    const leases = new StreamLeases(slots, LIMITS);
    const release = await leases.take('acme', 'Bearer t1');
    await leases.take('acme', 'Bearer t1');
    await release();
    await release();
    expect(count('acme')).toBe(1);
    await expect(leases.take('acme', 'Bearer t1')).resolves.toBeTypeOf('function');
  });

  it('lets leases whose holder died run out after leaseMs', async () => {
    const { slots } = memorySlots();
    let now = 1_000;
    const leases = new StreamLeases(slots, LIMITS, undefined, () => now);
    for (const t of ['a', 'b', 'c']) await leases.take('acme', `Bearer ${t}`);
    await expect(leases.take('acme', 'Bearer d')).rejects.toBeInstanceOf(TooManyRequestsError);
    now += LIMITS.leaseMs + 1;
    await expect(leases.take('acme', 'Bearer d')).resolves.toBeTypeOf('function');
  });

  it('keeps a token apart by a digest, never the token itself', async () => {
    const { slots, tokenPartitions } = memorySlots();
    await new StreamLeases(slots, LIMITS).take('acme', 'Bearer secret-token-value');
    const [partition] = tokenPartitions();
    expect(partition).toMatch(/^#token#[0-9a-f]{32}$/);
    expect(partition).not.toContain('secret');
  });

  it('a lease that cannot be given back is logged and never throws', async () => {
    const warnings: string[] = [];
    const { slots } = memorySlots();
    const failing: WorkspaceSlots = {
      take: slots.take,
      give: async () => {
        throw new Error('table unreachable');
      },
    };
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) };
    const release = await new StreamLeases(failing, LIMITS, log).take('acme', 'Bearer t');
    await expect(release()).resolves.toBeUndefined();
    expect(warnings[0]).toMatch(/runs out by itself/);
  });
});

describe('channelSubscriber under leases', () => {
  it('answers a spent share with 429 before opening any connection', async () => {
    const { slots } = memorySlots();
    const leases = new StreamLeases(slots, { ...LIMITS, perToken: 0 });
    // An unreachable realtime URL: were a connection tried, the error would be a 503, not this 429.
    const subscribe = channelSubscriber(
      { realtime_url: 'ws://127.0.0.1:9/event/realtime', http_host: '127.0.0.1:9' },
      leases,
    );
    const refused = await subscribe('acme', 'r1', 'Bearer t', () => undefined).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TooManyRequestsError);
  });

  it('gives the lease back when the channel cannot be reached, and answers 503 (retriable), never a 500', async () => {
    const { slots, count } = memorySlots();
    const leases = new StreamLeases(slots, LIMITS);
    const subscribe = channelSubscriber(
      { realtime_url: 'ws://127.0.0.1:9/event/realtime', http_host: '127.0.0.1:9' },
      leases,
    );
    const failed = await subscribe('acme', 'r1', 'Bearer t', () => undefined).catch((e: unknown) => e);
    expect((failed as { status?: number }).status).toBe(503);
    expect(count('acme')).toBe(0);
  });
});
