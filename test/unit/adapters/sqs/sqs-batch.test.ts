import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { processSqsBatch, redeliveryDelaySeconds } from '#shared/adapters/sqs/sqs-batch.ts';
import { RetriableError, WorkspaceDeletedError } from '#shared/domain/errors.ts';
import { silentLog } from '#shared/ports/log.ts';
import type { MessageVisibility } from '#shared/ports/message-visibility.ts';

const queue = { maxDelaySeconds: 720, maxReceiveCount: 5 };

const record = (messageId: string, receiveCount = 1): SQSRecord =>
  ({
    messageId,
    body: messageId,
    receiptHandle: `rh-${messageId}`,
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:q',
    attributes: { ApproximateReceiveCount: String(receiveCount) },
  }) as unknown as SQSRecord;

describe('redeliveryDelaySeconds', () => {
  it('waits what the failing service asked (Retry-After)', () => {
    expect(redeliveryDelaySeconds(new RetriableError('429', { retryAfterSeconds: 3 }), 2, queue)).toBe(3);
  });

  it('backs off exponentially with jitter by receive count, within [d/2, d] for d = 2^n', () => {
    for (const [n, low, high] of [
      [1, 1, 2],
      [2, 2, 4],
      [3, 4, 8],
      [4, 8, 16],
    ] as const) {
      expect(redeliveryDelaySeconds(new Error('x'), n, queue, () => 0)).toBe(low);
      expect(redeliveryDelaySeconds(new Error('x'), n, queue, () => 0.999)).toBe(high);
    }
  });

  it('never waits longer than the visibility timeout, and not at all after the last receive before the DLQ', () => {
    const long = new RetriableError('busy', { retryAfterSeconds: 10_000 });
    expect(redeliveryDelaySeconds(long, 1, queue)).toBe(720);
    expect(
      redeliveryDelaySeconds(new Error('x'), 4, { maxDelaySeconds: 5, maxReceiveCount: 10 }, () => 1),
    ).toBe(5);
    expect(redeliveryDelaySeconds(long, 5, queue)).toBe(0);
  });
});

describe('processSqsBatch', () => {
  it('reports failed records, delays only them, and survives a visibility change that fails', async () => {
    const asked: string[] = [];
    const visibility: MessageVisibility = {
      async delay(messages) {
        asked.push(...messages.map((m) => m.message.receiptHandle));
        throw new Error('SQS is down');
      },
    };
    const result = await processSqsBatch(
      [record('ok'), record('bad'), record('also-bad')],
      async (r) => {
        if (r.body !== 'ok') throw new Error(`${r.body} failed`);
        return r.body.length;
      },
      { log: silentLog, redelivery: { visibility, ...queue } },
    );
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['also-bad', 'bad']);
    expect(asked.sort()).toEqual(['rh-also-bad', 'rh-bad']);
    expect(result.results[0]).toEqual({ ok: true, value: 2 });
  });

  it('drops a message whose write its deleted workspace refused: not retried, not delayed, the others as usual', async () => {
    const asked: string[] = [];
    const visibility: MessageVisibility = {
      async delay(messages) {
        asked.push(...messages.map((m) => m.message.receiptHandle));
      },
    };
    const result = await processSqsBatch(
      [record('late-timer'), record('bad'), record('ok')],
      async (r) => {
        if (r.body === 'late-timer')
          throw new WorkspaceDeletedError('gone', '2026-01-01T00:00:00Z', undefined);
        if (r.body === 'bad') throw new Error('bad failed');
        return r.body.length;
      },
      { log: silentLog, redelivery: { visibility, ...queue } },
    );
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['bad']);
    expect(asked).toEqual(['rh-bad']);
  });

  it('reports every record of a batch that failed entirely instead of throwing', async () => {
    const result = await processSqsBatch(
      [record('a'), record('b')],
      async () => {
        throw new Error('nope');
      },
      { log: silentLog },
    );
    expect(result.batchItemFailures).toHaveLength(2);
  });

  it('runs the records of one key one after the other, in order, even past a failure; other keys concurrently', async () => {
    const events: string[] = [];
    const released: (() => void)[] = [];
    const keyed = (messageId: string, key: string) => ({ ...record(messageId), body: key });
    const batch = processSqsBatch(
      [keyed('a1', 'a'), keyed('b1', 'b'), keyed('a2', 'a'), keyed('a3', 'a')],
      async (r) => {
        events.push(`start ${r.messageId}`);
        await new Promise<void>((resolve) => released.push(resolve));
        events.push(`end ${r.messageId}`);
        if (r.messageId === 'a1') throw new Error('a1 failed');
      },
      { log: silentLog, inOrderOf: (r) => r.body },
    );
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    // a1 and b1 run together; a2 waits for a1, a3 for a2.
    expect(events).toEqual(['start a1', 'start b1']);
    while (released.length > 0) {
      released.shift()?.();
      await settle();
    }
    const result = await batch;
    expect(events).toEqual([
      'start a1',
      'start b1',
      'end a1',
      'start a2',
      'end b1',
      'end a2',
      'start a3',
      'end a3',
    ]);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'a1' }]);
  });
});
