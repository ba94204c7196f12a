/**
 * The workspace's daily budget (operator-set, `ENV.dailyBudgets`, USD per UTC day), held by reserve and settle on
 * one counter item per workspace and day (`SpendCounters`, `#budget#daily#<YYYY-MM-DD>`):
 *
 *   reserve   before the call, its worst case — the prompt's token bound (`promptTokenBound`) at the input price
 *             plus its output cap at the output price — is added to the day's `committed` by one conditional
 *             update that holds only while `committed` stays within the limit. The call is given that output cap,
 *             so it cannot cost more than was reserved. Near the limit the cap shrinks to what is left (at least
 *             `MIN_OUTPUT_TOKENS`); without a cap of its own a call reserves `DAILY_OUTPUT_RESERVE_TOKENS`.
 *   settle    after the call, `committed` moves by the call's real cost less its reservation (usually down),
 *             `spent` by its cost, `calls` by one.
 *   release   a call that failed gives its reservation back.
 *
 * A call that finds no room is refused for good once what settled calls spent leaves no room for the smallest
 * call (`BudgetExceededError`, naming the budget and the figures). If the room is only held by calls in flight,
 * it waits for them to settle (up to `HOLD_WAIT_MS`), then fails retriably (`DailyBudgetHeldError`): the queue
 * brings its trigger back later, when the calls in flight have settled one way or the other.
 *
 * The bound: `committed` never passes the limit by a reservation, and a settlement raises it only by what a call
 * cost beyond its reservation, which takes a provider billing more input tokens than `promptTokenBound` or more
 * output tokens than the cap it was given. So a day's spend is at most the limit plus that excess over the calls
 * in flight when the limit is reached; with the bound holding, at most the limit —
 * `test/adversarial/budgets.test.ts` sends 60 concurrent requests at a $0.50 budget and the spend stays within it.
 * A call whose function dies between reserve and settle keeps its reservation for the day: counted as spent.
 *
 * Cost: for a workspace with a daily budget, two writes per model call (reserve, settle); a refusal one read more.
 * A workspace without one reads and writes nothing.
 */
import { BudgetExceededError, type BudgetStop, MIN_OUTPUT_TOKENS, usdToNusd } from '#shared/domain/budget.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { SpendCounter, SpendCounters } from '#shared/ports/budget-counters.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import { ENV } from '#shared/topology.ts';

/** The output a call without a cap of its own reserves, and is then capped at. */
export const DAILY_OUTPUT_RESERVE_TOKENS = 4096;
/** How long a call waits for calls in flight to settle before its trigger is handed back to the queue. */
export const HOLD_WAIT_MS = 5_000;
/** Shrinking the output cap to what is left: at most this many conditional writes before a wait. */
const SHRINK_ATTEMPTS = 3;
/** The counter outlives its day by two: a settlement after midnight still finds it. */
const COUNTER_TTL_AFTER_DAY_SECONDS = 2 * 24 * 60 * 60;

/** The operator's limits in USD per day: a default for every workspace and overrides per workspace. */
export interface DailyBudgetSettings {
  readonly default?: number | undefined;
  readonly workspaces?: Readonly<Record<string, number>> | undefined;
}

/** What one call may cost, in nano-dollars: its prompt (an upper bound) and each output token. */
export interface CallCost {
  readonly inputNusd: number;
  readonly perOutputNusd: number;
  /** The output cap the call would have; the reservation may lower it. */
  readonly outputCap: number;
}

export interface Reservation {
  /** The output cap the call must be given: what the reservation covers. */
  readonly maxOutputTokens: number;
  /** The nano-dollars reserved. */
  readonly amount: number;
  /** The call cost this much (nano-dollars): the day's counter moves by the difference. */
  settle(costNusd: number): Promise<void>;
  /** The call failed: its reservation is given back. */
  release(): Promise<void>;
}

export interface DailyBudget {
  /** The workspace's limit in nano-dollars; undefined when it has none. */
  limitFor(workspace: string): number | undefined;
  /**
   * Reserves the call's worst case from today's budget of `workspace` (which must have a limit). Throws
   * `BudgetExceededError` when the day is spent, `DailyBudgetHeldError` when calls in flight hold what is left.
   */
  reserve(workspace: string, cost: CallCost, signal?: AbortSignal): Promise<Reservation>;
}

/** What is left of the day is held by calls in flight: retried once they have settled. */
export class DailyBudgetHeldError extends RetriableError {
  override readonly name = 'DailyBudgetHeldError';
}

export interface DailyBudgetDeps {
  readonly counters: SpendCounters;
  readonly clock: Clock;
  readonly log?: Log | undefined;
  /** @default HOLD_WAIT_MS */
  readonly holdWaitMs?: number;
  /** Pauses between looks at the counter while calls in flight hold the budget. @default a timer */
  readonly sleep?: (ms: number) => Promise<void>;
}

export function dailyBudget(settings: DailyBudgetSettings, deps: DailyBudgetDeps): DailyBudget | undefined {
  const overrides = settings.workspaces ?? {};
  if (settings.default === undefined && Object.keys(overrides).length === 0) return undefined;
  const log = deps.log ?? silentLog;
  const holdWaitMs = deps.holdWaitMs ?? HOLD_WAIT_MS;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  const limitFor = (workspace: string): number | undefined => {
    const usd = Object.hasOwn(overrides, workspace) ? overrides[workspace] : settings.default;
    return usd === undefined ? undefined : usdToNusd(usd);
  };

  async function reserve(workspace: string, cost: CallCost, signal?: AbortSignal): Promise<Reservation> {
    const limit = limitFor(workspace);
    if (limit === undefined) throw new Error(`workspace ${workspace} has no daily budget to reserve from`);
    const now = deps.clock.now();
    const day = now.toISOString().slice(0, 10);
    const key = `daily#${day}`;
    const expiresAt =
      Math.floor(Date.parse(`${day}T00:00:00.000Z`) / 1000) + 86_400 + COUNTER_TTL_AFTER_DAY_SECONDS;
    const need = (cap: number) => Math.ceil(cost.inputNusd + cap * cost.perOutputNusd);
    const least = need(MIN_OUTPUT_TOKENS);
    const stopOf = (counter: SpendCounter): BudgetStop => ({
      budget: `${ENV.dailyBudgets} (workspace ${workspace}, today UTC)`,
      unit: 'usd',
      limit,
      used: counter.spent,
      calls: counter.calls,
      next: least,
    });
    const deadline = now.getTime() + holdWaitMs;
    let cap = cost.outputCap;
    let shrinks = 0;
    for (;;) {
      const amount = need(cap);
      let counter: SpendCounter;
      if (amount <= limit) {
        const outcome = await deps.counters.reserve(workspace, key, amount, limit - amount, expiresAt);
        if (outcome.reserved) return reservationOf(workspace, key, expiresAt, amount, cap);
        counter = outcome.counter;
      } else {
        // More than the whole day's limit: never reserved as such; the cap shrinks to what is left, if anything.
        counter = await deps.counters.readSpend(workspace, key);
      }
      // What is left takes a smaller answer: the call is made with the output it can pay for.
      const room = limit - counter.committed;
      const affordable =
        cost.perOutputNusd > 0 ? Math.floor((room - cost.inputNusd) / cost.perOutputNusd) : cap;
      if (affordable >= MIN_OUTPUT_TOKENS && affordable < cap && shrinks < SHRINK_ATTEMPTS) {
        cap = affordable;
        shrinks++;
        continue;
      }
      // What settled calls spent leaves no room for the smallest call: the day is over for this workspace.
      if (counter.spent + least > limit) throw new BudgetExceededError(stopOf(counter));
      // Calls in flight hold what is left: wait for them to settle, then hand the trigger back to the queue.
      if (deps.clock.now().getTime() >= deadline || signal?.aborted === true) {
        throw new DailyBudgetHeldError(
          `the daily budget of workspace ${workspace} (${ENV.dailyBudgets}) is held by model calls in flight ` +
            `($${(counter.committed / 1e9).toFixed(6)} committed of $${(limit / 1e9).toFixed(6)}, ` +
            `$${(counter.spent / 1e9).toFixed(6)} spent); the call waits for them to settle`,
          { retryAfterSeconds: 2 },
        );
      }
      cap = cost.outputCap;
      shrinks = 0;
      await sleep(200 + Math.floor(Math.random() * 400));
    }
  }

  function reservationOf(
    workspace: string,
    key: string,
    expiresAt: number,
    amount: number,
    cap: number,
  ): Reservation {
    let done = false;
    const move = async (change: SpendCounter, what: string) => {
      if (done) return;
      done = true;
      try {
        await deps.counters.settle(workspace, key, change, expiresAt);
      } catch (error) {
        // The call is made (and paid): failing the invocation would only make it again. The reservation stays,
        // counted as spent, which errs on the side of the limit.
        log.warn(`could not ${what} a model call against the daily budget; its reservation stays`, {
          workspace,
          amount,
          error: (error as Error).message,
        });
      }
    };
    return {
      maxOutputTokens: cap,
      amount,
      settle: (costNusd) => move({ committed: costNusd - amount, spent: costNusd, calls: 1 }, 'settle'),
      release: () => move({ committed: -amount, spent: 0, calls: 0 }, 'release'),
    };
  }

  return { limitFor, reserve };
}
