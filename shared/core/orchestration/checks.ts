/**
 * The checks a run makes on what it is given: a run's input against the workflow's `input_schema`, a human's
 * approved input against the step's. In a module of their own so the API can make the same checks before it
 * writes anything, without loading the engine (and JSONata). `validate` is where the validation runs: the data
 * checks of the function (`shared/ports/checks.ts`: off the event loop past a slice), or here on this thread.
 */
import { type FieldIssue, InvalidJsonSchemaError } from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/lang/json-schema.ts';
import type { WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { SchemaCheck } from '#shared/ports/checks.ts';
import { graphOf, stepAt } from './graph.ts';

/** Validates a value against a schema (`DataChecks.validate` of the run's workspace). */
export type Validate = (check: SchemaCheck) => Promise<FieldIssue[]>;

/** `Validate` on the caller's thread, with the full budget (tests, and callers with no data checks). */
export const validateHere: Validate = async (check) =>
  compileJsonSchema(check.cacheKey, check.schema, check.what).validate(check.value, check.root ?? '');

/** Why a run's input is refused (`input_schema`), or undefined. Also used by the API before writing a request. */
export async function inputProblem(
  definition: WorkflowDefinition,
  input: unknown,
  validate: Validate = validateHere,
): Promise<string | undefined> {
  if (definition.input_schema === undefined) return undefined;
  const issues = await schemaIssues(
    validate,
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
async function schemaIssues(
  validate: Validate,
  key: string,
  schema: Record<string, unknown>,
  what: string,
  input: unknown,
): Promise<FieldIssue[] | string> {
  try {
    return await validate({ cacheKey: key, schema, what, value: input, root: 'input' });
  } catch (error) {
    if (error instanceof InvalidJsonSchemaError) return error.message;
    throw error;
  }
}

/**
 * Why the human step at `stepKey` refuses this approved input (its `input_schema`), or undefined. Also used by the
 * API before it writes a response.
 */
export async function humanInputProblem(
  definition: WorkflowDefinition,
  stepKey: string,
  input: unknown,
  validate: Validate = validateHere,
): Promise<string | undefined> {
  const schema = stepAt(graphOf(definition), stepKey)?.human?.input_schema;
  if (schema === undefined) return undefined;
  const issues = await schemaIssues(
    validate,
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
