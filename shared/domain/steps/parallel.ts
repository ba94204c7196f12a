/**
 * `parallel` steps, `{ parallel: [step, …] }`: every branch runs; the step is joined when all have ended, with
 * output `{ <branch id>: output }`. Branches are steps of the run under their own ids.
 */
import * as z from '../zod.ts';
import type { StepDefinition } from './kinds.ts';
import type { StepKindSchema } from './step-schema.ts';

export interface ParallelStepFields {
  parallel?: StepDefinition[];
}

export const parallelStepSchema: StepKindSchema<'parallel', ParallelStepFields> = {
  kind: 'parallel',
  fields: (step) => ({
    get parallel() {
      return z.optional(
        z.array(step(), { error: 'expected an array of steps' }).check(z.minLength(1, 'at least one branch')),
      );
    },
  }),
  nested: (step) => (step.parallel ?? []).map((branch, i) => [branch, ['parallel', i]] as const),
};
