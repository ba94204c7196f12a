/**
 * `workflow.def.v1`: a workflow is a list of steps run by the orchestration engine (`shared/core/orchestration/`),
 * one event hop per step. A step is exactly one kind (`steps/kinds.ts` lists them; each kind's module says what
 * it carries: tool, agent, workflow, parallel, map, human, wait) and may carry `when` (skip when falsy), `input`
 * (strings starting with "=" are JSONata over `{ input, steps, run }`; inside a map also `item` and `index`),
 * `retry: { max_attempts, backoff_seconds }`, `timeout_seconds` and `on_error: "fail" | "continue"`. The workflow
 * carries `input_schema`, `output` (JSONata, or an object whose "=" strings are JSONata), `max_depth` and
 * `limits: { max_steps, max_llm_calls }`. Step ids are unique across the definition, nested steps included.
 *
 * Definitions without the engine's fields load and run: `subscriptions` is optional (every workflow is triggered
 * by `workflow.request.v1` naming it and by everything tagged `reply-to:workflow:<id>`); an `output` shaped
 * `{ schema_name, tags? }` (a schema name, no other key) says which schema the answer has (`answer`), and the
 * run's output is then the last step's. Expressions also see `trigger` (the triggering breadcrumb's context) and
 * `context` (the assembled context selectors).
 */
import { SCHEMA_NAME_PATTERN } from './breadcrumb.ts';
import { RUN_BUDGET_FIELDS } from './budget.ts';
import {
  HopLimitSchema,
  JsonSchemaObject,
  NameSchema,
  SubscriptionsSchema,
  wholeNumber,
} from './definition-fields.ts';
import { replyToTag, WORKFLOW_REQUEST_SCHEMA, WORKFLOW_RESULT_SCHEMA } from './protocol.ts';
import type { Selector, SelectorInput } from './selector.ts';
import { SelectorSchema } from './selector.ts';
import {
  kindsOf,
  nestedSteps,
  STEP_KIND_SCHEMAS,
  STEP_KINDS,
  type StepDefinition,
  stepKindSchema,
} from './steps/kinds.ts';
import { addExpressionIssues, bare, STEP_COMMON_FIELDS, type WorkflowChecks } from './steps/step-schema.ts';
import { MAX_WAIT_FOR_STEPS } from './steps/wait-for.ts';
import * as z from './zod.ts';

export { STEP_KINDS, type StepDefinition, type StepKindName, stepKind } from './steps/kinds.ts';
export { DEFAULT_MAP_CONCURRENCY } from './steps/map.ts';
export {
  type ExpressionCheck,
  type JsonSchemaCheck,
  MAX_TIMER_SECONDS,
  ON_ERROR,
  StepIdSchema,
  type WorkflowChecks,
} from './steps/step-schema.ts';
export { MAX_WAIT_FOR_STEPS } from './steps/wait-for.ts';

export const DEFAULT_MAX_DEPTH = 5;
/** Steps started per run (every attempt of every step, map items included) when `limits.max_steps` is absent. */
export const DEFAULT_MAX_STEPS = 1000;
/**
 * A step: the common fields, then each kind's own (in `STEP_KIND_SCHEMAS` order). The kinds' fields are built from
 * their modules, so the parsed type is declared by them (`StepDefinition`) rather than inferred here.
 */
export const StepSchema: z.ZodMiniType<StepDefinition> = z.object(
  stepShape(),
) as unknown as z.ZodMiniType<StepDefinition>;

function stepShape(): Record<string, z.core.SomeType> {
  const shape: Record<string, z.core.SomeType> = { ...STEP_COMMON_FIELDS };
  // Descriptors, not a spread: a nesting kind's field is a getter that reads StepSchema once it exists.
  for (const kind of STEP_KIND_SCHEMAS) {
    Object.defineProperties(shape, Object.getOwnPropertyDescriptors(kind.fields(() => StepSchema)));
  }
  return shape;
}

const LimitsSchema = z.object(
  {
    max_steps: z.optional(wholeNumber(1, 100_000)),
    /** Model calls (each call of each agent of the run), not agent steps. */
    max_llm_calls: z.optional(wholeNumber(0, 100_000)),
    ...RUN_BUDGET_FIELDS,
  },
  { error: 'expected { max_steps?, max_llm_calls?, max_tokens?, max_cost_usd? }' },
);

export interface AnswerShape {
  schema_name: string;
  tags: string[];
}

/** The answer-shape `output: { schema_name, tags? }` (see the header for how it is told apart). */
function legacyAnswer(output: unknown): AnswerShape | undefined {
  if (output === null || typeof output !== 'object' || Array.isArray(output)) return undefined;
  const o = output as Record<string, unknown>;
  if (Object.keys(o).some((k) => k !== 'schema_name' && k !== 'tags')) return undefined;
  if (typeof o.schema_name !== 'string' || !SCHEMA_NAME_PATTERN.test(o.schema_name)) return undefined;
  const tags = o.tags ?? [];
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string' || t.startsWith('='))) return undefined;
  return { schema_name: o.schema_name, tags: tags as string[] };
}

/** Checks one step and its nested steps in document order: kind, kind-only fields, expressions, unique ids. */
function checkStep(
  step: StepDefinition,
  path: PropertyKey[],
  seen: Set<string>,
  checks: WorkflowChecks,
  ctx: z.core.$RefinementCtx,
): void {
  const issue = (at: PropertyKey[], message: string) =>
    ctx.addIssue({ code: 'custom', path: [...path, ...at], message });
  const kinds = kindsOf(step as unknown as Record<string, unknown>);
  if (kinds.length !== 1) {
    issue(
      [],
      kinds.length === 0
        ? `expected one of ${STEP_KINDS.join(', ')}`
        : `expected exactly one of ${STEP_KINDS.join(', ')}, got ${kinds.join(' and ')}`,
    );
  }
  for (const kind of STEP_KIND_SCHEMAS) {
    if (kinds.includes(kind.kind)) continue;
    for (const field of kind.ownFields ?? []) {
      if ((step as unknown as Record<string, unknown>)[field] !== undefined) {
        issue([field], `only ${article(kind.kind)} ${kind.kind} step has "${field}"`);
      }
    }
  }
  const expression = checks.expression;
  if (expression !== undefined) {
    addExpressionIssues(step.input, expression, issue, ['input']);
    if (step.when !== undefined) {
      const message = expression(bare(step.when));
      if (message !== undefined) issue(['when'], message);
    }
  }
  for (const kind of kinds) stepKindSchema(kind).check?.(step, checks, issue);
  if (seen.has(step.id)) issue(['id'], `duplicate step id "${step.id}"`);
  seen.add(step.id);
  for (const [nested, at] of nestedSteps(step)) checkStep(nested, [...path, ...at], seen, checks, ctx);
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
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
          const waits = waitForSteps(workflow.steps);
          if (waits.length > MAX_WAIT_FOR_STEPS) {
            ctx.addIssue({
              code: 'custom',
              path: (waits[MAX_WAIT_FOR_STEPS] as WaitForEntry).path,
              message: `at most ${MAX_WAIT_FOR_STEPS} wait_for steps in a workflow (each joins its one rule), got ${waits.length}`,
            });
          }
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
              addExpressionIssues(
                workflow.output,
                checks.expression,
                (path, message) => ctx.addIssue({ code: 'custom', path, message }),
                ['output'],
              );
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
        /** The answer's schema and extra tags (an answer-shape `output`). */
        answer: legacy ?? { schema_name: WORKFLOW_RESULT_SCHEMA, tags: [] },
      };
    }),
  );
}

/** Structure only: expressions are not compiled. */
export const WorkflowDefinitionSchema = workflowDefinitionSchema();
export type WorkflowDefinition = z.output<typeof WorkflowDefinitionSchema>;
export type WorkflowDefinitionInput = z.input<typeof WorkflowDefinitionSchema>;

export interface WaitForEntry {
  readonly step: StepDefinition & { wait_for: NonNullable<StepDefinition['wait_for']> };
  /** Where it sits in the definition (`steps[2].parallel.branches[0]`). */
  readonly path: (string | number)[];
}

/** The workflow's wait_for steps, nested ones included, in document order. */
export function waitForSteps(steps: readonly StepDefinition[]): WaitForEntry[] {
  const out: WaitForEntry[] = [];
  const walk = (step: StepDefinition, path: (string | number)[]) => {
    if (step.wait_for !== undefined) out.push({ step: step as WaitForEntry['step'], path });
    for (const [nested, below] of nestedSteps(step))
      walk(nested, [...path, ...(below as (string | number)[])]);
  };
  for (const [i, step] of steps.entries()) walk(step, ['steps', i]);
  return out;
}

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
