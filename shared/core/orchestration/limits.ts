/**
 * A run's limits. Exceeding one fails the whole run (not just the step: `on_error` and `retry` do not apply) with
 * an error naming the limit, its value and where it is set. What a kind counts is its `counts` (`steps/`).
 *
 * - `max_steps` (`limits.max_steps`, default DEFAULT_MAX_STEPS): steps started, counting every attempt of every
 *   leaf step (tool, agent, sub-workflow, human, wait), map items included (parallel and map steps themselves do
 *   not count: their branches and items do).
 * - `max_llm_calls` (`limits.max_llm_calls`, no default): agent steps started. An agent may call its model more
 *   than once for one request (tool rounds); those calls are the agent's own `max_tool_rounds` to bound.
 * - `max_depth` (default DEFAULT_MAX_DEPTH): nesting of sub-workflows and sub-agent calls. A run at depth d
 *   may write requests at depth d + 1 ≤ max_depth; a request arriving deeper than the workflow's max_depth fails
 *   its run at once.
 */
import { NonRetriableError } from '#shared/domain/errors.ts';
import { DEFAULT_MAX_STEPS, type WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { Run } from './run.ts';
import type { StepKind } from './steps/step-kind.ts';

export type LimitName = 'max_steps' | 'max_llm_calls' | 'max_depth';

export class LimitExceededError extends NonRetriableError {
  override readonly name = 'LimitExceededError';
  constructor(
    readonly limit: LimitName,
    message: string,
  ) {
    super(message);
  }
}

/** Counts a step about to start, or throws when starting it would exceed a limit. */
export function countStart(definition: WorkflowDefinition, run: Run, kind: StepKind, stepKey: string): void {
  if (!kind.counts.step) return;
  const maxSteps = definition.limits.max_steps ?? DEFAULT_MAX_STEPS;
  if (run.counters.steps + 1 > maxSteps) {
    throw new LimitExceededError(
      'max_steps',
      `limit max_steps (${maxSteps}) exceeded: step "${stepKey}" would be step ${run.counters.steps + 1} of this run`,
    );
  }
  if (kind.counts.deeper === true) checkDepth(definition, run.depth + 1, `step "${stepKey}"`);
  if (kind.counts.llmCall === true) {
    const maxLlm = definition.limits.max_llm_calls;
    if (maxLlm !== undefined && run.counters.llm_calls + 1 > maxLlm) {
      throw new LimitExceededError(
        'max_llm_calls',
        `limit max_llm_calls (${maxLlm}) exceeded: ${kind.kind} step "${stepKey}" would be LLM call ${run.counters.llm_calls + 1} of this run`,
      );
    }
    run.counters.llm_calls += 1;
  }
  run.counters.steps += 1;
}

export function checkDepth(definition: WorkflowDefinition, depth: number, what: string): void {
  if (depth > definition.max_depth) {
    throw new LimitExceededError(
      'max_depth',
      `limit max_depth (${definition.max_depth}) exceeded: ${what} would run at depth ${depth}`,
    );
  }
}
