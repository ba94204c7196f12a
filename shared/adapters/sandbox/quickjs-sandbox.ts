/**
 * The Sandbox port: QuickJS compiled to WebAssembly, run in a worker thread (design: README.md beside this file).
 *
 * The rule: a run reaches nothing but the JavaScript language and the `ctx` bridge the caller gives, and it ends
 * by its deadline whatever it is doing. Each run gets a fresh QuickJS runtime and context; QuickJS's memory limit
 * and interrupt handler bound what it can hold and how long it runs, and the host terminates the worker shortly
 * after the deadline for what the interrupt cannot stop (a long builtin call). A worker that ran out its deadline,
 * crashed or aborted is never reused. The deadline starts when the worker says `started`, so a cold start is not
 * taken from the function's time.
 */
import { Worker } from 'node:worker_threads';
import type { Sandbox, SandboxBridge, SandboxLimits, SandboxResult } from '#shared/ports/sandbox.ts';

/** Time after the deadline before the worker is terminated, so QuickJS's own interrupt usually ends the run. */
const KILL_GRACE_MS = 250;
/** The worker's own V8 heap (messages, the QuickJS glue): QuickJS's memory is WebAssembly memory, limited above. */
const WORKER_HEAP_MB = 64;
/** How long a worker may take to start and load the WebAssembly module before the run fails. */
const STARTUP_MS = 15_000;

export const QUICKJS_WORKER_FILE = 'quickjs-worker.mjs';

type WorkerMessage =
  | { type: 'started' }
  | { type: 'call'; id: number; name: string; arg: unknown }
  | { type: 'done'; result: SandboxResult; recycle?: boolean; faults?: string[] }
  | { type: 'output'; text: string };

export interface QuickJsSandboxOptions {
  /** Where the worker script is; default: `quickjs-worker.mjs` next to this module (or the bundle). */
  readonly workerUrl?: URL;
  /**
   * Where a worker's own stdout/stderr and the faults QuickJS reports (an aborted instance) go; default: the
   * process's stderr. Function code cannot write there (its console is captured into the run's logs).
   */
  readonly onWorkerOutput?: (text: string) => void;
}

export class QuickJsSandbox implements Sandbox {
  private idle: Worker | undefined;
  private readonly workerUrl: URL;
  private readonly output: (text: string) => void;
  private forgetIdle: (() => void) | undefined;

  constructor(options: QuickJsSandboxOptions = {}) {
    this.workerUrl = options.workerUrl ?? new URL(`./${QUICKJS_WORKER_FILE}`, import.meta.url);
    this.output = options.onWorkerOutput ?? ((text) => void process.stderr.write(text));
  }

  run(code: string, input: unknown, bridge: SandboxBridge, limits: SandboxLimits): Promise<SandboxResult> {
    const worker = this.idle ?? this.spawn();
    this.idle = undefined;
    if (this.forgetIdle !== undefined) {
      worker.off('exit', this.forgetIdle).off('error', this.forgetIdle);
      this.forgetIdle = undefined;
    }
    worker.ref();
    return new Promise<SandboxResult>((resolve) => {
      let finished = false;
      const finish = (result: SandboxResult, reusable: boolean) => {
        if (finished) return;
        finished = true;
        clearTimeout(killTimer);
        limits.signal?.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (reusable && this.idle === undefined) {
          worker.unref();
          this.idle = worker;
          // A worker that dies while idle (killed, crashed) is forgotten, so the next run starts a fresh one.
          const forget = () => {
            if (this.idle === worker) this.idle = undefined;
          };
          this.forgetIdle = forget;
          worker.on('exit', forget).on('error', forget);
        } else {
          void worker.terminate();
        }
        resolve(result);
      };
      const onMessage = (message: WorkerMessage) => {
        if (message.type === 'done') {
          for (const fault of message.faults ?? []) this.output(`quickjs sandbox worker: ${fault}\n`);
          finish(message.result, message.recycle !== true);
          return;
        }
        if (message.type === 'output') return; // the worker's own output: `spawn` passes it on
        if (message.type === 'started') {
          clearTimeout(killTimer);
          killTimer = setTimeout(() => kill(timeoutResult), limits.timeoutMs + KILL_GRACE_MS);
          return;
        }
        const fn = Object.hasOwn(bridge, message.name) ? bridge[message.name] : undefined;
        const reply = fn
          ? fn(message.arg).then(
              (value) => ({ type: 'reply', id: message.id, ok: true, value: value ?? null }),
              (error: unknown) => ({
                type: 'reply',
                id: message.id,
                ok: false,
                error: error instanceof Error ? error.message : String(error),
              }),
            )
          : Promise.resolve({ type: 'reply', id: message.id, ok: false, error: 'not available' });
        void reply.then((m) => {
          if (!finished) worker.postMessage(m);
        });
      };
      const onError = (error: Error) =>
        finish(
          { ok: false, reason: 'error', error: `the sandbox failed: ${error.message}`, logs: [] },
          false,
        );
      const onExit = (code: number) =>
        finish(
          { ok: false, reason: 'error', error: `the sandbox stopped (exit code ${code})`, logs: [] },
          false,
        );
      const timeoutResult: SandboxResult = {
        ok: false,
        reason: 'timeout',
        error: `the function ran past its time limit of ${limits.timeoutMs} ms (transport.function.timeout_ms)`,
        logs: [],
      };
      const kill = (result: SandboxResult) => finish(result, false);
      const onAbort = () =>
        kill({ ok: false, reason: 'error', error: 'the run was stopped by its executor', logs: [] });
      let killTimer = setTimeout(
        () =>
          kill({
            ok: false,
            reason: 'error',
            error: `the sandbox did not start within ${STARTUP_MS} ms`,
            logs: [],
          }),
        STARTUP_MS,
      );
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      if (limits.signal?.aborted) return onAbort();
      limits.signal?.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({
        type: 'run',
        code,
        input: input ?? null,
        bridge: Object.keys(bridge),
        memoryMb: limits.memoryMb,
        timeoutMs: limits.timeoutMs,
      });
    });
  }

  /** Ends the idle worker (tests, shutdown). */
  async close(): Promise<void> {
    const worker = this.idle;
    this.idle = undefined;
    await worker?.terminate();
  }

  private spawn(): Worker {
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      // No environment: nothing the host knows (table names, credentials in env) is readable in the worker.
      env: {},
    });
    // Its own output comes as messages (the worker script's header says why not as piped stdio): an idle worker,
    // unref'd, then holds nothing open, and a process that is done exits.
    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'output') this.output(message.text);
    });
    return worker;
  }
}
