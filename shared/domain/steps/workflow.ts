/**
 * `workflow` steps, `{ workflow: "<id>", input? }`: the run writes a workflow.request.v1 starting a sub-run, and
 * that run's workflow.result.v1 / workflow.error.v1 answers it.
 */
import { NameSchema } from '../definition-fields.ts';
import * as z from '../zod.ts';
import type { StepKindSchema } from './step-schema.ts';

export interface WorkflowStepFields {
  workflow?: string;
}

export const workflowStepSchema: StepKindSchema<'workflow', WorkflowStepFields> = {
  kind: 'workflow',
  fields: () => ({ workflow: z.optional(NameSchema) }),
};
