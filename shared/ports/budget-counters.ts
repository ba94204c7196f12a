/** Shared counters with an expiry, per workspace: the breadth budget's storage (`shared/core/stream/breadth-budget.ts`). */
/** DynamoDB: `shared/adapters/dynamodb/budget-counters.ts`. */
export interface BudgetCounters {
  /** Adds `n` to the counter `key` of `workspace` and returns the new total; the item expires at `expiresAt` (s). */
  add(workspace: string, key: string, n: number, expiresAt: number): Promise<number>;
}
