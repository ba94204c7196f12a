import { describe, expect, it } from 'vitest';
import type { Claims } from '#shared/core/executor/claims.ts';
import type { ExecutorStore } from '#shared/core/executor/context-assembly.ts';
import {
  isRetriable,
  outputCausation,
  outputId,
  processExecutorBatch,
} from '#shared/core/executor/pipeline.ts';
import { NonRetriableError, RetriableError, ValidationError } from '#shared/domain/errors.ts';

describe('outputId', () => {
  it('is deterministic per (definition, trigger, version, index) and a valid breadcrumb id', () => {
    const a = outputId('tool', 'def', 'trig', 1, 0);
    expect(a).toMatch(/^tool-[0-9a-f]{26}$/);
    expect(outputId('tool', 'def', 'trig', 1, 0)).toBe(a);
    expect(
      new Set([
        a,
        outputId('tool', 'def', 'trig', 2, 0),
        outputId('tool', 'def', 'trig', 1, 1),
        outputId('tool', 'def2', 'trig', 1, 0),
      ]).size,
    ).toBe(4);
  });
});

describe('outputCausation', () => {
  it('points at the trigger version, keeps the thread and counts one hop more', () => {
    expect(outputCausation({ id: 'u1', version: 3 })).toEqual({ caused_by: 'u1@3', thread: 'u1', hop: 1 });
    expect(
      outputCausation({ id: 'r1', version: 1, causation: { caused_by: 'u1@3', thread: 'u1', hop: 1 } }),
    ).toEqual({
      caused_by: 'r1@1',
      thread: 'u1',
      hop: 2,
    });
  });
});

describe('isRetriable', () => {
  it('retries throttling, timeouts and server faults, not bad input', () => {
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    const fault = Object.assign(new Error('oops'), { name: 'Whatever', $metadata: { httpStatusCode: 503 } });
    expect(
      [
        new RetriableError('x'),
        throttled,
        fault,
        Object.assign(new Error('t'), { name: 'TimeoutError' }),
      ].map((e) => isRetriable(e)),
    ).toEqual([true, true, true, true]);
    expect(
      [new NonRetriableError('x'), new ValidationError([]), new TypeError('bug')].map((e) => isRetriable(e)),
    ).toEqual([false, false, false]);
    const aborted = new AbortController();
    aborted.abort();
    expect(isRetriable(new TypeError('aborted mid-call'), aborted.signal)).toBe(true);
  });
});

describe('processExecutorBatch', () => {
  it('reports only the failed messages as batch item failures', async () => {
    const unused = new Proxy({}, { get: () => () => Promise.reject(new Error('not expected')) });
    const outcome = await processExecutorBatch(
      [
        { messageId: 'm1', body: 'not json' } as never,
        { messageId: 'm2', body: JSON.stringify({ definition: {}, event: {} }) } as never,
      ],
      { store: unused as ExecutorStore, claims: unused as Claims, leaseMs: 1000 },
    );
    expect(outcome.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }]);
    expect(outcome.outcomes[0]).toEqual({
      status: 'failed',
      error: 'not an executor message: the body is not JSON',
    });
  });
});
