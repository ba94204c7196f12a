/**
 * A step kind's domain half: the fields a `workflow.def.v1` step of the kind carries, the steps it nests and what
 * is checked about it when a definition is written. Structure only, no IO and no engine: the engine's half of
 * each kind (how it starts, what it asks for, what it counts) is in `shared/core/orchestration/steps/`.
 *
 * One module per kind beside this one, listed once in `kinds.ts`. A step carries exactly one kind's key; the
 * fields common to every step (`id`, `when`, `input`, `retry`, `timeout_seconds`, `on_error`) are the workflow's
 * (`workflow-definition.ts`).
 */
import { wholeNumber } from '../definition-fields.ts';
import * as z from '../zod.ts';
import type { StepDefinition } from './kinds.ts';

/** A JSONata expression (`when`, `map.items`; a leading "=" is accepted). */
export const ExpressionSchema = z
  .string({ error: 'expected a JSONata expression string' })
  .check(z.minLength(1, 'expected a JSONata expression'));

/** One year: a timer longer than that is more likely a unit mistake than a plan. */
export const MAX_TIMER_SECONDS = 365 * 24 * 3600;

export const ON_ERROR = ['fail', 'continue'] as const;

export const StepIdSchema = z
  .string({ error: 'expected a string' })
  .check(z.regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, 'expected an identifier like "fetch_page"'));

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

/** The fields every step has, whatever its kind; a kind's own fields follow them. */
export const STEP_COMMON_FIELDS = {
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
};
export type StepCommonFields = z.output<z.ZodMiniObject<typeof STEP_COMMON_FIELDS>>;

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

/** A problem at a path below the step (or the steps array). */
export interface StepIssue {
  readonly path: (string | number)[];
  readonly message: string;
}

/** What an orchestrating agent's plan may call: the agent itself is never one, `available` when it is set. */
export interface OrchestrationScope {
  readonly self: string;
  readonly available: readonly string[] | undefined;
}

export type AddIssue = (path: PropertyKey[], message: string) => void;

/**
 * `K` is the kind's key in a step (`tool`, `parallel`), `F` the parsed type of its fields: `kinds.ts` composes
 * `StepDefinition` from them, so a kind's fields are declared once, here beside its schema.
 */
export interface StepKindSchema<K extends string = string, F = unknown> {
  readonly kind: K;
  /**
   * The kind's fields (a zod shape): its key and the fields only it carries. `step` is the step schema, for kinds
   * that nest steps; read it in a getter (`get parallel() { … }`), since the step schema is built from these.
   */
  readonly fields: (step: () => z.ZodMiniType<StepDefinition>) => Record<string, z.core.SomeType>;
  /** The fields besides its key only this kind may carry (another kind carrying one is refused). */
  readonly ownFields?: readonly string[];
  /** The steps nested in a step of this kind, with their path below it. */
  readonly nested?: (step: StepDefinition) => readonly (readonly [StepDefinition, PropertyKey[]])[];
  /** Adds the issues of the kind's expressions and JSON Schemas, when the definition's checks are given. */
  readonly check?: (step: StepDefinition, checks: WorkflowChecks, issue: AddIssue) => void;
  /** What a run driven by an agent (no timers, no calls of itself) refuses in a step of this kind. */
  readonly orchestrationIssues?: (step: StepDefinition, scope: OrchestrationScope) => StepIssue[];
  /** Type only: the parsed fields. */
  readonly fieldsType?: F;
}

/** Checks the "=" strings of a value at any depth (an object input, a message, a prompt). */
export function addExpressionIssues(
  value: unknown,
  check: ExpressionCheck,
  issue: AddIssue,
  path: PropertyKey[],
): void {
  if (typeof value === 'string') {
    const message = value.startsWith('=') ? check(value.slice(1)) : undefined;
    if (message !== undefined) issue(path, message);
  } else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) addExpressionIssues(item, check, issue, [...path, i]);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) addExpressionIssues(item, check, issue, [...path, key]);
  }
}

/** A bare expression (`when`, `map.items`): the leading "=" is optional. */
export function bare(expression: string): string {
  return expression.startsWith('=') ? expression.slice(1) : expression;
}
