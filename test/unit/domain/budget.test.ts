/**
 * The pure budget check (`shared/domain/budget.ts`): with an input estimate that is at least the call's real input
 * (what the turn's estimate is built to be), the calls a budget lets through never sum past it, whatever the
 * usage; a request budget only tightens; and the figures of a stop are the ones counted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addUsage,
  type BudgetLimits,
  budgetMessage,
  callRefusal,
  NO_USAGE,
  requestLimits,
  tighter,
} from '#shared/domain/budget.ts';

describe('callRefusal', () => {
  it('never lets calls sum past a token, cost or call budget when the input estimate is an upper bound', () => {
    fc.assert(
      fc.property(
        fc.record({
          tokens: fc.integer({ min: 20, max: 5000 }),
          cost: fc.integer({ min: 1000, max: 5_000_000 }),
          calls: fc.integer({ min: 1, max: 20 }),
        }),
        fc.array(
          fc.record({
            input: fc.integer({ min: 0, max: 800 }),
            slack: fc.integer({ min: 0, max: 50 }),
            output: fc.integer({ min: 0, max: 2000 }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.record({ input: fc.integer({ min: 0, max: 20 }), output: fc.integer({ min: 0, max: 60 }) }),
        (limit, calls, price) => {
          const limits: BudgetLimits = {
            tokens: { limit: limit.tokens, name: 't' },
            cost_nusd: { limit: limit.cost, name: 'c' },
            calls: { limit: limit.calls, name: 'n' },
          };
          let used = { ...NO_USAGE };
          for (const call of calls) {
            const decision = callRefusal(limits, used, call.input + call.slack, price, undefined);
            if ('stop' in decision) {
              expect(budgetMessage(decision.stop)).toContain(`budget ${decision.stop.budget} (`);
              break;
            }
            // The model writes at most the cap it was given.
            const output = Math.min(call.output, decision.maxOutputTokens ?? call.output);
            const cost = Math.round(call.input * price.input * 1000 + output * price.output * 1000);
            used = addUsage(used, { tokens: call.input + output, cost_nusd: cost });
          }
          expect(used.tokens).toBeLessThanOrEqual(limit.tokens);
          expect(used.cost_nusd).toBeLessThanOrEqual(limit.cost);
          expect(used.calls).toBeLessThanOrEqual(limit.calls);
        },
      ),
    );
  });

  it('stops with the figures counted, naming the budget', () => {
    const decision = callRefusal(
      { tokens: { limit: 2000, name: 'max_tokens_per_request' } },
      { tokens: 1980, cost_nusd: 0, calls: 3 },
      100,
      undefined,
      undefined,
    );
    expect(decision).toEqual({
      stop: {
        budget: 'max_tokens_per_request',
        unit: 'tokens',
        limit: 2000,
        used: 1980,
        calls: 3,
        next: 116,
      },
    });
    if ('stop' in decision) {
      expect(budgetMessage(decision.stop)).toBe(
        'budget max_tokens_per_request (2,000 tokens) reached: 1,980 tokens used over 3 calls; the next call (at least 116 tokens) was not made',
      );
    }
  });
});

describe('tighter', () => {
  it('keeps the smaller of each limit, so a request’s share never raises an agent’s own budget', () => {
    const own: BudgetLimits = { tokens: { limit: 500, name: 'max_tokens_per_request' } };
    const share = requestLimits({ max_tokens: 10_000, max_llm_calls: 3, of: 'run r' });
    expect(tighter(own, share)).toEqual({
      tokens: { limit: 500, name: 'max_tokens_per_request' },
      calls: { limit: 3, name: 'limits.max_llm_calls of run r' },
    });
    expect(tighter(own, requestLimits({ max_tokens: 100 })).tokens).toEqual({
      limit: 100,
      name: 'limits.max_tokens',
    });
  });
});
