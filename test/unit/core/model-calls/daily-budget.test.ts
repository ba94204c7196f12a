/**
 * The daily budget's reserve and settle (`shared/core/model-calls/daily-budget.ts`) on spend counters in memory with
 * the conditional update's semantics, through the governed model client every call takes: concurrent calls never
 * commit past the limit, a call that costs more than its reservation is the only overshoot, calls in flight make a
 * call wait rather than be refused, near the limit a call gets the output it can pay for, and a failed call gives
 * its reservation back.
 */
import { describe, expect, it } from 'vitest';
import { DailyBudgetHeldError, dailyBudget } from '#shared/core/model-calls/daily-budget.ts';
import { governedLlm, inInvocation } from '#shared/core/model-calls/governed-llm.ts';
import { promptTokenBound } from '#shared/core/model-calls/prompt-estimate.ts';
import { BudgetExceededError } from '#shared/domain/budget.ts';
import { isRetriable } from '#shared/domain/errors.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import { ENV } from '#shared/topology.ts';
import { InMemorySpendCounters } from '../../../support/memory/spend-counters.ts';

const WS = 'ws';
const DAY = 'daily#2026-03-01';
const clock = { now: () => new Date('2026-03-01T12:00:00Z') };
/** $1 per million input tokens, $5 per million output tokens: 1,000 and 5,000 nano-dollars a token. */
const PRICES = { 'test/*': { input: 1, output: 5 } };
const REQUEST: LlmRequest = {
  model: 'test/m',
  system: 'Answer.',
  messages: [{ role: 'user', content: 'hi' }],
};
const INPUT_BOUND = promptTokenBound(REQUEST);
/** A call's worst case at these prices: its prompt bound and 4,096 output tokens, in nano-dollars. */
const PER_CALL = INPUT_BOUND * 1000 + 4096 * 5000;
/** A limit with room for one such call and less than the smallest call beside it. */
const ONE_CALL_USD = (PER_CALL + 50_000) / 1e9;

/**
 * A model billed as the worst case the reservation covers (its whole output cap) plus `extraInput` tokens the
 * estimate did not see; it answers once `release` lets it (all calls then overlap).
 */
function model(extraInput = 0) {
  const requests: LlmRequest[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const client: LlmClient = {
    async generate(request) {
      requests.push(request);
      await gate;
      return {
        text: 'ok',
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: INPUT_BOUND + extraInput, outputTokens: request.maxOutputTokens ?? 0 },
        model: request.model,
      };
    },
  };
  return { client, requests, release: () => open() };
}

function setup(usd: number, options: { holdWaitMs?: number } = {}) {
  const counters = new InMemorySpendCounters();
  const daily = dailyBudget(
    { default: usd },
    {
      counters,
      clock,
      holdWaitMs: options.holdWaitMs ?? 0,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms / 100)),
    },
  );
  return { counters, daily };
}

const call = (llm: LlmClient, request: LlmRequest = REQUEST) =>
  inInvocation(WS, {}, () => llm.generate(request));

/** Each call's outcome, observed at once (a refusal comes before the calls in flight are let through). */
const settled = (promise: Promise<unknown>) =>
  promise.then(
    () => ({ status: 'fulfilled' as const }),
    (reason: unknown) => ({ status: 'rejected' as const, reason }),
  );

describe('the daily budget, reserved before each call and settled after', () => {
  it('keeps 60 concurrent worst-case calls within the limit: refused for good once the day is spent', async () => {
    // Each call reserves its prompt bound plus 4,096 output tokens: about $0.0205, so $0.50 holds 24 of them.
    const { counters, daily } = setup(0.5);
    const m = model();
    const llm = governedLlm(m.client, { prices: PRICES, daily });
    const calls = Array.from({ length: 60 }, () => settled(call(llm)));
    await new Promise((r) => setTimeout(r, 10));
    m.release();
    const outcomes = await Promise.all(calls);
    const made = outcomes.filter((o) => o.status === 'fulfilled').length;
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as Error] : []));
    // 24 whole worst cases, and one more call with the output the rest pays for.
    const whole = Math.floor(500_000_000 / PER_CALL);
    expect(made).toBe(whole + 1);
    // The model saw only the calls that were reserved, each capped at what it reserved.
    expect(m.requests).toHaveLength(made);
    expect(m.requests.filter((r) => r.maxOutputTokens === 4096)).toHaveLength(whole);
    // What was billed (the fake's usage at the price) is the day's spend, and within the limit.
    const day = counters.counter(WS, DAY);
    expect(day.spent).toBeLessThanOrEqual(500_000_000);
    expect(day.committed).toBe(day.spent);
    expect(day.calls).toBe(made);
    // The calls refused while others were in flight waited (no wait here: holdWaitMs 0) and were handed back to
    // the queue; once the day is spent, a call is refused for good, naming the budget.
    for (const error of refused)
      expect(error instanceof DailyBudgetHeldError || error instanceof BudgetExceededError).toBe(true);
    const late = await call(llm).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(BudgetExceededError);
    expect(isRetriable(late)).toBe(false);
    expect((late as Error).message).toMatch(
      new RegExp(
        `^budget ${ENV.dailyBudgets} \\(workspace ws, today UTC\\) \\(\\$0\\.500000\\) reached: \\$0\\.\\d{6} used over ${made} calls; the next call \\(at least \\$0\\.\\d{6}\\) was not made$`,
      ),
    );
  });

  it('overshoots only by what calls cost beyond their reservation, over the calls in flight', async () => {
    // The provider bills 1,000 input tokens more than the bound on every call ($0.000001 each).
    const { counters, daily } = setup(0.5);
    const m = model(1000);
    const llm = governedLlm(m.client, { prices: PRICES, daily });
    const calls = Array.from({ length: 60 }, () => call(llm).catch(() => undefined));
    await new Promise((r) => setTimeout(r, 10));
    m.release();
    await Promise.all(calls);
    const made = m.requests.length;
    const day = counters.counter(WS, DAY);
    expect(day.spent).toBeGreaterThan(500_000_000);
    expect(day.spent - 500_000_000).toBeLessThanOrEqual(made * 1000 * 1000);
  });

  it('lets a call wait for calls in flight to settle, then makes it', async () => {
    const { daily } = setup(ONE_CALL_USD, { holdWaitMs: 60_000 });
    const m = model();
    const llm = governedLlm(
      {
        // The first call settles for far less than its reservation: what it held is free again.
        generate: async (request) => ({
          ...(await m.client.generate(request)),
          usage: { inputTokens: 1, outputTokens: 1 },
        }),
      },
      { prices: PRICES, daily },
    );
    const first = call(llm);
    const second = call(llm);
    await new Promise((r) => setTimeout(r, 10));
    // Only the first was made: the second waits, its room held by the first.
    expect(m.requests).toHaveLength(1);
    m.release();
    await expect(Promise.all([first, second])).resolves.toHaveLength(2);
  });

  it('hands a call held too long back to the queue, retriably', async () => {
    const { daily } = setup(ONE_CALL_USD, { holdWaitMs: 0 });
    const m = model();
    const llm = governedLlm(m.client, { prices: PRICES, daily });
    const first = call(llm);
    await new Promise((r) => setTimeout(r, 10));
    const held = await call(llm).catch((e: unknown) => e);
    expect(held).toBeInstanceOf(DailyBudgetHeldError);
    expect(isRetriable(held)).toBe(true);
    expect((held as Error).message).toContain('held by model calls in flight');
    m.release();
    await first;
  });

  it('gives a call near the limit the output it can pay for, and refuses one that cannot pay for 16 tokens', async () => {
    // Room for the prompt and 1,000 output tokens, not 4,096.
    const { daily } = setup((INPUT_BOUND * 1000 + 1000 * 5000) / 1e9);
    const m = model();
    m.release();
    const llm = governedLlm(m.client, { prices: PRICES, daily });
    await call(llm);
    expect(m.requests[0]?.maxOutputTokens).toBe(1000);
    await expect(call(llm)).rejects.toBeInstanceOf(BudgetExceededError);
    expect(m.requests).toHaveLength(1);
  });

  it('gives the reservation of a failed call back', async () => {
    const { counters, daily } = setup(0.5);
    const failing = governedLlm(
      {
        generate: async () => {
          throw new Error('provider down');
        },
      },
      { prices: PRICES, daily },
    );
    await expect(call(failing)).rejects.toThrow('provider down');
    expect(counters.counter(WS, DAY)).toEqual({ committed: 0, spent: 0, calls: 0 });
  });

  it('counts each workspace and each UTC day apart, and reads and writes nothing without a limit', async () => {
    const counters = new InMemorySpendCounters();
    const daily = dailyBudget({ workspaces: { ws: 1 } }, { counters, clock });
    const m = model();
    m.release();
    const llm = governedLlm(m.client, { prices: PRICES, daily });
    await call(llm);
    await inInvocation('other', {}, () => llm.generate(REQUEST));
    expect(counters.writes).toBe(2);
    expect([...counters.items.keys()]).toEqual([`${WS}/${DAY}`]);
    expect(dailyBudget({}, { counters, clock })).toBeUndefined();
  });

  it('refuses a model without a price when the workspace has a daily budget', async () => {
    const { daily } = setup(1);
    const m = model();
    m.release();
    const llm = governedLlm(m.client, { prices: PRICES, daily });
    await expect(call(llm, { ...REQUEST, model: 'other/unpriced' })).rejects.toThrow(
      /other\/unpriced has no price \(CRUMBS_LLM_PRICES\): workspace ws has a daily budget/,
    );
    expect(m.requests).toHaveLength(0);
  });
});
