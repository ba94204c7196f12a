/**
 * `wait` steps, `{ wait: { seconds } }`: a timer; the step succeeds when it fires. An orchestrating agent's plan
 * has none (agent functions have no Scheduler).
 */
import * as z from '../zod.ts';
import { MAX_TIMER_SECONDS, type StepKindSchema } from './step-schema.ts';

export interface WaitStepFields {
  wait?: { seconds: number };
}

export const waitStepSchema: StepKindSchema<'wait', WaitStepFields> = {
  kind: 'wait',
  fields: () => ({
    wait: z.optional(
      z.object(
        {
          seconds: z
            .number({ error: 'expected a number of seconds' })
            .check(z.minimum(0, 'at least 0'), z.maximum(MAX_TIMER_SECONDS, `at most ${MAX_TIMER_SECONDS}`)),
        },
        { error: 'expected { seconds }' },
      ),
    ),
  }),
  orchestrationIssues: (step) =>
    step.wait === undefined
      ? []
      : [{ path: ['wait'], message: 'an orchestration has no wait steps (they need a timer)' }],
};
