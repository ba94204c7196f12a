/**
 * Shared rate state per workspace: one cell per (workspace, key) holding a GCRA theoretical arrival time (TAT), so
 * every instance of a function (every Lambda container, every local process) limits against the same state.
 * `shared/core/api/request-rate.ts` holds the algorithm's policy; adapters only make the update atomic.
 * DynamoDB: `shared/adapters/dynamodb/rate-cells.ts`.
 */
export interface RateTake {
  /** The caller's clock, epoch ms. */
  readonly now: number;
  /** The TAT moves by this much when the take is admitted (cost × emission interval), ms. */
  readonly incrementMs: number;
  /** The most the TAT may run ahead of `now` after the take (burst × emission interval), ms. */
  readonly capacityMs: number;
  /** The TAT this instance expects (last seen, plus its takes in flight), to try the likelier of the two updates first. */
  readonly hintTat?: number;
}

export type RateTakeResult =
  /** Admitted: the cell's TAT after the take. */
  | { readonly admitted: true; readonly tat: number }
  /** Refused: the TAT the cell holds (it did not move). */
  | { readonly admitted: false; readonly tat: number };

export interface RateCells {
  /**
   * Atomically: with `tat' = max(tat, now) + incrementMs`, admits and stores `tat'` when `tat' - now <= capacityMs`,
   * else refuses and changes nothing. A missing cell counts as `tat = now`.
   */
  take(workspace: string, key: string, request: RateTake): Promise<RateTakeResult>;
}
