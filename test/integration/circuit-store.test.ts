import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoCircuitStore } from '#shared/adapters/dynamodb/circuit-store.ts';
import { CircuitBreaker, CircuitOpenError } from '#shared/core/agents/circuit-breaker.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { topology } from '#shared/topology.ts';
import { localDynamoClient, uniqueWorkspace } from '../support/local.ts';

const store = () =>
  new DynamoCircuitStore(
    topology.table.name,
    DynamoDBDocumentClient.from(localDynamoClient(), { marshallOptions: { removeUndefinedValues: true } }),
  );

describe('DynamoCircuitStore on DynamoDB Local', () => {
  it('writes only on the version it read, so concurrent writers agree', async () => {
    const ws = uniqueWorkspace();
    const s = store();
    expect(await s.get(ws, 'p')).toBeUndefined();
    expect(await s.put(ws, 'p', { state: 'closed', failures: 1 }, 0)).toBe(true);
    expect(await s.put(ws, 'p', { state: 'closed', failures: 1 }, 0)).toBe(false);
    expect(await s.put(ws, 'p', { state: 'open', failures: 2, openedAt: 5 }, 1)).toBe(true);
    expect(await s.put(ws, 'p', { state: 'closed', failures: 0 }, 1)).toBe(false);
    expect(await s.get(ws, 'p')).toEqual({
      circuit: { state: 'open', failures: 2, openedAt: 5 },
      version: 2,
    });
  });

  it('keeps one circuit across breaker instances (separate Lambdas)', async () => {
    const ws = uniqueWorkspace();
    const settings = { failureThreshold: 2, cooldownMs: 60_000 };
    const failing = { call: async () => Promise.reject(new RetriableError('ECONNREFUSED')) };
    await expect(new CircuitBreaker(store()).run(ws, 'a2a:partner', settings, failing)).rejects.toThrow(
      RetriableError,
    );
    await expect(new CircuitBreaker(store()).run(ws, 'a2a:partner', settings, failing)).rejects.toThrow(
      CircuitOpenError,
    );
    let called = false;
    await expect(
      new CircuitBreaker(store()).run(ws, 'a2a:partner', settings, {
        call: async () => {
          called = true;
        },
      }),
    ).rejects.toThrow(CircuitOpenError);
    expect(called).toBe(false);
  });
});
