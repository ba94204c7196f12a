/**
 * The wait index: which runs wait for a write, by (workspace, workflow, step id, correlation value). A wait_for
 * step's attempt adds its entry once the run that waits is written; a write its workflow's rule routes looks its
 * key up with a strongly consistent read, so a write routed after an entry exists finds it (README "wait_for").
 * Entries go when the attempt stops waiting; one found stale (its attempt no longer waits) is removed by who finds it.
 *
 * Bounded per key (`MAX_WAITERS_PER_KEY`): a key holds at most that many waiting attempts; `add` refuses more.
 */

/** Runs waiting on one (workflow, step, correlation value) at once: one item (DynamoDB), well under 400 KB. */
export const MAX_WAITERS_PER_KEY = 200;

export interface WaitKey {
  readonly workspace: string;
  readonly workflow: string;
  /** The step's id in the definition. */
  readonly step: string;
  /** The correlation value; absent when the step correlates nothing (every write matching its selector). */
  readonly correlation?: string | number | boolean | undefined;
}

export interface Waiter {
  readonly attempt_id: string;
  readonly run_id: string;
  /** The step's instance key in the run. */
  readonly step: string;
  /** When the wait began and when it ends (ISO). */
  readonly since: string;
  readonly until: string;
}

export class WaitIndexFullError extends Error {
  override readonly name = 'WaitIndexFullError';
}

export interface WaitIndex {
  /** Adds the attempt's entry (adding it again is a no-op); throws WaitIndexFullError past MAX_WAITERS_PER_KEY. */
  add(key: WaitKey, waiter: Waiter): Promise<void>;
  /** Removes the attempt's entry; a missing one is fine. */
  remove(key: WaitKey, attemptId: string): Promise<void>;
  /** The attempts waiting on the key, oldest wait first, read strongly consistently. */
  waiting(key: WaitKey): Promise<Waiter[]>;
}

/** The key's correlation value as text: a string and a number that print alike are different keys. */
export function correlationText(value: WaitKey['correlation']): string {
  return value === undefined ? '*' : JSON.stringify(value);
}

export function byOldestWait(a: Waiter, b: Waiter): number {
  return a.since < b.since ? -1 : a.since > b.since ? 1 : a.attempt_id < b.attempt_id ? -1 : 1;
}
