/**
 * The Powertools adapter of the Tracing port, against a stand-in for the tracer's X-Ray provider: what ends up on
 * the subsegment is what X-Ray would index and show.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { describe, expect, it } from 'vitest';
import { powertoolsTracing } from '#shared/adapters/tracing/powertools-tracing.ts';
import type { CorrelationKeys } from '#shared/ports/tracing.ts';

interface FakeSubsegment {
  name: string;
  annotations: Record<string, string | number>;
  errors: unknown[];
  closed: boolean;
}

function fakeTracer(enabled: boolean): { tracer: Tracer; subsegments: FakeSubsegment[] } {
  const subsegments: FakeSubsegment[] = [];
  const provider = {
    captureAsyncFunc: (name: string, fn: (subsegment: unknown) => unknown) => {
      const sub: FakeSubsegment = { name, annotations: {}, errors: [], closed: false };
      subsegments.push(sub);
      return fn({
        addAnnotation: (key: string, value: string | number) => {
          sub.annotations[key] = value;
        },
        addError: (error: unknown) => sub.errors.push(error),
        close: () => {
          sub.closed = true;
        },
      });
    },
  };
  return { tracer: { isTracingEnabled: () => enabled, provider } as unknown as Tracer, subsegments };
}

const KEYS: CorrelationKeys = {
  workspace: 'ws',
  breadcrumbId: '01TRIGGER',
  triggerVersion: 3,
  thread: '01ROOT',
  definitionId: 'tool-echo',
};

describe('powertoolsTracing', () => {
  it('runs the work in a closed subsegment annotated with every correlation key', async () => {
    const { tracer, subsegments } = fakeTracer(true);
    expect(await powertoolsTracing(tracer).span('tool trigger', KEYS, async () => 42)).toBe(42);
    expect(subsegments).toEqual([{ name: '## tool trigger', annotations: KEYS, errors: [], closed: true }]);
  });

  it('records a failure on the subsegment, closes it and rethrows', async () => {
    const { tracer, subsegments } = fakeTracer(true);
    const failure = new Error('tool timed out');
    await expect(
      powertoolsTracing(tracer).span('tool trigger', KEYS, () => Promise.reject(failure)),
    ).rejects.toBe(failure);
    expect(subsegments[0]).toMatchObject({ errors: [failure], closed: true });
  });

  it('just runs the work when tracing is off (outside Lambda, or disabled)', async () => {
    const { tracer, subsegments } = fakeTracer(false);
    expect(await powertoolsTracing(tracer).span('tool trigger', KEYS, async () => 'ran')).toBe('ran');
    expect(subsegments).toEqual([]);
  });
});
