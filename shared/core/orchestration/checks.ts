/**
 * The checks a run makes on what it is given: a run's input against the workflow's `input_schema`, a human's
 * approved input against the step's. In a module of their own so the API can make the same checks before it
 * writes anything, without loading the engine (and JSONata).
 */
import { type FieldIssue, InvalidJsonSchemaError } from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/lang/json-schema.ts';
import type { WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import { graphOf, stepAt } from './graph.ts';

/** Why a run's input is refused (`input_schema`), or undefined. Also used by the API before writing a request. */
export function inputProblem(definition: WorkflowDefinition, input: unknown): string | undefined {
  if (definition.input_schema === undefined) return undefined;
  const issues = schemaIssues(
    `workflow-input:${JSON.stringify(definition.input_schema)}`,
    definition.input_schema,
    `workflow "${definition.workflow_id}"'s input_schema`,
    input,
  );
  if (typeof issues === 'string') return issues;
  return issues.length === 0
    ? undefined
    : `input does not match the workflow's input_schema: ${formatIssues(issues)}`;
}

/**
 * The issues of `input`, or why the schema cannot judge it: a schema the rule manager would have marked invalid
 * (written before the check existed, or a run's own plan) or a validation over its budget is the input's refusal
 * (a 422 at the API, a failed run in the engine), never an unhandled error.
 */
function schemaIssues(
  key: string,
  schema: Record<string, unknown>,
  what: string,
  input: unknown,
): FieldIssue[] | string {
  try {
    return compileJsonSchema(key, schema, what).validate(input, 'input');
  } catch (error) {
    if (error instanceof InvalidJsonSchemaError) return error.message;
    throw error;
  }
}

/**
 * Why the human step at `stepKey` refuses this approved input (its `input_schema`), or undefined. Also used by the
 * API before it writes a response.
 */
export function humanInputProblem(
  definition: WorkflowDefinition,
  stepKey: string,
  input: unknown,
): string | undefined {
  const schema = stepAt(graphOf(definition), stepKey)?.human?.input_schema;
  if (schema === undefined) return undefined;
  const issues = schemaIssues(
    `human-input:${JSON.stringify(schema)}`,
    schema,
    `step "${stepKey}"'s input_schema`,
    input ?? null,
  );
  if (typeof issues === 'string') return issues;
  return issues.length === 0
    ? undefined
    : `input does not match the step's input_schema: ${formatIssues(issues)}`;
}

/** Whether a run in `status` takes this control (pause a running or waiting run, resume a paused one, cancel one
 * that has not ended); retry takes any run. The API and orchestrating agents check the same. */
export function controlAllowed(status: string, action: 'pause' | 'resume' | 'cancel' | 'retry'): boolean {
  switch (action) {
    case 'pause':
      return status === 'running' || status === 'waiting';
    case 'resume':
      return status === 'paused';
    case 'cancel':
      return !['succeeded', 'failed', 'cancelled'].includes(status);
    case 'retry':
      return true;
  }
}
