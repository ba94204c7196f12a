/**
 * Engine half of `parallel` steps: every branch starts; the step joins (output `{ <branch id>: output }`) when
 * all have ended, in the one transition that sees the last end. A branch that fails (without `on_error:
 * "continue"`) fails the parallel at once and cancels the others. Branches are keyed by their ids (`<prefix><id>`).
 */
import { parallelStepSchema } from '#shared/domain/steps/parallel.ts';
import type { StepKind } from './step-kind.ts';

export const parallelStep: StepKind<'parallel'> = {
  kind: 'parallel',
  schema: parallelStepSchema,
  endedBy: 'children',
  counts: { step: false },
  start: async ({ base }) => base,
  drive: async (t, step, key, chain, frame) => {
    const branches = step.parallel ?? [];
    let allDone = true;
    for (const branch of branches) {
      const branchKey = `${frame.prefix}${branch.id}`;
      const outcome = await t.driveStep(branch, branchKey, branch.id, chain, frame);
      if (outcome === 'failed') {
        const error = t.run.steps[branchKey]?.error ?? 'failed';
        t.cancelDescendants(key);
        t.failAttempt(key, `branch "${branch.id}" failed: ${error}`);
        return;
      }
      if (outcome !== 'done') allDone = false;
    }
    if (!allDone) return;
    const output: Record<string, unknown> = {};
    for (const branch of branches)
      output[branch.id] = t.run.steps[`${frame.prefix}${branch.id}`]?.output ?? null;
    const state = t.run.steps[key];
    if (state !== undefined) t.run.steps[key] = t.ended(state, 'succeeded', { output });
  },
  nestedKeys: (step, _key, prefix, keys, nested) =>
    (step.parallel ?? []).flatMap((branch) => {
      const branchKey = `${prefix}${branch.id}`;
      return [...(keys.includes(branchKey) ? [branchKey] : []), ...nested(branch, branchKey, prefix)];
    }),
};
