/**
 * A definition as written by a user, checked in full: its structure (`parseDefinition`) and, for workflows, that
 * every expression (step `input` strings starting with "=", `when`, agent `message`, human `prompt`, map `items`,
 * the workflow's `output`) is valid JSONata and every `input_schema` a usable JSON Schema, so a typo is reported
 * with its path (`steps[0].input.url`, `steps[1].when`) instead of failing the first run. Agents are checked for
 * their type too (`agent-spec.ts`: the `yaml` parsed, the fields the type needs, api transforms compiled), and
 * outbound limits (`outbound-limits.ts`) against the operator's ceiling in this process's environment.
 *
 * The rule: only the places that accept or report on a definition import this module (the JSONata parser is 81 KB
 * minified): the rule manager (an invalid definition gets no rule, so it never runs) and the CLI (`crumbs apply`,
 * `crumbs explain`). The executors and the DLQ handler keep `parseDefinition`: a message names a definition version
 * the rule manager has validated. A broken expression that reaches a workflow anyway (a message put on the queue
 * by hand) fails when it is compiled, as a NonRetriableError the pipeline answers with a `workflow.error.v1`
 * naming the step, so nothing waits forever.
 */
import jsonata from 'jsonata';
import { type AgentSpec, agentSpec } from './agent-spec.ts';
import { parseOrThrow } from './breadcrumb.ts';
import { definitionSchemas, type ParsedDefinition, parseDefinition } from './definitions.ts';
import { type FieldIssue, InvalidJsonSchemaError, ValidationError } from './errors.ts';
import { compileJsonSchema } from './lang/json-schema.ts';
import { unboundedJsonataProblem } from './lang/jsonata-limits.ts';
import { DEFAULT_MAX_RESPONSE_BYTES, httpConfigProblems, responseLimitProblem } from './outbound-limits.ts';
import { type ScheduleDefinition, scheduleDefinitionSchema } from './schedule-definition.ts';
import { parseScheduleExpression, ScheduleExpressionError } from './schedule-expression.ts';
import { parseYaml } from './yaml.ts';

/**
 * The issue message for an expression JSONata cannot parse, or could not run in bounded time (a regex the
 * linear-time engine cannot run, a signature that backtracks: `jsonata-limits.ts`); `undefined` when it is fine.
 */
function jsonataSyntaxError(expression: string): string | undefined {
  let parsed: jsonata.Expression;
  try {
    parsed = jsonata(expression);
  } catch (error) {
    return `not a valid JSONata expression: ${describeJsonataError(error)}`;
  }
  const unbounded = unboundedJsonataProblem(parsed);
  return unbounded === undefined ? undefined : `not a usable JSONata expression: ${unbounded}`;
}

/** JSONata throws plain objects `{ message, position, token }`, not Errors, so `String(error)` would say nothing. */
function describeJsonataError(error: unknown): string {
  if (error !== null && typeof error === 'object' && 'message' in error) {
    const { message, position } = error as { message: unknown; position?: unknown };
    return `${String(message)}${typeof position === 'number' ? ` (at position ${position})` : ''}`;
  }
  return String(error);
}

/** The problem with a JSON Schema a workflow uses (`input_schema`), as `compileJsonSchema` reports it. */
function jsonSchemaProblem(schema: Record<string, unknown>): string | undefined {
  try {
    compileJsonSchema(`definition-check:${JSON.stringify(schema)}`, schema, 'this schema');
    return undefined;
  } catch (error) {
    if (!(error instanceof InvalidJsonSchemaError)) throw error;
    return `not a valid JSON Schema: ${error.problem}`;
  }
}

const CHECKED_SCHEMAS = definitionSchemas({ expression: jsonataSyntaxError, jsonSchema: jsonSchemaProblem });

/** A definition that passed every check; an agent's with the configuration its type runs with. */
export type ValidatedDefinition = ParsedDefinition & { readonly spec?: AgentSpec };

/**
 * Parses a definition's `context` by its schema name, with every check a writer should hear about. Throws
 * ValidationError with paths relative to the context, as `parseDefinition` does.
 */
export function validateDefinition(
  schemaName: string,
  context: unknown,
  limits: DefinitionLimits = DEFAULT_DEFINITION_LIMITS,
): ValidatedDefinition {
  const parsed = parseDefinition(schemaName, context, CHECKED_SCHEMAS);
  const schemaIssues = definitionSchemaIssues(parsed);
  if (schemaIssues.length > 0) throw new ValidationError(schemaIssues);
  if (parsed.kind === 'tool' && parsed.definition.implementation === 'http') {
    const problems = httpConfigProblems(parsed.definition.config, limits.maxResponseBytes);
    if (problems.length > 0) throw new ValidationError(problems);
  }
  if (parsed.kind !== 'agent') return parsed;
  const spec = agentSpec(parsed.definition, {
    parseYaml,
    expression: jsonataSyntaxError,
    jsonSchema: jsonSchemaProblem,
  });
  const tooLarge =
    spec.type === 'api'
      ? responseLimitProblem(
          'transport.api.max_response_bytes',
          spec.api.max_response_bytes,
          limits.maxResponseBytes,
        )
      : undefined;
  if (tooLarge !== undefined) throw new ValidationError([tooLarge]);
  return { ...parsed, spec };
}

/** The operator's limits a definition is checked against (`CRUMBS_MAX_RESPONSE_BYTES`). */
export interface DefinitionLimits {
  readonly maxResponseBytes: number;
}

/**
 * The limits when the operator set none; callers pass `definitionLimits()` (`shared/config.ts`), the environment's.
 */
export const DEFAULT_DEFINITION_LIMITS: DefinitionLimits = { maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES };

/**
 * Tools' `input_schema` / `output_schema` and an agent's `response_schema`, checked as the workflow's schemas are
 * (the executors validate every request and answer against them, so a schema that cannot end must not be active).
 */
function definitionSchemaIssues(parsed: ParsedDefinition): FieldIssue[] {
  const schemas: [string, Record<string, unknown> | undefined][] =
    parsed.kind === 'tool'
      ? [
          ['input_schema', parsed.definition.input_schema],
          ['output_schema', parsed.definition.output_schema],
        ]
      : parsed.kind === 'agent'
        ? [['response_schema', parsed.definition.response_schema]]
        : [];
  const issues: FieldIssue[] = [];
  for (const [path, schema] of schemas) {
    const message = schema === undefined ? undefined : jsonSchemaProblem(schema);
    if (message !== undefined) issues.push({ path, message });
  }
  return issues;
}

/** Why Scheduler would refuse this expression in this zone, or undefined (croner reads the cron). */
function scheduleExpressionProblem(expression: string, timezone: string | undefined): string | undefined {
  try {
    parseScheduleExpression(expression, timezone ?? 'UTC');
    return undefined;
  } catch (error) {
    if (!(error instanceof ScheduleExpressionError)) throw error;
    return error.message;
  }
}

const CHECKED_SCHEDULE = scheduleDefinitionSchema(scheduleExpressionProblem);

/** A `schedule.def.v1` context, checked in full (its cron or rate and time zone included). */
export function validateScheduleDefinition(context: unknown): ScheduleDefinition {
  return parseOrThrow(CHECKED_SCHEDULE, context);
}
