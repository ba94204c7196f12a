/**
 * Engine half of `human` steps: the attempt resolves its prompt and waits (`waiting`) with a human.request.v1
 * out, until a person's human.response.v1: approve → succeeded with the approved input (checked against
 * `input_schema`, `checks.ts`; a bad one is answered with an error and the step keeps waiting), reject → failed.
 * Who may answer is `authority.ts`'s rule; applying the response is the engine's (`advance.ts`, human events).
 */
import { humanStepSchema } from '#shared/domain/steps/human.ts';
import type { StepKind } from './step-kind.ts';

export const humanStep: StepKind<'human'> = {
  kind: 'human',
  schema: humanStepSchema,
  endedBy: 'person',
  counts: { step: true },
  start: async ({ step, base, evaluator, scope }) => ({
    ...base,
    status: 'waiting',
    prompt: await evaluator.text(step.human?.prompt ?? '', scope()),
  }),
  request: {
    fields: (_definition, _run, step, state) => ({
      prompt: state.prompt ?? step.human?.prompt ?? '',
      ...(step.human?.input_schema !== undefined ? { input_schema: step.human.input_schema } : {}),
    }),
    breadcrumb: ({ run, effect, tags, title, schemas }) => ({
      id: effect.id,
      schema_name: schemas.humanRequest,
      title: `${title}: waiting for a person`,
      tags,
      context: {
        run_id: run.run_id,
        step: effect.step,
        prompt: effect.prompt ?? '',
        ...(effect.input_schema !== undefined ? { input_schema: effect.input_schema } : {}),
        workflow: run.workflow,
      },
    }),
  },
};
