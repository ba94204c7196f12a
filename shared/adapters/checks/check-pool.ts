/**
 * The check pool: worker threads that run the checks of definitions' data (`tasks.ts`) in full, so a check that
 * takes a second holds one worker, never the event loop every other request of the process waits on.
 *
 * Shared fairly between workspaces: each waits in a queue of its own and the queues are served in turn, one
 * workspace holds at most `perWorkspace` workers at once (all but one when there are several, so another
 * workspace's check always finds one), and at most `queuePerWorkspace` of its checks wait; past that a check is
 * refused with ChecksBusyError (retriable: an SQS message comes back later, the API answers 503 with
 * Retry-After). A check still running at `deadlineMs` (its own budgets end it well before: a native call that
 * never yields is the reason) has its worker terminated and fails naming the limit; the worker is replaced.
 * Workers start when first needed and are unref'd while idle, so an idle pool never keeps a process alive.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { RetriableError } from '#shared/domain/errors.ts';
import { type CheckOutcome, type CheckTask, toWire } from './tasks.ts';

export const CHECK_POOL_LIMITS = Object.freeze({
  /** Checks of one workspace waiting for a worker, at most. */
  queuePerWorkspace: 64,
  /** A check's time in a worker, at most; its budgets (about a second) end it first. */
  deadlineMs: 15_000,
  /** Each worker's V8 heap: the largest context (400 KB) and what JSONata may produce from it (MAX_PRODUCED). */
  workerHeapMb: 256,
});

/** A workspace has as many checks waiting as it may: try again shortly. */
export class ChecksBusyError extends RetriableError {
  override name = 'ChecksBusyError';
}

export interface CheckPoolOptions {
  /** Worker threads, at least 1. */
  readonly workers: number;
  /** Workers one workspace may hold at once; default all but one (at least 1). */
  readonly perWorkspace?: number;
  readonly queuePerWorkspace?: number;
  readonly deadlineMs?: number;
  /** The worker script; default `check-worker.mjs` beside this module (or beside the Lambda bundle). */
  readonly workerUrl?: URL;
}

/** The default number of workers: every core but the one the event loop runs on, at least one, at most four. */
export function defaultCheckWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

interface Job {
  readonly workspace: string;
  readonly task: CheckTask;
  readonly resolve: (outcome: CheckOutcome) => void;
}

interface Slot {
  readonly worker: Worker;
  job: Job | undefined;
  timer: NodeJS.Timeout | undefined;
}

export class CheckPool {
  private readonly size: number;
  private readonly perWorkspace: number;
  private readonly queueCap: number;
  private readonly deadlineMs: number;
  private readonly workerUrl: URL;
  private readonly slots: Slot[] = [];
  /** Waiting jobs per workspace, and the workspaces with waiting jobs in the order they are served. */
  private readonly waiting = new Map<string, Job[]>();
  private readonly turn: string[] = [];
  private readonly running = new Map<string, number>();
  private nextId = 0;
  private closed = false;

  constructor(options: CheckPoolOptions) {
    this.size = Math.max(1, Math.floor(options.workers));
    this.perWorkspace = Math.max(1, Math.min(this.size, options.perWorkspace ?? this.size - 1));
    this.queueCap = options.queuePerWorkspace ?? CHECK_POOL_LIMITS.queuePerWorkspace;
    this.deadlineMs = options.deadlineMs ?? CHECK_POOL_LIMITS.deadlineMs;
    this.workerUrl = options.workerUrl ?? new URL('./check-worker.mjs', import.meta.url);
  }

  /**
   * Runs `task` in full in a worker, when it is `workspace`'s turn. Throws ChecksBusyError past the queue cap. A
   * check whose `signal` aborts while it waits leaves the queue (its caller has gone: an executor's message stopped
   * at its slot or timeout); one already running finishes, its budget being short.
   */
  run(workspace: string, task: CheckTask, signal?: AbortSignal): Promise<CheckOutcome> {
    if (this.closed) throw new Error('the check pool is closed');
    const queue = this.waiting.get(workspace) ?? [];
    if (queue.length >= this.queueCap) {
      throw new ChecksBusyError(
        `workspace ${workspace} has ${queue.length} checks waiting for a worker, the most one workspace may ` +
          `(CHECK_POOL_LIMITS.queuePerWorkspace); try again shortly`,
        { retryAfterSeconds: 1 },
      );
    }
    if (signal?.aborted) return Promise.resolve(abandoned());
    return new Promise<CheckOutcome>((resolve) => {
      const onAbort = () => this.abandon(job);
      const job: Job = {
        workspace,
        task,
        resolve: (outcome) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(outcome);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.push(job);
      if (queue.length === 1) {
        this.waiting.set(workspace, queue);
        this.turn.push(workspace);
      }
      this.dispatch();
    });
  }

  /** Takes a waiting job out of its queue (a running one is left to finish). */
  private abandon(job: Job): void {
    const queue = this.waiting.get(job.workspace);
    const at = queue?.indexOf(job) ?? -1;
    if (queue === undefined || at < 0) return;
    queue.splice(at, 1);
    if (queue.length === 0) {
      this.waiting.delete(job.workspace);
      this.turn.splice(this.turn.indexOf(job.workspace), 1);
    }
    job.resolve(abandoned());
  }

  /** Terminates every worker; checks still waiting or running fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.waiting.values()) {
      for (const job of queue) job.resolve(failure('the check pool was closed'));
    }
    this.waiting.clear();
    this.turn.length = 0;
    const slots = this.slots.splice(0);
    for (const slot of slots) {
      if (slot.timer) clearTimeout(slot.timer);
      slot.job?.resolve(failure('the check pool was closed'));
    }
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  /** Starts waiting jobs on free workers, taking workspaces in turn and skipping those at their share. */
  private dispatch(): void {
    for (;;) {
      let slot = this.slots.find((s) => s.job === undefined);
      if (slot === undefined && this.slots.length < this.size && this.turn.length > 0) slot = this.spawn();
      if (slot === undefined) return;
      const at = this.turn.findIndex((ws) => (this.running.get(ws) ?? 0) < this.perWorkspace);
      if (at < 0) return;
      const workspace = this.turn[at] as string;
      const queue = this.waiting.get(workspace) as Job[];
      const job = queue.shift() as Job;
      // This workspace goes to the back of the line; it leaves it when it has nothing more waiting.
      this.turn.splice(at, 1);
      if (queue.length > 0) this.turn.push(workspace);
      else this.waiting.delete(workspace);
      this.start(slot, job);
    }
  }

  private start(slot: Slot, job: Job): void {
    slot.job = job;
    this.running.set(job.workspace, (this.running.get(job.workspace) ?? 0) + 1);
    slot.worker.ref();
    slot.timer = setTimeout(() => {
      this.retire(
        slot,
        failure(
          `the check ran past ${this.deadlineMs} ms (CHECK_POOL_LIMITS.deadlineMs) and was stopped; its worker was replaced`,
        ),
      );
    }, this.deadlineMs);
    slot.worker.postMessage({ id: this.nextId++, task: toWire(job.task) });
  }

  /** The job of `slot` ended with `outcome`; the worker takes the next one. */
  private finish(slot: Slot, outcome: CheckOutcome): void {
    const job = slot.job;
    if (job === undefined) return;
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.job = undefined;
    slot.worker.unref();
    this.release(job.workspace);
    job.resolve(outcome);
    this.dispatch();
  }

  /** Ends `slot`'s worker (past its deadline, crashed): its job fails with `outcome`, a new worker starts later. */
  private retire(slot: Slot, outcome: CheckOutcome): void {
    const at = this.slots.indexOf(slot);
    if (at >= 0) this.slots.splice(at, 1);
    if (slot.timer) clearTimeout(slot.timer);
    const job = slot.job;
    slot.job = undefined;
    void slot.worker.terminate();
    if (job) {
      this.release(job.workspace);
      job.resolve(outcome);
    }
    if (!this.closed) this.dispatch();
  }

  private release(workspace: string): void {
    const left = (this.running.get(workspace) ?? 1) - 1;
    if (left > 0) this.running.set(workspace, left);
    else this.running.delete(workspace);
  }

  private spawn(): Slot {
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: CHECK_POOL_LIMITS.workerHeapMb },
      // Nothing of the host's environment (table names, credentials) is needed or readable in a check.
      env: {},
    });
    worker.unref();
    const slot: Slot = { worker, job: undefined, timer: undefined };
    worker.on('message', (message: { outcome: CheckOutcome }) => this.finish(slot, message.outcome));
    worker.on('error', (error: Error) => {
      const memory = (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.retire(
        slot,
        failure(
          memory
            ? `the check ran out of memory (CHECK_POOL_LIMITS.workerHeapMb: ${CHECK_POOL_LIMITS.workerHeapMb} MB)`
            : `the check's worker failed: ${error.message}`,
        ),
      );
    });
    worker.on('exit', (code) => {
      if (this.slots.includes(slot))
        this.retire(slot, failure(`the check's worker stopped (exit code ${code})`));
    });
    this.slots.push(slot);
    return slot;
  }
}

/** Retriable: the check was never run, so nothing was decided about the value (an SQS message comes back). */
function abandoned(): CheckOutcome {
  return {
    ok: false,
    error: { type: 'retriable', message: 'the check was abandoned by its caller before a worker took it' },
  };
}

function failure(message: string): CheckOutcome {
  return { ok: false, error: { type: 'non-retriable', message } };
}
