/**
 * A run's limits. Exceeding one fails the whole run (not just the step: `on_error` and `retry` do not apply) with
 * an error naming the limit, its value and where it is set. What a kind counts is its `counts` (`steps/`).
 *
 * - `max_steps` (`limits.max_steps`, default DEFAULT_MAX_STEPS): steps started, counting every attempt of every
 *   leaf step (tool, agent, sub-workflow, human, wait), map items included (parallel and map steps themselves do
 *   not count: their branches and items do).
 * - Budgets, exact (`shared/domain/budget.ts`): `max_llm_calls` (model calls, every call of every agent turn the
 *   run asked for, tool rounds included), `max_tokens` (input + output) and `max_cost_usd`, all without default.
 *   Counted from each answer's usage (an agent's `turn_usage`, else its `llm_usage`) in the same run write that
 *   records the answer. A budget does not fail the run: reaching one pauses it (`stopped_by`), and a person's
 *   `resume` raising the limit (`raised_limits`) goes on. Exact before each call too: an agent or tool step's
 *   request carries a share of what remains (`reserveBudgets`), which the agent's turn (or the `llm` tool) applies
 *   as a request budget and never crosses. The rule: what remains is the limit less what was used less the shares
 *   of the steps still running; the steps started in one transition split it equally (model calls: whole calls,
 *   the first steps taking the remainder), so the running shares never sum past the limit; an agent step finds
 *   nothing left → the run pauses before starting it (a tool step starts: it may call no model). A step stopped by
 *   its share answers a budget error (`budget_stop`): it goes back to pending (no attempt lost) and the run pauses.
 *   A sub-workflow's run has limits of its own.
 * - `max_depth` (default DEFAULT_MAX_DEPTH): nesting of sub-workflows and sub-agent calls. A run at depth d
 *   may write requests at depth d + 1 ≤ max_depth; a request arriving deeper than the workflow's max_depth fails
 *   its run at once.
 */

import { type BudgetUsed, usdToNusd } from '#shared/domain/budget.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { DEFAULT_MAX_STEPS, type WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { Run, StepState } from './run.ts';
import { stepKindOf } from './steps/kinds.ts';
import type { StepKind } from './steps/step-kind.ts';

export type LimitName = 'max_steps' | 'max_llm_calls' | 'max_depth';

/** Starting a step would find a run budget used up: the run pauses (not fails) before starting it. */
export class BudgetReached extends Error {
  constructor(readonly stop: NonNullable<Run['stopped_by']>) {
    super(`budget ${stop.budget} reached`);
  }
}

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
    const left = unreserved(definition, run);
    const out = (['calls', 'tokens', 'cost_nusd'] as const).find(
      (k) => left[k] !== undefined && left[k] <= 0,
    );
    if (out !== undefined) {
      const limit = runLimits(definition, run)[out] as number;
      throw new BudgetReached({
        budget: `limits.${LIMIT_FIELD[out]}`,
        limit,
        used: usedOf(run)[out],
        unit: out === 'calls' ? 'calls' : out === 'tokens' ? 'tokens' : 'usd',
        step: stepKey,
        at: new Date(0).toISOString(),
      });
    }
  }
  run.counters.steps += 1;
}

const LIMIT_FIELD = { calls: 'max_llm_calls', tokens: 'max_tokens', cost_nusd: 'max_cost_usd' } as const;

/** The run's budget limits in counting units: a person's raised limits over the definition's. */
export function runLimits(
  definition: WorkflowDefinition,
  run: Pick<Run, 'raised_limits'>,
): { calls?: number; tokens?: number; cost_nusd?: number } {
  const raised = run.raised_limits;
  const calls = raised?.max_llm_calls ?? definition.limits.max_llm_calls;
  const tokens = raised?.max_tokens ?? definition.limits.max_tokens;
  const usd = raised?.max_cost_usd ?? definition.limits.max_cost_usd;
  return {
    ...(calls !== undefined ? { calls } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(usd !== undefined ? { cost_nusd: usdToNusd(usd) } : {}),
  };
}

export function usedOf(run: Run): BudgetUsed {
  return {
    calls: run.counters.llm_calls,
    tokens: run.counters.tokens ?? 0,
    cost_nusd: run.counters.cost_nusd ?? 0,
  };
}

/** An answer's usage, counted into the run. */
export function countUsage(run: Run, usage: BudgetUsed | undefined): void {
  if (usage === undefined) return;
  run.counters.llm_calls += usage.calls;
  run.counters.tokens = (run.counters.tokens ?? 0) + usage.tokens;
  run.counters.cost_nusd = (run.counters.cost_nusd ?? 0) + usage.cost_nusd;
}

/** What each budget has left once the running agent steps' shares are set aside; absent: no such budget. */
function unreserved(
  definition: WorkflowDefinition,
  run: Run,
): { calls?: number; tokens?: number; cost_nusd?: number } {
  const limits = runLimits(definition, run);
  const used = usedOf(run);
  const left: { calls?: number; tokens?: number; cost_nusd?: number } = {};
  for (const k of ['calls', 'tokens', 'cost_nusd'] as const) {
    const limit = limits[k];
    if (limit === undefined) continue;
    let reserved = 0;
    for (const state of Object.values(run.steps)) {
      if (state.status !== 'running' || state.budget === undefined) continue;
      reserved += state.budget[SHARE_FIELD[k]] ?? 0;
    }
    left[k] = limit - used[k] - reserved;
  }
  return left;
}

const SHARE_FIELD = { calls: 'max_llm_calls', tokens: 'max_tokens', cost_nusd: 'max_cost_nusd' } as const;

/**
 * Gives each running step that may call a model (agent steps, tool steps) and has no share yet (started in this
 * transition) an equal part of what is left (whole calls: the first steps take the remainder), so the shares and
 * the usage never sum past a limit.
 */
export function reserveBudgets(definition: WorkflowDefinition, run: Run): void {
  const limits = runLimits(definition, run);
  if (limits.calls === undefined && limits.tokens === undefined && limits.cost_nusd === undefined) return;
  const fresh = Object.entries(run.steps)
    .filter(([, s]) => {
      const counts = stepKindOf(s.kind).counts;
      return (
        s.status === 'running' &&
        s.budget === undefined &&
        (counts.llmCall === true || counts.mayCallModel === true)
      );
    })
    .map(([key]) => key)
    .sort();
  if (fresh.length === 0) return;
  const left = unreserved(definition, run);
  fresh.forEach((key, i) => {
    const share: NonNullable<StepState['budget']> = {};
    for (const k of ['calls', 'tokens', 'cost_nusd'] as const) {
      const l = left[k];
      if (l === undefined) continue;
      const whole = Math.max(0, l);
      const each = Math.floor(whole / fresh.length);
      share[SHARE_FIELD[k]] = each + (i < whole - each * fresh.length ? 1 : 0);
    }
    const state = run.steps[key] as StepState;
    run.steps[key] = { ...state, budget: share };
  });
}

export function checkDepth(definition: WorkflowDefinition, depth: number, what: string): void {
  if (depth > definition.max_depth) {
    throw new LimitExceededError(
      'max_depth',
      `limit max_depth (${definition.max_depth}) exceeded: ${what} would run at depth ${depth}`,
    );
  }
}
