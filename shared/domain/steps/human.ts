/**
 * `human` steps, `{ human: { prompt, input_schema? } }`: the run writes a human.request.v1 and waits for a
 * person's human.response.v1 (approve with an input matching `input_schema`, or reject).
 */
import { JsonSchemaObject } from '../definition-fields.ts';
import * as z from '../zod.ts';
import { addExpressionIssues, type StepKindSchema } from './step-schema.ts';

export interface HumanStepFields {
  human?: {
    prompt: string;
    input_schema?: Record<string, unknown> | undefined;
  };
}

export const humanStepSchema: StepKindSchema<'human', HumanStepFields> = {
  kind: 'human',
  fields: () => ({
    human: z.optional(
      z.object(
        {
          prompt: z.string({ error: 'expected a string' }).check(z.minLength(1, 'a prompt cannot be empty')),
          input_schema: z.optional(JsonSchemaObject),
        },
        { error: 'expected { prompt, input_schema? }' },
      ),
    ),
  }),
  check: (step, checks, issue) => {
    if (step.human === undefined) return;
    if (checks.expression !== undefined) {
      addExpressionIssues(step.human.prompt, checks.expression, issue, ['human', 'prompt']);
    }
    if (checks.jsonSchema !== undefined && step.human.input_schema !== undefined) {
      const message = checks.jsonSchema(step.human.input_schema);
      if (message !== undefined) issue(['human', 'input_schema'], message);
    }
  },
};
