/**
 * Usage totals: model calls, tokens and cost per workspace, summed per hour by what they served (the workspace
 * itself, an agent, a run, a thread). The stream consumer adds each batch's records
 * (`shared/core/stream/usage-totals.ts`); the API reads them (`GET …/usage`). A request has no counter: its calls
 * are summed from the records on what it wrote when asked (`usage-routes.ts`).
 */
import type { LlmUsageRecord } from '#shared/domain/llm-usage.ts';

export const USAGE_DIMENSIONS = ['day', 'agent', 'run', 'thread'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

export interface UsageAmounts {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  /** Whole nano-dollars of the priced calls. */
  cost_nusd: number;
  /** Calls of models without a price (their tokens are counted, their cost is not). */
  unpriced_calls: number;
}

/** One breadcrumb write's usage for one counter; `id` names the write (`<breadcrumb id>@<version>`). */
export interface UsageContribution {
  id: string;
  amounts: UsageAmounts;
}

/** A counter: a dimension's key (the agent id, run id, …; the workspace itself for `day`) in one UTC hour. */
export interface UsageCounter {
  dimension: UsageDimension;
  key: string;
  /** `YYYY-MM-DDTHH` (UTC). */
  hour: string;
}

export interface UsageRow extends UsageAmounts {
  dimension: UsageDimension;
  key: string;
  hour: string;
}

export interface UsageTotals {
  /**
   * Adds the contributions to the counter, each exactly once: a contribution already added (the same `id`, handed
   * over again by a redelivered stream batch) is not added again.
   */
  add(workspace: string, counter: UsageCounter, contributions: readonly UsageContribution[]): Promise<void>;
  /** The counters of one dimension whose hour is in [fromHour, toHour], at most `limit` of them. */
  read(
    workspace: string,
    dimension: UsageDimension,
    range: { fromHour: string; toHour: string },
    limit: number,
  ): Promise<{ rows: UsageRow[]; truncated: boolean }>;
}

export function zeroAmounts(): UsageAmounts {
  return { calls: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, cost_nusd: 0, unpriced_calls: 0 };
}

/** What one breadcrumb's record of model calls adds up to. */
export function amountsOf(usage: LlmUsageRecord): UsageAmounts {
  const amounts = zeroAmounts();
  for (const call of usage.calls) {
    const n = call.calls ?? 1;
    amounts.calls += n;
    amounts.input_tokens += call.input_tokens;
    amounts.output_tokens += call.output_tokens;
    amounts.cached_tokens += call.cached_tokens;
    if (call.cost_nusd === undefined) amounts.unpriced_calls += n;
    else amounts.cost_nusd += call.cost_nusd;
  }
  return amounts;
}

export function addAmounts(into: UsageAmounts, more: UsageAmounts): UsageAmounts {
  into.calls += more.calls;
  into.input_tokens += more.input_tokens;
  into.output_tokens += more.output_tokens;
  into.cached_tokens += more.cached_tokens;
  into.cost_nusd += more.cost_nusd;
  into.unpriced_calls += more.unpriced_calls;
  return into;
}
