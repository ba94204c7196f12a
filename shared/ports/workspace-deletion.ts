/**
 * What deleting a workspace needs from the table beyond the breadcrumb store: the deletion's record (its progress,
 * so an interrupted deletion resumes where it stopped; its seal, which refuses every write to the workspace; and,
 * once done, its tombstone, which goes on refusing them for WORKSPACE_TOMBSTONE_SECONDS) and a bounded sweep of
 * every item the workspace holds.
 */

/**
 * How long a deleted workspace refuses writes after its deletion is done: two days, twice the longest window in
 * which something already under way can still arrive with a write for it — EventBridge Scheduler retries a firing
 * for up to 24 h, and a DynamoDB stream holds a record 24 h (SQS redrives and EventBridge's own retries end within
 * an hour). The deletion cancels the workspace's timers; this covers what was already on its way.
 */
export const WORKSPACE_TOMBSTONE_SECONDS = 2 * 24 * 60 * 60;

/**
 * How long after a seal a write may still land: writers learn of it through a cache this old at most
 * (`workspace-seal.ts`). The deletion's last pass starts after it.
 */
export const SEAL_WINDOW_MS = 5_000;

/** A deletion in progress, kept in the workspace until the deletion is done. */
export interface DeletionJob {
  phase: 'check' | 'definitions' | 'rules' | 'seal' | 'timers' | 'secrets' | 'sweep';
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
  /** Timers and schedules of the workspace cancelled so far. */
  timers_cancelled?: number;
  /**
   * When the workspace was sealed: from then on every write to it is refused (the record carrying this is what
   * writers check). Set by the `seal` phase, after the rule manager has removed the definitions' rules.
   */
  sealed_at?: string;
  /**
   * Which pass this is: 1, or 2 — the timers and the sweep once more, for what was written (or set) before every
   * writer had learnt of the seal.
   */
  pass?: number;
  /** When the first pass ended (the second starts once the seal and the stream have settled). */
  swept_at?: string;
  /** When the deletion was done; the record is then the workspace's tombstone until its `expires_at`. */
  done_at?: string;
}

export interface WorkspaceSweeper {
  readJob(workspace: string): Promise<DeletionJob | undefined>;
  /** Writes the job if its stored step is still `expectedStep` (undefined: no job yet); false when another call won. */
  writeJob(workspace: string, job: DeletionJob, expectedStep: number | undefined): Promise<boolean>;
  /** Writes the done job, which keeps the workspace sealed until `until` (its tombstone), if still at `expectedStep`. */
  finishJob(workspace: string, job: DeletionJob, expectedStep: number, until: Date): Promise<boolean>;
  /** Removes the record (a deletion refused before it sealed or deleted anything). */
  deleteJob(workspace: string): Promise<void>;
  /**
   * Deletes one page of the workspace's items (every kind), from `cursor`; says how many it deleted and where to go
   * on (undefined: every item has been read).
   */
  sweep(workspace: string, cursor: string | undefined): Promise<SweepPage>;
}

export interface SweepPage {
  deleted: number;
  /** The sweep reads the whole table (its workspace index is not complete yet), not only the workspace's items. */
  scanned?: boolean;
  cursor?: string;
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

/** Whether a workspace's deletion has sealed it: no write reaches it any more (`workspace-seal.ts`). */
export interface SealedWorkspaces {
  isSealed(workspace: string): Promise<boolean>;
}
