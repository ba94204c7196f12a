/**
 * What an agent accepts and answers in each mode (seed 004, "Config Schema Extensions"): the modes its
 * card lists, the shape of its plans and deliverables, and how it orchestrates sub-agents. Structure only, no IO:
 * `agent-spec.ts` reads these from the definition or from its `yaml` (where seed 004 keeps them; both is an
 * error), and `shared/core/agents/modes.ts` and `orchestration-agent.ts` run them.
 *
 *   modes          converse | plan | build — what requests the agent accepts (default: all three). A request
 *                  without a mode is `converse` when the agent accepts it, else the first mode it lists.
 *   plan           { format: json | markdown | yaml, schema?, template? }            (default: markdown)
 *   deliverable    { format: json | markdown | html, type, schema?, sections? }     (default: markdown, type =
 *                  the agent id)
 *   orchestration  { availableAgents?, defaultMode, maxDepth, subAgentMode, steps?, checkpoints? }
 *
 * Orchestration plans are runs of the workflow engine driven by the agent itself: workflow steps an agent can drive
 * without a timer (no `timeout_seconds`, no back-off, no kind whose `orchestrationIssues` refuse it). The step id
 * `final` is reserved for the agent's own last step, which answers in the requested mode.
 */
import { JsonSchemaObject, NameSchema, wholeNumber } from './definition-fields.ts';
import { kindsOf, nestedSteps, stepKindSchema } from './steps/kinds.ts';
import type { StepIssue } from './steps/step-schema.ts';
import { type StepDefinition, StepIdSchema, StepSchema } from './workflow-definition.ts';
import * as z from './zod.ts';

export const PLAN_FORMATS = ['json', 'markdown', 'yaml'] as const;
export const DELIVERABLE_FORMATS = ['json', 'markdown', 'html'] as const;
export const ORCHESTRATION_MODES = ['sequential', 'parallel'] as const;
export const ORCHESTRATION_ACTIONS = [
  'execute',
  'continue',
  'pause',
  'resume',
  'human-response',
  'rollback',
] as const;
export type OrchestrationAction = (typeof ORCHESTRATION_ACTIONS)[number];

/** Seed 004's open question ("Default to 3?"): yes. */
export const DEFAULT_ORCHESTRATION_DEPTH = 3;
/** The id of the agent's own last step in an orchestration run. */
export const FINAL_STEP_ID = 'final';

const MODES = ['converse', 'plan', 'build'] as const;

export const PlanConfigSchema = z.object(
  {
    format: z._default(
      z.enum(PLAN_FORMATS, { error: `expected one of ${PLAN_FORMATS.join(', ')}` }),
      'markdown',
    ),
    /** JSON Schema the plan must match (json and yaml plans). */
    schema: z.optional(JsonSchemaObject),
    /** A template the plan follows; a markdown template's headings must all appear in the plan. */
    template: z.optional(
      z.string({ error: 'expected text' }).check(z.maxLength(20_000, 'at most 20000 characters')),
    ),
  },
  { error: 'expected { format, schema?, template? }' },
);
export type PlanConfig = z.output<typeof PlanConfigSchema>;

export const DeliverableConfigSchema = z.object(
  {
    format: z._default(
      z.enum(DELIVERABLE_FORMATS, { error: `expected one of ${DELIVERABLE_FORMATS.join(', ')}` }),
      'markdown',
    ),
    /** What the deliverable is (`report`, `summary`): one deliverable per conversation and type. */
    type: z.optional(
      z
        .string({ error: 'expected a string' })
        .check(
          z.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'expected 1-64 letters, digits, ".", "_" or "-"'),
        ),
    ),
    /** JSON Schema a json deliverable must match. */
    schema: z.optional(JsonSchemaObject),
    /** Headings a markdown or html deliverable must have, in this order. */
    sections: z.optional(
      z.array(z.string().check(z.minLength(1), z.maxLength(200)), { error: 'expected an array of headings' }),
    ),
  },
  { error: 'expected { format, type?, schema?, sections? }' },
);
export type DeliverableConfig = z.output<typeof DeliverableConfigSchema>;

const CheckpointSchema = z.object(
  {
    id: z.optional(StepIdSchema),
    /** The top-level step it comes after; absent: after every sub-agent call, before the final step. */
    after: z.optional(StepIdSchema),
    prompt: z.string({ error: 'expected a string' }).check(z.minLength(1, 'a prompt cannot be empty')),
    input_schema: z.optional(JsonSchemaObject),
  },
  { error: 'expected { prompt, id?, after?, input_schema? }' },
);
export type Checkpoint = z.output<typeof CheckpointSchema>;

export const OrchestrationConfigSchema = z.object(
  {
    /** The agents it may call; absent: every agent of the workspace but itself. */
    availableAgents: z.optional(z.array(NameSchema, { error: 'expected an array of agent ids' })),
    defaultMode: z._default(
      z.enum(ORCHESTRATION_MODES, { error: 'expected "sequential" or "parallel"' }),
      'sequential',
    ),
    /** Nesting across orchestrations: the run's depth and its sub-agents' (each request carries its depth). */
    maxDepth: z._default(wholeNumber(1, 20), DEFAULT_ORCHESTRATION_DEPTH),
    /** The mode sub-agents are asked in when a planned call does not say. */
    subAgentMode: z._default(z.enum(MODES, { error: `expected one of ${MODES.join(', ')}` }), 'build'),
    /** A fixed plan: workflow steps (see the header); absent: the model plans calls of availableAgents. */
    steps: z.optional(
      z.array(StepSchema, { error: 'expected an array of steps' }).check(z.minLength(1, 'at least one step')),
    ),
    /** Human checkpoints: the run waits for an approval (`crumbs runs approve`) there. */
    checkpoints: z.optional(z.array(CheckpointSchema, { error: 'expected an array of checkpoints' })),
  },
  { error: 'expected { availableAgents?, defaultMode?, maxDepth?, steps?, checkpoints? }' },
);
export type OrchestrationConfig = z.output<typeof OrchestrationConfigSchema>;

export const ModesSchema = z
  .array(z.enum(MODES, { error: `expected one of ${MODES.join(', ')}` }), {
    error: 'expected an array of modes',
  })
  .check(z.minLength(1, 'list at least one mode'));

export type { StepIssue } from './steps/step-schema.ts';

/**
 * What an agent-driven run cannot do (see the header), and agents outside `available` or the agent itself.
 * Paths are relative to the steps array.
 */
export function orchestrationStepIssues(
  steps: readonly StepDefinition[],
  self: string,
  available: readonly string[] | undefined,
): StepIssue[] {
  const issues: StepIssue[] = [];
  const visit = (step: StepDefinition, path: (string | number)[]) => {
    if (step.id === FINAL_STEP_ID)
      issues.push({ path: [...path, 'id'], message: `"${FINAL_STEP_ID}" is reserved` });
    if (step.timeout_seconds !== undefined) {
      issues.push({ path: [...path, 'timeout_seconds'], message: 'an orchestration step has no timeout' });
    }
    if ((step.retry?.backoff_seconds ?? 0) > 0) {
      issues.push({
        path: [...path, 'retry', 'backoff_seconds'],
        message: 'an orchestration retries at once (0)',
      });
    }
    // What each kind refuses (a wait needs a timer; an agent step may not call the agent itself).
    for (const kind of kindsOf(step as unknown as Record<string, unknown>)) {
      for (const issue of stepKindSchema(kind).orchestrationIssues?.(step, { self, available }) ?? []) {
        issues.push({ path: [...path, ...issue.path], message: issue.message });
      }
    }
    for (const [nested, at] of nestedSteps(step)) visit(nested, [...path, ...(at as (string | number)[])]);
  };
  for (const [i, step] of steps.entries()) visit(step, [i]);
  return issues;
}
