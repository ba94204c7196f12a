/**
 * Budgets on model calls. Request and run budgets are exact: their counters (`BudgetUsed`) live in records the turn
 * and the run write anyway, and a call is made only when its worst case fits what remains (`callRefusal`): the
 * prompt's estimate (at least the previous call's input plus output: a conversation only grows) plus the output
 * cap, which the call is given as its `maxOutputTokens`. A call that would not fit is not made; the answer is an
 * error naming the budget and the figures (`budgetMessage`). The workspace's daily budget reserves each call's worst
 * case before it and settles after (`shared/core/model-calls/daily-budget.ts`); all three are checked on the one
 * path every model call takes (`shared/core/model-calls/governed-llm.ts`).
 *
 * Costs are whole nano-dollars, as `llm_usage` keeps them (`llm-usage.ts`), so a cost budget compares integers.
 */
import { NonRetriableError } from './errors.ts';
import { type ModelPrice, type PriceTable, priceOf } from './llm-usage.ts';
import * as z from './zod.ts';

/** A call is made only with room for at least this many output tokens (fewer would only cut the answer off). */
export const MIN_OUTPUT_TOKENS = 16;

const NUSD_PER_USD = 1e9;

/** What a request (or run) has used: tokens in and out, cost in nano-dollars, model calls. */
export interface BudgetUsed {
  tokens: number;
  cost_nusd: number;
  calls: number;
}

/** A budget's limits in counting units, each with the name a person sets it by (for the error). */
export interface BudgetLimits {
  tokens?: { limit: number; name: string } | undefined;
  cost_nusd?: { limit: number; name: string } | undefined;
  calls?: { limit: number; name: string } | undefined;
}

/** Why a call or a step was not made: the budget by name, its limit and what was used, in its own units. */
export interface BudgetStop {
  budget: string;
  limit: number;
  used: number;
  /** Model calls made under the budget when it stopped. */
  calls: number;
  unit: 'tokens' | 'usd' | 'calls';
  /** The least the next call would have needed (its prompt estimate plus the smallest output), same unit. */
  next?: number | undefined;
}

export const NO_USAGE: BudgetUsed = { tokens: 0, cost_nusd: 0, calls: 0 };

// ---------------------------------------------------------------------------------------------------------------
// Definitions

const positiveUsd = z
  .number({ error: 'expected a number of US dollars' })
  .check(z.gt(0, 'more than 0'), z.maximum(1_000_000, 'at most 1000000'));
const tokenCount = z
  .number({ error: 'expected a whole number of tokens' })
  .check(
    z.int('expected a whole number of tokens'),
    z.minimum(1, 'at least 1'),
    z.maximum(1e9, 'at most 1e9'),
  );

/** An agent's `budget`: per request (one turn, all its tool rounds). */
export const AgentBudgetSchema = z.strictObject(
  {
    max_tokens_per_request: z.optional(tokenCount),
    max_cost_usd_per_request: z.optional(positiveUsd),
  },
  { error: 'expected { max_tokens_per_request?, max_cost_usd_per_request? }' },
);
export type AgentBudget = z.output<typeof AgentBudgetSchema>;

/** A run's budget fields of `limits` (with `max_llm_calls`, which counts model calls). */
export const RUN_BUDGET_FIELDS = {
  max_tokens: z.optional(tokenCount),
  max_cost_usd: z.optional(positiveUsd),
};

/** Raised limits a person's `resume` carries: the same fields and ranges as `limits`. */
export const RaisedLimitsSchema = z.strictObject(
  {
    max_tokens: z.optional(tokenCount),
    max_cost_usd: z.optional(positiveUsd),
    max_llm_calls: z.optional(
      z
        .number({ error: 'expected a whole number' })
        .check(
          z.int('expected a whole number'),
          z.minimum(1, 'at least 1'),
          z.maximum(100_000, 'at most 100000'),
        ),
    ),
  },
  { error: 'expected { max_tokens?, max_cost_usd?, max_llm_calls? }' },
);
export type RaisedLimits = z.output<typeof RaisedLimitsSchema>;

/**
 * What a run hands an agent request (`budget` in its context): the share of the run's remaining budget this
 * request may use. The agent applies it as a request budget under its own, so it can only lower the agent's.
 */
export const RequestBudgetSchema = z.object({
  max_tokens: z.optional(z.int().check(z.minimum(0))),
  max_cost_nusd: z.optional(z.int().check(z.minimum(0))),
  max_llm_calls: z.optional(z.int().check(z.minimum(0))),
  /** Where the figures come from (`run <id>`), for the error. */
  of: z.optional(z.string().check(z.maxLength(300))),
});
export type RequestBudget = z.output<typeof RequestBudgetSchema>;

export function usdToNusd(usd: number): number {
  return Math.round(usd * NUSD_PER_USD);
}

/** The tighter of each limit. */
export function tighter(a: BudgetLimits, b: BudgetLimits): BudgetLimits {
  const pick = <K extends keyof BudgetLimits>(k: K) => {
    const x = a[k];
    const y = b[k];
    if (x === undefined) return y;
    if (y === undefined) return x;
    return y.limit < x.limit ? y : x;
  };
  const out: BudgetLimits = {};
  for (const k of ['tokens', 'cost_nusd', 'calls'] as const) {
    const v = pick(k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** An agent definition's `budget` as limits. */
export function agentLimits(budget: AgentBudget | undefined): BudgetLimits {
  if (budget === undefined) return {};
  return {
    ...(budget.max_tokens_per_request !== undefined
      ? { tokens: { limit: budget.max_tokens_per_request, name: 'max_tokens_per_request' } }
      : {}),
    ...(budget.max_cost_usd_per_request !== undefined
      ? {
          cost_nusd: {
            limit: usdToNusd(budget.max_cost_usd_per_request),
            name: 'max_cost_usd_per_request',
          },
        }
      : {}),
  };
}

/** A request's `budget` (the run's share) as limits, named as the run's limits are. */
export function requestLimits(budget: RequestBudget | undefined): BudgetLimits {
  if (budget === undefined) return {};
  const of = budget.of !== undefined ? ` of ${budget.of}` : '';
  return {
    ...(budget.max_tokens !== undefined
      ? { tokens: { limit: budget.max_tokens, name: `limits.max_tokens${of}` } }
      : {}),
    ...(budget.max_cost_nusd !== undefined
      ? { cost_nusd: { limit: budget.max_cost_nusd, name: `limits.max_cost_usd${of}` } }
      : {}),
    ...(budget.max_llm_calls !== undefined
      ? { calls: { limit: budget.max_llm_calls, name: `limits.max_llm_calls${of}` } }
      : {}),
  };
}

export function hasLimits(limits: BudgetLimits): boolean {
  return limits.tokens !== undefined || limits.cost_nusd !== undefined || limits.calls !== undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Before a call

/**
 * Whether the next call fits: undefined (and the output cap to give it) when it does, else the budget it would
 * cross. The worst case is the input estimate plus the output cap; with a token budget the cap is what remains
 * after the input (at most `outputCap`), and a call with room for fewer than MIN_OUTPUT_TOKENS is not made.
 */
export function callRefusal(
  limits: BudgetLimits,
  used: BudgetUsed,
  inputEstimate: number,
  price: ModelPrice | undefined,
  outputCap: number | undefined,
): { stop: BudgetStop } | { maxOutputTokens: number | undefined } {
  if (limits.calls !== undefined && used.calls + 1 > limits.calls.limit) {
    return { stop: stopOf(limits.calls.name, 'calls', limits.calls.limit, used.calls, used) };
  }
  let cap = outputCap;
  if (limits.tokens !== undefined) {
    const room = limits.tokens.limit - used.tokens - inputEstimate;
    if (room < MIN_OUTPUT_TOKENS) {
      const stop = stopOf(limits.tokens.name, 'tokens', limits.tokens.limit, used.tokens, used);
      return { stop: { ...stop, next: inputEstimate + MIN_OUTPUT_TOKENS } };
    }
    cap = Math.min(room, outputCap ?? room);
  }
  if (limits.cost_nusd !== undefined && price !== undefined) {
    // Nano-dollars per token = USD per million tokens × 1000. The input at its uncached price: an upper bound.
    // One nano-dollar is held back for the call record's rounding (`callRecord`).
    const room = limits.cost_nusd.limit - used.cost_nusd - 1;
    const inputCost = inputEstimate * price.input * 1000;
    const perOutput = price.output * 1000;
    if (inputCost + MIN_OUTPUT_TOKENS * perOutput > room) {
      const stop = stopOf(limits.cost_nusd.name, 'usd', limits.cost_nusd.limit, used.cost_nusd, used);
      return { stop: { ...stop, next: Math.ceil(inputCost + MIN_OUTPUT_TOKENS * perOutput) } };
    }
    if (perOutput > 0) {
      const affordable = Math.floor((room - inputCost) / perOutput);
      cap = Math.min(cap ?? affordable, affordable);
    }
  }
  return { maxOutputTokens: cap };
}

function stopOf(
  budget: string,
  unit: BudgetStop['unit'],
  limit: number,
  spent: number,
  used: BudgetUsed,
): BudgetStop {
  return { budget, unit, limit, used: spent, calls: used.calls };
}

/**
 * The input tokens the next call of a conversation reads, at least: the prompt's own count (or its UTF-8 bytes, an
 * upper bound for any BPE tokenizer) and the previous call's input plus output, which the next prompt contains.
 */
export function inputEstimate(promptTokens: number, previous: { input: number; output: number } | undefined) {
  return Math.max(promptTokens, previous === undefined ? 0 : previous.input + previous.output);
}

/** The price of the model a call goes to, spelled `<provider>/<model id>` as the call is recorded. */
export function priceFor(model: string, table: PriceTable): ModelPrice | undefined {
  return priceOf(model, table);
}

// ---------------------------------------------------------------------------------------------------------------
// After a call, and the error

export function addUsage(used: BudgetUsed, call: { tokens: number; cost_nusd: number; calls?: number }) {
  return {
    tokens: used.tokens + call.tokens,
    cost_nusd: used.cost_nusd + call.cost_nusd,
    calls: used.calls + (call.calls ?? 1),
  };
}

/** A stop in the units a person reads: `$0.000123`, `1,980 tokens`, `3 calls`. */
export function figure(unit: BudgetStop['unit'], value: number): string {
  if (unit === 'usd') return `$${(value / NUSD_PER_USD).toFixed(6)}`;
  return `${value.toLocaleString('en-US')} ${unit === 'tokens' ? 'tokens' : value === 1 ? 'call' : 'calls'}`;
}

/**
 * e.g. `budget max_tokens_per_request (2,000 tokens) reached: 1,980 tokens used over 3 calls; the next call
 * (at least 120 tokens) was not made`.
 */
export function budgetMessage(stop: BudgetStop): string {
  const calls = `${stop.calls.toLocaleString('en-US')} ${stop.calls === 1 ? 'call' : 'calls'}`;
  const used = stop.unit === 'calls' ? calls : `${figure(stop.unit, stop.used)} used over ${calls}`;
  const next = stop.next !== undefined ? ` (at least ${figure(stop.unit, stop.next)})` : '';
  return `budget ${stop.budget} (${figure(stop.unit, stop.limit)}) reached: ${used}; the next call${next} was not made`;
}

/** A call refused by a budget before it was made; its message names the budget and the figures. */
export class BudgetExceededError extends NonRetriableError {
  override readonly name = 'BudgetExceededError';
  constructor(readonly stop: BudgetStop) {
    super(budgetMessage(stop));
  }
}

export const BudgetStopSchema = z.object({
  budget: z.string().check(z.maxLength(300)),
  limit: z.number(),
  used: z.number(),
  calls: z.number(),
  unit: z.enum(['tokens', 'usd', 'calls']),
  next: z.optional(z.number()),
});

export const BudgetUsedSchema = z.object({
  tokens: z.int().check(z.minimum(0)),
  cost_nusd: z.int().check(z.minimum(0)),
  calls: z.int().check(z.minimum(0)),
});
