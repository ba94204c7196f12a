/**
 * The one path every model call crumbs makes takes (README.md in this folder). `governedLlm` wraps the model client
 * a function builds once (`functions/wiring/llm-from-env.ts`); every layer that calls a model — context turns,
 * plans and builds, orchestration planning, tool agents' argument extraction, the `llm` tool — is handed that
 * client, so none can call a model around it. Before each call:
 *
 *   1. the invocation's request budget — the limits its kind declares (`modelBudget`: an agent's `budget`
 *      tightened by the run's share its request carries; a tool's `config.budget` and its request's share) —
 *      against what this invocation's calls used (`callRefusal`, worst case, the output capped to what remains);
 *   2. the workspace's daily budget: the call's worst case is reserved (`daily-budget.ts`) and settled after.
 *
 * Each call runs in its GenAI span (`genai-spans.ts`, OpenTelemetry's conventions) when tracing is on.
 *
 * After each call its tokens are priced and noted in the invocation's account, which `metered`
 * (`shared/core/executor/usage-record.ts`) writes as `llm_usage` on one of the invocation's outputs.
 *
 * The account is an AsyncLocalStorage set by `metered` around each invocation: the client is built once per
 * function and handed to several layers, so no call site is asked to pass its budget along — and a call made
 * outside an invocation is refused rather than made unbudgeted.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  addUsage,
  BudgetExceededError,
  type BudgetLimits,
  type BudgetUsed,
  callRefusal,
  hasLimits,
  inputEstimate,
  NO_USAGE,
} from '#shared/domain/budget.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { callRecord, type LlmCallRecord, type PriceTable, priceOf } from '#shared/domain/llm-usage.ts';
import type { LlmClient, LlmRequest } from '#shared/ports/llm.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { ENV } from '#shared/topology.ts';
import { DAILY_OUTPUT_RESERVE_TOKENS, type DailyBudget, type Reservation } from './daily-budget.ts';
import { inModelCallSpan, type TraceContentOptions } from './genai-spans.ts';
import { promptTokenBound, promptTokens } from './prompt-estimate.ts';

/** One executor invocation's model calls: whose they are, the budget they answer to, what they used. */
export interface InvocationAccount {
  readonly workspace: string;
  /** The invocation's request budget (empty: none). */
  readonly limits: BudgetLimits;
  used: BudgetUsed;
  /** The last call's input and output tokens (the next prompt of a conversation holds them) and its model. */
  last?: { input: number; output: number; model: string } | undefined;
  /** Each call as `llm_usage` records it. */
  readonly calls: LlmCallRecord[];
}

const accounts = new AsyncLocalStorage<InvocationAccount>();

/** Runs `fn` as one invocation of `workspace` whose model calls answer to `limits`. */
export function inInvocation<T>(
  workspace: string,
  limits: BudgetLimits,
  fn: (account: InvocationAccount) => Promise<T>,
): Promise<T> {
  const account: InvocationAccount = { workspace, limits, used: { ...NO_USAGE }, calls: [] };
  return accounts.run(account, () => fn(account));
}

/** The workspace of the invocation this call runs in (what a model call may read attachments of). */
export function invocationWorkspace(): string | undefined {
  return accounts.getStore()?.workspace;
}

export interface GovernedLlmDeps {
  /** The operator's price table (`CRUMBS_LLM_PRICES` over the defaults). */
  readonly prices: PriceTable;
  /** The operator's daily budgets; absent: none (nothing read or written). */
  readonly daily?: DailyBudget | undefined;
  /** Counts prompts for the request budgets (their estimate); without it, UTF-8 bytes. */
  readonly tokenizers?: Tokenizers | undefined;
  /** Prompts and completions on the calls' spans (the operator's setting, a guardrail's mask); absent: never. */
  readonly traceContent?: TraceContentOptions | undefined;
}

/**
 * The model client whose every call is checked against the invocation's request budget and the workspace's daily
 * budget before it is made, and recorded after. Wrap it inside the model-alias resolution, so the model it
 * prices is spelled `<provider>/<model id>`.
 */
export function governedLlm(llm: LlmClient, deps: GovernedLlmDeps): LlmClient {
  return {
    async generate(request) {
      const account = accounts.getStore();
      if (account === undefined) {
        throw new NonRetriableError(
          `a call of ${request.model} outside an executor invocation was refused: every model call answers to ` +
            'the budgets of the invocation that makes it (wrap the kind in metered())',
        );
      }
      let maxOutputTokens = await requestBudgetCap(account, request, deps);
      let reservation: Reservation | undefined;
      if (deps.daily !== undefined && deps.daily.limitFor(account.workspace) !== undefined) {
        const price = priceOf(request.model, deps.prices);
        if (price === undefined) {
          throw new NonRetriableError(
            `${request.model} has no price (${ENV.llmPrices}): workspace ${account.workspace} has a daily ` +
              'budget, which cannot count the calls of a model without one',
          );
        }
        reservation = await deps.daily.reserve(
          account.workspace,
          {
            inputNusd: promptTokenBound(request) * price.input * 1000,
            perOutputNusd: price.output * 1000,
            outputCap: maxOutputTokens ?? DAILY_OUTPUT_RESERVE_TOKENS,
          },
          request.signal,
        );
        maxOutputTokens = reservation.maxOutputTokens;
      }
      const capped = { ...request, ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}) };
      let record: LlmCallRecord | undefined;
      // The call's GenAI span (genai-spans.ts): its token counts are the record's, which `llm_usage` holds.
      const response = await inModelCallSpan(capped, deps.traceContent, async () => {
        let answer: Awaited<ReturnType<LlmClient['generate']>>;
        try {
          answer = await llm.generate(capped);
        } catch (error) {
          await reservation?.release();
          throw error;
        }
        record = callRecord(answer.model, answer.usage, deps.prices);
        return { response: answer, record };
      });
      if (record === undefined) throw new Error('the model call returned without its record');
      account.calls.push(record);
      account.used = addUsage(account.used, {
        tokens: record.input_tokens + record.output_tokens,
        cost_nusd: record.cost_nusd ?? 0,
      });
      account.last = { input: record.input_tokens, output: record.output_tokens, model: response.model };
      await reservation?.settle(record.cost_nusd ?? 0);
      return response;
    },
  };
}

/**
 * The output cap the invocation's request budget leaves the call (the request's own when tighter), or a refusal.
 * Reads nothing without a budget.
 */
async function requestBudgetCap(
  account: InvocationAccount,
  request: LlmRequest,
  deps: GovernedLlmDeps,
): Promise<number | undefined> {
  if (!hasLimits(account.limits)) return request.maxOutputTokens;
  const tokens = await promptTokens(request, deps.tokenizers);
  const model = account.last?.model ?? request.model;
  const verdict = callRefusal(
    account.limits,
    account.used,
    inputEstimate(tokens, account.last),
    priceOf(model, deps.prices),
    request.maxOutputTokens,
  );
  if ('stop' in verdict) throw new BudgetExceededError(verdict.stop);
  return verdict.maxOutputTokens ?? request.maxOutputTokens;
}
