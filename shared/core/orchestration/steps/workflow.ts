/**
 * Engine half of `workflow` steps: the attempt resolves its `input` and writes a workflow.request.v1 (one level
 * deeper, naming the run as its parent); the sub-run's workflow.result.v1 / workflow.error.v1 ends it. A workflow
 * the workspace does not define fails the step at once; an attempt given up (cancelled, timed out, reset by a
 * retry) cancels its sub-run.
 */

import { WORKFLOW_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { workflowStepSchema } from '#shared/domain/steps/workflow.ts';
import { WorkflowDefinitionSchema } from '#shared/domain/workflow-definition.ts';
import { cancelIdFor, runIdFor } from '../ids.ts';
import type { StepKind } from './step-kind.ts';

export const workflowStep: StepKind<'workflow'> = {
  kind: 'workflow',
  schema: workflowStepSchema,
  endedBy: 'reply',
  counts: { step: true, deeper: true },
  start: async ({ step, base, evaluator, scope }) => ({
    ...base,
    input: await evaluator.resolve(step.input ?? {}, scope()),
  }),
  request: {
    fields: (_definition, _run, step, state) => ({ target: step.workflow, input: state.input ?? {} }),
    breadcrumb: ({ run, effect, tags, title, schemas }) => ({
      id: effect.id,
      schema_name: schemas.workflowRequest,
      title: `${title}: ${effect.target}`,
      tags,
      context: {
        workflow: effect.target,
        input: effect.input ?? {},
        request_id: effect.id,
        depth: effect.depth,
        parent: { run_id: run.run_id, step: effect.step, workflow: run.workflow },
      },
    }),
    answeredBy: {
      schema: WORKFLOW_DEF_SCHEMA,
      nameOf: (context) => {
        const workflow = WorkflowDefinitionSchema.safeParse(context);
        return workflow.success ? workflow.data.workflow_id : undefined;
      },
    },
  },
  abandon: (step, key, attemptId) => {
    const workflow = step.workflow;
    if (workflow === undefined) return undefined;
    const child = runIdFor(attemptId);
    return { type: 'cancel_run', id: cancelIdFor(child), run_id: child, workflow, step: key };
  },
};
