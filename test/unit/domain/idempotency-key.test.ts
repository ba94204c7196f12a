/**
 * The `Idempotency-Key` crumbs adds to outgoing requests: a Structured Field string, only on methods that may
 * change something, never over a key the request or the definition already set; and the key itself, the same for
 * every attempt of one call and another for any other call.
 */
import { describe, expect, it } from 'vitest';
import { effectKey } from '#shared/core/executor/outputs.ts';
import { withIdempotencyKey } from '#shared/domain/idempotency-key.ts';

describe('Idempotency-Key', () => {
  it('is derived from executor, trigger, version and call index, the same on every attempt', () => {
    const key = effectKey('tool-charge', 'req-1', 1, 0);
    expect(key).toMatch(/^crumbs-[0-9a-f]{32}$/);
    expect(effectKey('tool-charge', 'req-1', 1, 0)).toBe(key);
    const others = [
      effectKey('tool-refund', 'req-1', 1, 0),
      effectKey('tool-charge', 'req-2', 1, 0),
      effectKey('tool-charge', 'req-1', 2, 0),
      effectKey('tool-charge', 'req-1', 1, 1),
    ];
    expect(new Set([key, ...others]).size).toBe(5);
  });

  it('is sent as a Structured Field string on unsafe methods, and never over a key already given', () => {
    expect(withIdempotencyKey({ accept: 'application/json' }, 'post', 'crumbs-1')).toEqual({
      accept: 'application/json',
      'Idempotency-Key': '"crumbs-1"',
    });
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      expect(withIdempotencyKey({}, method, 'k')['Idempotency-Key']).toBe('"k"');
    }
    for (const method of ['GET', 'HEAD', 'OPTIONS']) expect(withIdempotencyKey({}, method, 'k')).toEqual({});
    expect(withIdempotencyKey({ 'idempotency-key': 'mine' }, 'POST', 'k')).toEqual({
      'idempotency-key': 'mine',
    });
    expect(withIdempotencyKey({}, 'POST', undefined)).toEqual({});
  });
});
