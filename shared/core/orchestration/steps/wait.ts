/**
 * Engine half of `wait` steps: a timer (`wake_at`); the step succeeds with `{ waited_until }` when it fires, at
 * once when `seconds` is 0.
 */
import { waitStepSchema } from '#shared/domain/steps/wait.ts';
import type { StepKind } from './step-kind.ts';

export const waitStep: StepKind<'wait'> = {
  kind: 'wait',
  schema: waitStepSchema,
  endedBy: 'timer',
  counts: { step: true },
  start: async ({ step, base, now, ended }) => {
    const seconds = step.wait?.seconds ?? 0;
    return seconds <= 0
      ? ended(base, 'succeeded', { output: { waited_until: now.toISOString() } })
      : { ...base, status: 'waiting', wake_at: new Date(now.getTime() + seconds * 1000).toISOString() };
  },
  timer: {
    at: (state) => state.wake_at,
    fired: (state) => ({ waited_until: state.wake_at ?? null }),
  },
};
