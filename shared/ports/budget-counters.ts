/**
 * Shared counters with an expiry, per workspace: the breadth budget's (`shared/core/stream/breadth-budget.ts`), which
 * executors also read to drop a trigger of a spent thread (`shared/core/executor/pipeline.ts`), and the day's model
 * spend the daily budget reserves from and settles into (`shared/core/model-calls/daily-budget.ts`).
 * DynamoDB: `shared/adapters/dynamodb/budget-counters.ts`.
 */
export interface BudgetCounters {
  /** Adds `n` to the counter `key` of `workspace` and returns the new total; the item expires at `expiresAt` (s). */
  add(workspace: string, key: string, n: number, expiresAt: number): Promise<number>;
  /** The counter's total as last written (0 when there is none); one eventually consistent read. */
  read(workspace: string, key: string): Promise<number>;
}

/**
 * A day's model spend of one workspace, in nano-dollars. `committed` is what was spent plus what calls in flight
 * have reserved (the figure the budget is held to); `spent` only what settled calls cost; `calls` how many settled.
 */
export interface SpendCounter {
  committed: number;
  spent: number;
  calls: number;
}

export interface SpendCounters {
  /**
   * Adds `amount` to `committed` if, and only if, `committed` stays at most `max` — one conditional update, so
   * concurrent reservations never pass `max` together. Returns the counter after the update, or as it stood when
   * the condition refused it.
   */
  reserve(
    workspace: string,
    key: string,
    amount: number,
    max: number,
    expiresAt: number,
  ): Promise<{ reserved: boolean; counter: SpendCounter }>;
  /** Adds each field (a settlement: `committed` by the call's cost less its reservation, which may be negative). */
  settle(workspace: string, key: string, change: SpendCounter, expiresAt: number): Promise<void>;
  /** The counter as stored (strongly consistent); zeros when there is none. */
  readSpend(workspace: string, key: string): Promise<SpendCounter>;
}
