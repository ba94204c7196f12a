/**
 * Exactly once under at-least-once delivery, as a property: whatever order the answers come in, each delivered
 * three times, and whatever crashes happen between reading and writing the run or between writing the run and its
 * effects, the run ends the same as with one in-order delivery of each answer; the parallel and the map join once,
 * and each request and the result are asked for under one id.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { advance } from '#shared/core/orchestration/advance.ts';
import type { Effect } from '#shared/core/orchestration/effects.ts';
import type { RunEvent } from '#shared/core/orchestration/events.ts';
import type { Run } from '#shared/core/orchestration/run.ts';
import { startEvent, workflow } from '../../../support/run-harness.ts';

const definition = workflow({
  steps: [
    { id: 'first', tool: 'echo', input: { v: '=input.v' } },
    {
      id: 'fan',
      parallel: [
        { id: 'left', tool: 'echo', input: { side: 'L', v: '=steps.first.echoed.v' } },
        { id: 'right', tool: 'flaky', input: { side: 'R' }, retry: { max_attempts: 2 } },
        { id: 'nap', wait: { seconds: 60 } },
      ],
    },
    {
      id: 'each',
      map: {
        items: '=input.items',
        max_concurrency: 3,
        step: { id: 'one', tool: 'flaky', input: { x: '=item', i: '=index' }, retry: { max_attempts: 2 } },
      },
    },
    { id: 'approve', human: { prompt: 'ok?' } },
    { id: 'last', tool: 'echo', input: { fan: '=steps.fan', each: '=steps.each', ok: '=steps.approve' } },
  ],
});

const NOW = new Date('2026-01-01T00:00:00.000Z');

/** The world's answer to an effect: deterministic, so every delivery order sees the same answers. */
function answersTo(effect: Effect): RunEvent[] {
  if (effect.type === 'timer') return [{ type: 'timer', id: effect.id }];
  if (effect.type !== 'request') return [];
  if (effect.kind === 'human') {
    return [
      {
        type: 'human',
        id: `resp-${effect.id}`,
        request_id: effect.id,
        decision: 'approve',
        input: { yes: true },
        by: 'user:ann',
      },
    ];
  }
  const input = effect.input as { x?: number; side?: string };
  // "flaky" fails its first attempt for odd items and for the right branch, then succeeds.
  const fails =
    effect.target === 'flaky' && effect.attempt === 1 && ((input.x ?? 0) % 2 === 1 || input.side === 'R');
  return [
    {
      type: 'answer',
      id: `ans-${effect.id}`,
      request_id: effect.id,
      ok: !fails,
      ...(fails ? { error: 'flaked' } : { output: { echoed: effect.input } }),
      by: `tool:${effect.target}`,
    },
  ];
}

interface Outcome {
  run: Run;
  joins: Record<string, number>;
  requestIdsByStepAttempt: Map<string, Set<string>>;
  resultIds: Set<string>;
}

/** A small seeded PRNG (mulberry32): fast-check gives the seed, so a failure replays. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function simulate(
  items: number[],
  options: { seed?: number; copies: number; crashRate: number },
): Promise<Outcome> {
  const random = options.seed === undefined ? undefined : prng(options.seed);
  const pool: RunEvent[] = [];
  const answered = new Set<string>();
  const joins: Record<string, number> = { fan: 0, each: 0 };
  const requestIdsByStepAttempt = new Map<string, Set<string>>();
  const resultIds = new Set<string>();
  let run: Run | undefined;

  const take = (effects: Effect[]) => {
    for (const effect of effects) {
      if (effect.type === 'request') {
        const key = `${effect.step}#${effect.attempt}`;
        requestIdsByStepAttempt.set(key, (requestIdsByStepAttempt.get(key) ?? new Set()).add(effect.id));
      }
      if (effect.type === 'result') resultIds.add(effect.id);
      if (answered.has(effect.id)) continue;
      const answers = answersTo(effect);
      if (answers.length === 0) continue;
      answered.add(effect.id);
      for (const answer of answers) for (let i = 0; i < options.copies; i++) pool.push(answer);
    }
  };

  const step = async (event: RunEvent) => {
    const before = run;
    const result = await advance({ definition, run, event, now: NOW });
    const crash = random !== undefined && random() < options.crashRate;
    if (crash && random !== undefined && random() < 0.5) {
      // Crashed between reading and writing the run: nothing happened; the message comes again.
      pool.push(event);
      return;
    }
    run = result.run;
    for (const id of Object.keys(joins)) {
      if (before?.steps[id]?.status !== 'succeeded' && run?.steps[id]?.status === 'succeeded')
        joins[id] = (joins[id] ?? 0) + 1;
    }
    if (crash) {
      // Crashed after writing the run, before its effects: the message comes again.
      pool.push(event);
      return;
    }
    take(result.effects);
  };

  await step(startEvent({ v: 7, items }));
  while (pool.length > 0) {
    const index = random === undefined ? 0 : Math.floor(random() * pool.length);
    const [event] = pool.splice(index, 1);
    if (event !== undefined) await step(event);
  }
  if (run === undefined) throw new Error('no run');
  return { run, joins, requestIdsByStepAttempt, resultIds };
}

describe('exactly once', () => {
  it('ends the same whatever the order, duplicates and crashes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 0, maxLength: 7 }),
        fc.integer(),
        fc.constantFrom(0, 0.1, 0.3),
        async (items, seed, crashRate) => {
          const reference = await simulate(items, { copies: 1, crashRate: 0 });
          expect(reference.run.status).toBe('succeeded');
          const shuffled = await simulate(items, { seed, copies: 3, crashRate });
          expect(shuffled.run).toEqual(reference.run);
          expect(shuffled.joins).toEqual({ fan: 1, each: 1 });
          for (const ids of shuffled.requestIdsByStepAttempt.values()) expect(ids.size).toBe(1);
          expect(shuffled.resultIds.size).toBe(1);
        },
      ),
      { numRuns: 150 },
    );
  }, 60_000); // Every order of a run's events, duplicated and crashed: seconds alone, more on a loaded machine.

  it('records the flaky attempts as retries in the run it ends with', async () => {
    const { run } = await simulate([1, 2], { copies: 1, crashRate: 0 });
    expect(run.steps.right).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(run.steps['each[0]']).toMatchObject({ attempts: 2 });
    expect(run.steps['each[1]']).toMatchObject({ attempts: 1 });
    expect(run.output).toMatchObject({
      echoed: {
        ok: { yes: true },
        fan: { left: { echoed: { side: 'L', v: 7 } }, right: { echoed: { side: 'R' } } },
        each: [{ echoed: { x: 1, i: 0 } }, { echoed: { x: 2, i: 1 } }],
      },
    });
  });
});
