/**
 * What deleting a workspace needs from the table beyond the breadcrumb store: the deletion job's progress item
 * (so an interrupted deletion resumes where it stopped) and a bounded sweep of every item the workspace holds.
 */

/** A deletion in progress, kept in the workspace until the deletion is done. */
export interface DeletionJob {
  phase: 'check' | 'definitions' | 'rules' | 'secrets' | 'sweep';
  /** Position inside the phase (a listing cursor or a sweep position); absent at the phase's start. */
  cursor?: string;
  /** Calls that advanced the job; every write is conditional on the number it read. */
  step: number;
  started_at: string;
  started_by: string;
  /** When the current phase began (the rules phase waits for the rule manager, up to a bound). */
  phase_started_at: string;
  force: boolean;
  /** Items deleted so far (definitions through the store, then the sweep's raw deletes). */
  deleted: number;
  /**
   * Heads the current sweep deleted: each is a `Breadcrumb Deleted` event the publisher routes and counts against
   * the workspace's breadth budget, which may write counters or a loop stop into the workspace behind the sweep.
   */
  heads?: number;
  /** Which pass over the table this is (1, or 2 to remove what the first pass's events wrote back). */
  pass?: number;
  /** When the first pass reached the table's end (the second starts once the stream has settled). */
  swept_at?: string;
}

export interface WorkspaceSweeper {
  readJob(workspace: string): Promise<DeletionJob | undefined>;
  /** Writes the job if its stored step is still `expectedStep` (undefined: no job yet); false when another call won. */
  writeJob(workspace: string, job: DeletionJob, expectedStep: number | undefined): Promise<boolean>;
  deleteJob(workspace: string): Promise<void>;
  /**
   * Deletes one page of the workspace's items (every kind but the job), from `cursor`; says how many it deleted,
   * how many of them were heads, and where to go on (undefined: the table has been read to its end).
   */
  sweep(
    workspace: string,
    cursor: string | undefined,
  ): Promise<{ deleted: number; heads: number; cursor?: string }>;
}

/**
 * Removes a workspace's credentials (what its definitions' `secret_ref`s name) a bounded batch at a time, from
 * `cursor`; says which it removed, where to go on (undefined: none left) and what it could not remove itself.
 */
export interface SecretEraser {
  erase(
    workspace: string,
    cursor: string | undefined,
  ): Promise<{ erased: string[]; cursor?: string; notes: string[] }>;
}
