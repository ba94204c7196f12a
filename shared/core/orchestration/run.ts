/**
 * The run: one `workflow.run.v1` breadcrumb per run, id = run id, whose `context` is a `Run`. It is the truth
 * about the run; everything else (requests, timers, the result) is derived from it (see README.md).
 *
 * `steps` holds one `StepState` per step instance, keyed by instance key:
 * - a top-level step, or a parallel branch, by its id (`lookup`, `stock`);
 * - a map item by its map's key and index (`lines[3]`); a step nested in a map item by the item's key, a dot and
 *   its id (`lines[3].stock`).
 * A step's `output` is what the workflow's expressions see as `steps.<id>`.
 */
import { STEP_KINDS } from '#shared/domain/workflow-definition.ts';
import * as z from '#shared/domain/zod.ts';

export const RUN_STATUSES = ['running', 'waiting', 'paused', 'succeeded', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled'];

export const STEP_STATUSES = [
  'pending',
  'running',
  'waiting',
  'succeeded',
  'failed',
  'skipped',
  'cancelled',
] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];
/** A step that has started and not ended: its request is out, or its timer is set. */
export const ACTIVE_STEP_STATUSES: readonly StepStatus[] = ['running', 'waiting'];

const Timestamp = z.string();

/** A late answer: one that came for a step after it was cancelled (recorded, never applied). */
const LateAnswerSchema = z.object({
  id: z.string(),
  by: z.string(),
  at: Timestamp,
  ok: z.boolean(),
});

export const StepStateSchema = z.object({
  kind: z.enum(STEP_KINDS),
  status: z.enum(STEP_STATUSES),
  /** Attempts started; a retry (policy or `retry` control) is another attempt. */
  attempts: z.number().check(z.int(), z.minimum(0)),
  /**
   * The current attempt's id: the id (and `request_id`) of its request breadcrumb, and the stem of its timers' ids.
   * Deterministic: run id, the step's place and the attempts of it and its enclosing steps.
   */
  attempt_id: z.optional(z.string()),
  /** The resolved input of the current attempt (tool, agent, sub-workflow). */
  input: z.optional(z.unknown()),
  /** Agent steps: the resolved message. */
  message: z.optional(z.string()),
  /** Human steps: the resolved prompt. */
  prompt: z.optional(z.string()),
  /** Map steps: the items, as evaluated when the map started. */
  items: z.optional(z.array(z.unknown())),
  output: z.optional(z.unknown()),
  /** Why the step failed; while a retry runs, why the previous attempt failed. */
  error: z.optional(z.string()),
  started_at: z.optional(Timestamp),
  ended_at: z.optional(Timestamp),
  /** When the current attempt times out (`timeout_seconds`). */
  timeout_at: z.optional(Timestamp),
  /** Wait steps: when the wait ends. */
  wake_at: z.optional(Timestamp),
  /**
   * wait_for steps: what the attempt waits for (shown in the run: the selector, the correlation value it evaluated
   * to, the deadline); its wait index entry is keyed by the step, `correlation.value` and the workspace.
   */
  waiting_for: z.optional(
    z.object({
      selector: z.unknown(),
      correlation: z.optional(
        z.object({ field: z.string(), value: z.union([z.string(), z.number(), z.boolean()]) }),
      ),
      until: Timestamp,
    }),
  ),
  /** A failed attempt waiting for its back-off before the next. */
  retry_at: z.optional(Timestamp),
  /**
   * Agent and tool steps: the definition the current attempt's request runs, its id and version: the version the
   * step pins (the request names it, and the executor runs it: `shared/core/executor/versions.ts`), else the
   * latest when the request was written (what its rule runs once the rule manager has compiled that version).
   */
  definition: z.optional(z.object({ id: z.string(), version: z.number().check(z.int(), z.minimum(1)) })),
  /** The answer breadcrumb applied to this attempt (duplicates of it change nothing). */
  answer_id: z.optional(z.string()),
  /** Who answered (the answer's writer: `tool:echo`, `user:ann`). */
  by: z.optional(z.string()),
  /** Human steps. */
  decision: z.optional(z.enum(['approve', 'reject'])),
  comment: z.optional(z.string()),
  answered_at: z.optional(Timestamp),
  /**
   * Agent steps of a run with a token, cost or model-call budget: the share of what remains reserved for this
   * attempt, handed to the agent as its request budget (`limits.ts` `reserveBudgets`).
   */
  budget: z.optional(
    z.object({
      max_tokens: z.optional(z.number()),
      max_cost_nusd: z.optional(z.number()),
      max_llm_calls: z.optional(z.number()),
    }),
  ),
  late_answers: z.optional(z.array(LateAnswerSchema)),
});
export type StepState = z.infer<typeof StepStateSchema>;

/** A human response or control refused because of its writer (authority.ts). */
const RefusedSchema = z.object({
  id: z.string(),
  by: z.string(),
  what: z.string(),
  reason: z.string(),
  at: Timestamp,
});

export const ParentSchema = z.object({
  run_id: z.string(),
  step: z.string(),
  workflow: z.string(),
});
export type Parent = z.infer<typeof ParentSchema>;

export const RunSchema = z.object({
  run_id: z.string(),
  workflow: z.string(),
  /** The `workflow.def.v1` breadcrumb's id. */
  definition_id: z.string(),
  /** The definition version the run follows from start to end (a later edit does not change a running run). */
  workflow_version: z.number().check(z.int(), z.minimum(1)),
  status: z.enum(RUN_STATUSES),
  input: z.unknown(),
  steps: z.record(z.string(), StepStateSchema),
  output: z.optional(z.unknown()),
  error: z.optional(z.string()),
  /** The step whose failure failed the run. */
  failed_step: z.optional(z.string()),
  /** The `request_id` the run answers (tagged `request:<id>` on its result). */
  request_id: z.string(),
  /** Nesting: 0 for a run started by a user; a sub-workflow's run is its parent's depth + 1. */
  depth: z.number().check(z.int(), z.minimum(0)),
  parent: z.optional(ParentSchema),
  /** The `run:`, `step:` and `reply-to:` tags of the request, copied onto the run's result (shared/domain/CONVENTIONS.md). */
  reply_tags: z.array(z.string()),
  /** What started the run (a `workflow.request.v1`, or a breadcrumb an explicit subscription matched). */
  trigger: z.object({ id: z.string(), schema_name: z.string(), context: z.unknown() }),
  started_at: Timestamp,
  ended_at: z.optional(Timestamp),
  /**
   * For `limits`: leaf steps started; model calls, tokens (in + out) and cost (nano-dollars) of the answers
   * recorded (`limits.ts`), counted in the same write that records each answer.
   */
  counters: z.object({
    steps: z.number().check(z.int(), z.minimum(0)),
    llm_calls: z.number().check(z.int(), z.minimum(0)),
    tokens: z.optional(z.number().check(z.int(), z.minimum(0))),
    cost_nusd: z.optional(z.number().check(z.int(), z.minimum(0))),
  }),
  /** The budget that paused the run (`limits.ts`): a person resumes it after raising the limit. */
  stopped_by: z.optional(
    z.object({
      budget: z.string(),
      limit: z.number(),
      used: z.number(),
      unit: z.enum(['tokens', 'usd', 'calls']),
      step: z.optional(z.string()),
      at: Timestamp,
    }),
  ),
  /** Limits a person raised when resuming (over the definition's `limits`), with who and when. */
  raised_limits: z.optional(
    z.object({
      max_tokens: z.optional(z.number()),
      max_cost_usd: z.optional(z.number()),
      max_llm_calls: z.optional(z.number()),
      by: z.string(),
      at: Timestamp,
    }),
  ),
  /** How many times the run has ended (a retry of an ended run ends it again, with a new result). */
  completions: z.number().check(z.int(), z.minimum(0)),
  /** Ids of the control breadcrumbs applied, newest last (a redelivered control changes nothing). */
  controls: z.array(z.string()),
  paused_by: z.optional(z.string()),
  /**
   * Human responses and controls the run refused because of who wrote them (authority.ts), newest last: where a
   * person looking at the run sees that someone tried, and why it did not count.
   */
  refused: z.optional(z.array(RefusedSchema)),
  /**
   * Who drives the run (its requests' `reply-to:`): an orchestrating agent, `agent:<id>`. Absent: the workflow
   * executor of `workflow`, `workflow:<id>`.
   */
  driver: z.optional(z.string()),
  /**
   * The workflow the run follows, when no `workflow.def.v1` holds it: an agent's orchestration plan, generated
   * when the run starts (`shared/core/agents/orchestration-agent.ts`). Absent: `definition_id` at `workflow_version`.
   */
  definition: z.optional(z.record(z.string(), z.unknown())),
});
export type Run = z.infer<typeof RunSchema>;

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

export function isActive(state: StepState | undefined): boolean {
  return state !== undefined && ACTIVE_STEP_STATUSES.includes(state.status);
}
