/**
 * `workflow.def.v1`: a workflow is a list of steps run by the orchestration engine (`shared/core/orchestration/`),
 * one event hop per step. A step is exactly one of:
 *
 *   tool      `{ tool: "<name>", input? }`                        → tool.request.v1, answered by tool.response.v1
 *   agent     `{ agent: "<id>", input?, message?, mode? }`       → agent.request.v1, answered by agent.response.v1
 *   workflow  `{ workflow: "<id>", input? }`                     → workflow.request.v1 (a sub-run), answered by
 *                                                                  workflow.result.v1 / workflow.error.v1
 *   parallel  `{ parallel: [step, …] }`                          every branch runs; joined when all end; output
 *                                                                  `{ <branch id>: output }`
 *   map       `{ map: { items: "=<JSONata>", step, max_concurrency? } }` one `step` per item; output in item order
 *   human     `{ human: { prompt, input_schema? } }`              → human.request.v1, answered by human.response.v1
 *   wait      `{ wait: { seconds } }`                             a timer
 *
 * and may carry `when` (skip when falsy), `input` (strings starting with "=" are JSONata over `{ input, steps, run }`;
 * inside a map also `item` and `index`), `retry: { max_attempts, backoff_seconds }`, `timeout_seconds` and
 * `on_error: "fail" | "continue"`. The workflow carries `input_schema`, `output` (JSONata, or an object whose
 * string values starting with "=" are JSONata), `max_depth` and `limits: { max_steps, max_llm_calls }`.
 *
 * Backward compatibility (the definitions written before the engine keep loading and running):
 * - `subscriptions` is optional. Every workflow is triggered by `workflow.request.v1` naming it and by everything
 *   tagged `reply-to:workflow:<id>` (the answers to its runs' requests, human responses, controls and timers);
 *   explicit trigger selectors still add triggers (their breadcrumb's context is the run's input).
 * - The old `output: { schema_name, tags }` (which schema the answer has) is recognised by its shape: an object
 *   with a `schema_name` that is a schema name, not an expression, and no key but `schema_name` and `tags`. It
 *   becomes `answer`; the run's output is then, as before, the last step's output. Any other `output` is the new
 *   output expression(s). Expressions also see `trigger` (the triggering breadcrumb's context, as before) and
 *   `context` (the assembled context selectors).
 *
 * Step ids are unique across the whole definition, nested steps included: parallel branches appear in the run's
 * `steps` under their own ids, and `retry` names a step by id.
 */
import { SCHEMA_NAME_PATTERN } from './breadcrumb.ts';
import {
  HopLimitSchema,
  JsonSchemaObject,
  NameSchema,
  SubscriptionsSchema,
  wholeNumber,
} from './definition-fields.ts';
import { AGENT_MODES, replyToTag, WORKFLOW_REQUEST_SCHEMA, WORKFLOW_RESULT_SCHEMA } from './protocol.ts';
import type { Selector, SelectorInput } from './selector.ts';
import { SelectorSchema } from './selector.ts';
import * as z from './zod.ts';

export const STEP_KINDS = ['tool', 'agent', 'workflow', 'parallel', 'map', 'human', 'wait'] as const;
export type StepKind = (typeof STEP_KINDS)[number];
export const ON_ERROR = ['fail', 'continue'] as const;

export const DEFAULT_MAX_DEPTH = 5;
/** Steps started per run (every attempt of every step, map items included) when `limits.max_steps` is absent. */
export const DEFAULT_MAX_STEPS = 1000;
/** Items of one map in flight at once when `max_concurrency` is absent: answers to one run serialize on it. */
export const DEFAULT_MAP_CONCURRENCY = 10;
/** One year: a timer longer than that is more likely a unit mistake than a plan. */
export const MAX_TIMER_SECONDS = 365 * 24 * 3600;

/**
 * Says what is wrong with one expression (the issue message), or `undefined` when it compiles. Supplied by
 * `definition-validation.ts`, which owns the JSONata parser.
 */
export type ExpressionCheck = (expression: string) => string | undefined;
/** Says what is wrong with a JSON Schema (`input_schema`), or `undefined` when it is usable. */
export type JsonSchemaCheck = (schema: Record<string, unknown>) => string | undefined;

export interface WorkflowChecks {
  readonly expression?: ExpressionCheck;
  readonly jsonSchema?: JsonSchemaCheck;
}

export const StepIdSchema = z
  .string({ error: 'expected a string' })
  .check(z.regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, 'expected an identifier like "fetch_page"'));

const ExpressionSchema = z
  .string({ error: 'expected a JSONata expression string' })
  .check(z.minLength(1, 'expected a JSONata expression'));

const RetrySchema = z.object(
  {
    max_attempts: wholeNumber(1, 20),
    backoff_seconds: z._default(
      z
        .number({ error: 'expected a number of seconds' })
        .check(z.minimum(0, 'at least 0'), z.maximum(86_400, 'at most 86400 (a day)')),
      0,
    ),
  },
  { error: 'expected { max_attempts, backoff_seconds? }' },
);

export const StepSchema = z.object({
  id: StepIdSchema,
  /** JSONata condition; the step is skipped when it is falsy. A leading "=" is accepted. */
  when: z.optional(ExpressionSchema),
  /** The step's input: an object whose "=" strings (at any depth) are JSONata, or one "=" expression. */
  input: z.optional(
    z.union([z.record(z.string(), z.unknown()), z.string()], {
      error: 'expected an object or a "=" JSONata expression',
    }),
  ),
  retry: z.optional(RetrySchema),
  timeout_seconds: z.optional(wholeNumber(1, MAX_TIMER_SECONDS)),
  on_error: z._default(z.enum(ON_ERROR, { error: 'expected "fail" or "continue"' }), 'fail'),

  tool: z.optional(NameSchema),
  agent: z.optional(NameSchema),
  /** Agent steps: the user message (may be a "=" expression). */
  message: z.optional(z.string({ error: 'expected a string' })),
  mode: z.optional(z.enum(AGENT_MODES, { error: `expected one of ${AGENT_MODES.join(', ')}` })),
  /** Agent steps: the agent orchestrates sub-agents of its own for this request (a nested orchestration). */
  orchestrate: z.optional(z.boolean({ error: 'expected true or false' })),
  workflow: z.optional(NameSchema),
  get parallel() {
    return z.optional(
      z
        .array(StepSchema, { error: 'expected an array of steps' })
        .check(z.minLength(1, 'at least one branch')),
    );
  },
  get map() {
    return z.optional(
      z.object(
        {
          /** JSONata giving the array of items. A leading "=" is accepted. */
          items: ExpressionSchema,
          get step() {
            return StepSchema;
          },
          max_concurrency: z.optional(wholeNumber(1, 100)),
        },
        { error: 'expected { items, step, max_concurrency? }' },
      ),
    );
  },
  human: z.optional(
    z.object(
      {
        prompt: z.string({ error: 'expected a string' }).check(z.minLength(1, 'a prompt cannot be empty')),
        input_schema: z.optional(JsonSchemaObject),
      },
      { error: 'expected { prompt, input_schema? }' },
    ),
  ),
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
});
export type StepDefinition = z.output<typeof StepSchema>;

/** The kind of a parsed step (the refinement below guarantees exactly one). */
export function stepKind(step: StepDefinition): StepKind {
  for (const kind of STEP_KINDS) if (step[kind] !== undefined) return kind;
  throw new Error(`step "${step.id}" has no kind`);
}

const LimitsSchema = z.object(
  {
    max_steps: z.optional(wholeNumber(1, 100_000)),
    max_llm_calls: z.optional(wholeNumber(0, 100_000)),
  },
  { error: 'expected { max_steps?, max_llm_calls? }' },
);

export interface AnswerShape {
  schema_name: string;
  tags: string[];
}

/** The pre-engine `output: { schema_name, tags? }` (see the header for how it is told apart). */
function legacyAnswer(output: unknown): AnswerShape | undefined {
  if (output === null || typeof output !== 'object' || Array.isArray(output)) return undefined;
  const o = output as Record<string, unknown>;
  if (Object.keys(o).some((k) => k !== 'schema_name' && k !== 'tags')) return undefined;
  if (typeof o.schema_name !== 'string' || !SCHEMA_NAME_PATTERN.test(o.schema_name)) return undefined;
  const tags = o.tags ?? [];
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string' || t.startsWith('='))) return undefined;
  return { schema_name: o.schema_name, tags: tags as string[] };
}

function addExpressionIssues(
  value: unknown,
  check: ExpressionCheck,
  ctx: z.core.$RefinementCtx,
  path: PropertyKey[],
): void {
  if (typeof value === 'string') {
    const message = value.startsWith('=') ? check(value.slice(1)) : undefined;
    if (message !== undefined) ctx.addIssue({ code: 'custom', path, message });
  } else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) addExpressionIssues(item, check, ctx, [...path, i]);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) addExpressionIssues(item, check, ctx, [...path, key]);
  }
}

/** A bare expression (`when`, `map.items`): the leading "=" is optional. */
function bare(expression: string): string {
  return expression.startsWith('=') ? expression.slice(1) : expression;
}

const AGENT_ONLY = ['message', 'mode', 'orchestrate'] as const;

/** Checks one step and its nested steps in document order: kind, agent-only fields, expressions, unique ids. */
function checkStep(
  step: StepDefinition,
  path: PropertyKey[],
  seen: Set<string>,
  checks: WorkflowChecks,
  ctx: z.core.$RefinementCtx,
): void {
  const kinds = STEP_KINDS.filter((k) => step[k] !== undefined);
  if (kinds.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      path,
      message:
        kinds.length === 0
          ? `expected one of ${STEP_KINDS.join(', ')}`
          : `expected exactly one of ${STEP_KINDS.join(', ')}, got ${kinds.join(' and ')}`,
    });
  }
  if (!kinds.includes('agent')) {
    for (const field of AGENT_ONLY) {
      if (step[field] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, field],
          message: `only an agent step has "${field}"`,
        });
      }
    }
  }
  const expression = checks.expression;
  if (expression !== undefined) {
    addExpressionIssues(step.input, expression, ctx, [...path, 'input']);
    if (step.when !== undefined) {
      const message = expression(bare(step.when));
      if (message !== undefined) ctx.addIssue({ code: 'custom', path: [...path, 'when'], message });
    }
    addExpressionIssues(step.message, expression, ctx, [...path, 'message']);
    addExpressionIssues(step.human?.prompt, expression, ctx, [...path, 'human', 'prompt']);
    if (step.map !== undefined) {
      const message = expression(bare(step.map.items));
      if (message !== undefined) ctx.addIssue({ code: 'custom', path: [...path, 'map', 'items'], message });
    }
  }
  if (checks.jsonSchema !== undefined && step.human?.input_schema !== undefined) {
    const message = checks.jsonSchema(step.human.input_schema);
    if (message !== undefined) {
      ctx.addIssue({ code: 'custom', path: [...path, 'human', 'input_schema'], message });
    }
  }
  if (seen.has(step.id)) {
    ctx.addIssue({ code: 'custom', path: [...path, 'id'], message: `duplicate step id "${step.id}"` });
  }
  seen.add(step.id);
  for (const [i, branch] of (step.parallel ?? []).entries()) {
    checkStep(branch, [...path, 'parallel', i], seen, checks, ctx);
  }
  if (step.map !== undefined) checkStep(step.map.step, [...path, 'map', 'step'], seen, checks, ctx);
}

/**
 * The workflow schema. Expression and JSON Schema checks are optional (see `definitions.ts` for why); the
 * structural checks (one kind per step, unique ids) always run.
 */
export function workflowDefinitionSchema(checks: WorkflowChecks = {}) {
  return z.pipe(
    z
      .object({
        workflow_id: NameSchema,
        description: z.optional(z.string()),
        subscriptions: z.optional(SubscriptionsSchema),
        input_schema: z.optional(JsonSchemaObject),
        steps: z
          .array(StepSchema, { error: 'expected an array of steps' })
          .check(z.minLength(1, 'at least one step')),
        output: z.optional(z.unknown()),
        max_depth: z._default(wholeNumber(1, 20), DEFAULT_MAX_DEPTH),
        limits: z._default(LimitsSchema, {}),
        hop_limit: HopLimitSchema,
      })
      .check(
        z.superRefine((workflow, ctx) => {
          const seen = new Set<string>();
          for (const [i, step] of workflow.steps.entries()) checkStep(step, ['steps', i], seen, checks, ctx);
          if (legacyAnswer(workflow.output) === undefined && workflow.output !== undefined) {
            const outputOk =
              typeof workflow.output === 'string' ||
              (workflow.output !== null &&
                typeof workflow.output === 'object' &&
                !Array.isArray(workflow.output));
            if (!outputOk) {
              ctx.addIssue({
                code: 'custom',
                path: ['output'],
                message: 'expected a "=" JSONata expression or an object of expressions',
              });
            } else if (checks.expression !== undefined) {
              addExpressionIssues(workflow.output, checks.expression, ctx, ['output']);
            }
          }
          if (checks.jsonSchema !== undefined && workflow.input_schema !== undefined) {
            const message = checks.jsonSchema(workflow.input_schema);
            if (message !== undefined) ctx.addIssue({ code: 'custom', path: ['input_schema'], message });
          }
        }),
      ),
    z.transform(({ output, ...workflow }) => {
      const legacy = legacyAnswer(output);
      return {
        ...workflow,
        /** The output expression(s); absent: the last step's output. */
        output: legacy === undefined ? output : undefined,
        /** The answer's schema and extra tags (the pre-engine `output`). */
        answer: legacy ?? { schema_name: WORKFLOW_RESULT_SCHEMA, tags: [] },
      };
    }),
  );
}

/** Structure only: expressions are not compiled. */
export const WorkflowDefinitionSchema = workflowDefinitionSchema();
export type WorkflowDefinition = z.output<typeof WorkflowDefinitionSchema>;
export type WorkflowDefinitionInput = z.input<typeof WorkflowDefinitionSchema>;

/** The workflow's principal, `workflow:<id>`: its runs' writer and the `reply-to` of their requests. */
export function workflowPrincipal(workflowId: string): string {
  return `workflow:${workflowId}`;
}

function selector(input: SelectorInput): Selector {
  return SelectorSchema.parse(input);
}

/** The default triggers of a workflow: requests naming it, and everything addressed to its runs. */
export function defaultWorkflowTriggers(workflowId: string): Selector[] {
  return [
    selector({
      schema_name: WORKFLOW_REQUEST_SCHEMA,
      role: 'trigger',
      context_match: [{ path: '$.workflow', op: 'eq', value: workflowId }],
    }),
    selector({ any_tags: [replyToTag(workflowPrincipal(workflowId))], role: 'trigger' }),
  ];
}
