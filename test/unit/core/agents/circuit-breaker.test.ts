import { describe, expect, it } from 'vitest';
import { CircuitBreaker, CircuitOpenError } from '#shared/core/agents/circuit-breaker.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { InMemoryCircuitStore } from '../../../support/memory-circuit-store.ts';

function setup() {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const clock = { now: () => new Date(now) };
  const store = new InMemoryCircuitStore();
  const breaker = new CircuitBreaker(store, clock);
  const settings = { failureThreshold: 3, cooldownMs: 30_000 };
  let calls = 0;
  const down = () =>
    breaker.run('ws', 'partner.example', settings, {
      call: async () => {
        calls++;
        throw new RetriableError('connection refused');
      },
    });
  const up = () =>
    breaker.run('ws', 'partner.example', settings, {
      call: async () => {
        calls++;
        return 'ok';
      },
    });
  return { store, down, up, advance: (ms: number) => (now += ms), calls: () => calls };
}

describe('CircuitBreaker', () => {
  it('opens after N consecutive failures and then fails fast without calling the partner', async () => {
    const c = setup();
    await expect(c.down()).rejects.toThrow(RetriableError);
    await expect(c.down()).rejects.toThrow(RetriableError);
    // The third failure opens the circuit: the caller is answered now, not retried into it.
    await expect(c.down()).rejects.toThrow(CircuitOpenError);
    expect(c.calls()).toBe(3);
    const fast = await c.down().catch((e: unknown) => e);
    expect(fast).toBeInstanceOf(CircuitOpenError);
    expect(String(fast)).toMatch(
      /partner.example is unavailable: the circuit is open after 3 consecutive failures \(last: connection refused\); the next attempt goes through after 2026-01-01T00:00:30.000Z/,
    );
    expect(c.calls()).toBe(3);
  });

  it('resets the count on a success', async () => {
    const c = setup();
    await expect(c.down()).rejects.toThrow(RetriableError);
    await expect(c.down()).rejects.toThrow(RetriableError);
    await expect(c.up()).resolves.toBe('ok');
    await expect(c.down()).rejects.toThrow(RetriableError);
    expect([...c.store.items.values()][0]?.circuit).toMatchObject({ state: 'closed', failures: 1 });
  });

  it('lets one trial call through after the cool-down, and closes on its success', async () => {
    const c = setup();
    for (let i = 0; i < 3; i++) await c.down().catch(() => undefined);
    c.advance(30_001);
    await expect(c.up()).resolves.toBe('ok');
    expect([...c.store.items.values()][0]?.circuit).toEqual({ state: 'closed', failures: 0 });
    await expect(c.up()).resolves.toBe('ok');
  });

  it('re-opens when the trial fails, for another cool-down', async () => {
    const c = setup();
    for (let i = 0; i < 3; i++) await c.down().catch(() => undefined);
    c.advance(30_001);
    await expect(c.down()).rejects.toThrow(CircuitOpenError);
    expect(c.calls()).toBe(4);
    await expect(c.up()).rejects.toThrow(CircuitOpenError);
    expect(c.calls()).toBe(4);
  });

  it('gives the half-open trial to one caller only', async () => {
    const c = setup();
    for (let i = 0; i < 3; i++) await c.down().catch(() => undefined);
    c.advance(30_001);
    const results = await Promise.allSettled([c.up(), c.up(), c.up()]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('does not count errors that are not the partner being down', async () => {
    const c = setup();
    const breaker = new CircuitBreaker(c.store);
    for (let i = 0; i < 5; i++) {
      await breaker
        .run(
          'ws',
          'p',
          { failureThreshold: 2, cooldownMs: 1000 },
          {
            call: async () => {
              throw new Error('bad request');
            },
            isFailure: () => false,
          },
        )
        .catch(() => undefined);
    }
    expect(c.store.items.size).toBe(0);
  });

  it('runs the health probe before the trial call', async () => {
    const c = setup();
    for (let i = 0; i < 3; i++) await c.down().catch(() => undefined);
    c.advance(30_001);
    const breaker = new CircuitBreaker(c.store, { now: () => new Date(Date.parse('2026-01-01T00:01:00Z')) });
    const outcome = await breaker
      .run(
        'ws',
        'partner.example',
        { failureThreshold: 3, cooldownMs: 30_000 },
        {
          probe: async () => {
            throw new RetriableError('health check failed: 503');
          },
          call: async () => 'never',
        },
      )
      .catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(CircuitOpenError);
    expect(String(outcome)).toMatch(/health check failed/);
  });
});
