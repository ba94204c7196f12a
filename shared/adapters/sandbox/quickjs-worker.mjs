// @ts-check
/**
 * The worker thread that runs function code in QuickJS (see quickjs-sandbox.ts for the design). Plain JavaScript
 * because it is started as a file by `new Worker(url)`: the same file next to the TypeScript source locally and
 * next to the function bundle on Lambda (the CDK bundling copies it), with no TypeScript loader in the worker.
 *
 * Protocol (parentPort messages):
 *   in   { type: 'run', code, input, bridge: [names], memoryMb, timeoutMs }
 *   out  { type: 'started' }                      the module is loaded: the run's time starts now
 *   out  { type: 'call', id, name, arg }           a ctx.<name>(arg) call to run on the host
 *   in   { type: 'reply', id, ok, value | error }  its result
 *   out  { type: 'done', result, recycle, faults } a SandboxResult (see shared/ports/sandbox.ts); recycle: end me
 *   out  { type: 'output', text }                  what the worker itself wrote to its stdout or stderr
 */
import { parentPort } from 'node:worker_threads';
import variant from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core';

/**
 * The worker's own output (a warning of Node's, whatever QuickJS prints on stdout) goes to the host as messages,
 * not through piped stdio: Node keeps a piped stdio stream's port referenced while the host reads it, so an idle,
 * unref'd worker would still hold the host's event loop open (`crumbs dev` would hang on Ctrl-C after a function
 * agent ran). Function code never writes here: its console is captured into the run's logs.
 */
for (const stream of [process.stdout, process.stderr]) {
  /** @type {any} */ (stream).write = (
    /** @type {unknown} */ chunk,
    /** @type {unknown} */ encoding,
    /** @type {unknown} */ done,
  ) => {
    parentPort?.postMessage({
      type: 'output',
      text: typeof chunk === 'string' ? chunk : Buffer.from(/** @type {Uint8Array} */ (chunk)).toString(),
    });
    const callback = typeof encoding === 'function' ? encoding : done;
    if (typeof callback === 'function') callback();
    return true;
  };
}

const MAX_OUTPUT_CHARS = 256 * 1024;
const MAX_LOG_LINES = 200;
const MAX_LOG_LINE_CHARS = 1000;
// Well below the worker's native stack, so deep recursion is QuickJS's RangeError rather than the host's.
const STACK_BYTES = 256 * 1024;

/**
 * What QuickJS itself prints (an aborted instance says why on emscripten's stderr): kept for the run's report
 * instead of reaching the process's stderr.
 * @type {string[]}
 */
let faults = [];
const VARIANT = newVariant(/** @type {any} */ (variant), {
  emscriptenModule: { printErr: (/** @type {unknown} */ text) => void faults.push(String(text)) },
});

/**
 * Every run gets a fresh WebAssembly instance of QuickJS, and the instance is dropped after the run without
 * freeing its runtime. Why: QuickJS (quickjs-emscripten 0.32) cannot free a runtime in which a promise job
 * allocated objects — and every handler is async, so any `await` followed by allocation qualifies — nor one
 * interrupted mid-job (a timeout in an async loop): `JS_FreeRuntime` finds objects on its GC list and the
 * instance aborts on `Assertion failed: list_empty(&rt->gc_obj_list)` (upstream quickjs-emscripten #257, #269).
 * An instance that ran an interrupted job can also be left inconsistent for the next runtime in it (a fresh
 * runtime then failed with "TypeError: not a function"). Dropping the instance frees all of its memory at once
 * and shares nothing between runs; the next instance is prepared while the worker is idle (about 10 ms).
 * @type {Promise<import('quickjs-emscripten-core').QuickJSWASMModule> | undefined}
 */
let nextModule;
function prepareModule() {
  nextModule = newQuickJSWASMModuleFromVariant(VARIANT);
  nextModule.catch(() => {
    nextModule = undefined;
  });
}
function freshModule() {
  const module = nextModule ?? newQuickJSWASMModuleFromVariant(VARIANT);
  nextModule = undefined;
  return module;
}

const RUNNER = `(async () => {
  if (typeof handler !== 'function') throw new Error('function_code must define async function handler(input, ctx)');
  const result = await handler(JSON.parse(__input), __ctx);
  return result === undefined ? 'null' : JSON.stringify(result);
})()`;

/** @param {string[]} names */
function prelude(names) {
  const methods = names
    .map(
      (n) =>
        `${JSON.stringify(n)}: async (arg) => JSON.parse(await __host(${JSON.stringify(n)}, JSON.stringify(arg ?? null)))`,
    )
    .join(',\n');
  return `
    globalThis.console = Object.freeze({
      log: (...a) => __log('log', a), info: (...a) => __log('info', a),
      warn: (...a) => __log('warn', a), error: (...a) => __log('error', a),
    });
    globalThis.__ctx = Object.freeze({ ${methods} });
  `;
}

let nextCallId = 0;
/** @type {Map<number, (reply: { ok: boolean, value?: unknown, error?: string }) => void>} */
const pendingReplies = new Map();

/** @param {string} name @param {string} argText @returns {Promise<unknown>} */
function callHost(name, argText) {
  const id = ++nextCallId;
  return new Promise((resolve, reject) => {
    pendingReplies.set(id, (reply) => (reply.ok ? resolve(reply.value) : reject(new Error(reply.error))));
    parentPort?.postMessage({ type: 'call', id, name, arg: JSON.parse(argText) });
  });
}

/** @param {unknown} value */
function safeJson(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** @param {unknown} dumped */
function errorMessage(dumped) {
  if (dumped !== null && typeof dumped === 'object') {
    const { name, message } = /** @type {{ name?: unknown, message?: unknown }} */ (dumped);
    if (typeof message === 'string')
      return typeof name === 'string' && name !== '' ? `${name}: ${message}` : message;
  }
  return typeof dumped === 'string' ? dumped : safeJson(dumped);
}

/**
 * @param {{ code: string, input: unknown, bridge: string[], memoryMb: number, timeoutMs: number }} job
 */
async function run(job) {
  const module = await freshModule();
  // The time limit is the code's: loading the WebAssembly module (the first run of a worker) does not count.
  parentPort?.postMessage({ type: 'started' });
  const deadline = Date.now() + job.timeoutMs;
  const logs = /** @type {string[]} */ ([]);
  /** @param {string} reason @param {string} error */
  const fail = (reason, error) => ({ ok: false, reason, error, logs });
  const timeout = () =>
    fail(
      'timeout',
      `the function ran past its time limit of ${job.timeoutMs} ms (transport.function.timeout_ms)`,
    );
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(job.memoryMb * 1024 * 1024);
  runtime.setMaxStackSize(STACK_BYTES);
  runtime.setInterruptHandler(() => Date.now() > deadline);
  const vm = runtime.newContext();
  const life = { ended: false, deferreds: new Set(), inFlight: new Set() };

  /** @param {import('quickjs-emscripten-core').QuickJSHandle} handle @param {'invalid-code' | 'error'} reason */
  const failure = (handle, reason) => {
    const message = errorMessage(vm.dump(handle));
    handle.dispose();
    // Past the deadline the interrupt handler stopped the code: an interrupt inside a promise job can surface as
    // another error ("not a function"), which says nothing the timeout does not.
    if (Date.now() > deadline && (reason === 'error' || /interrupted/i.test(message))) return timeout();
    if (/out of memory/i.test(message)) {
      return fail('memory', 'the function ran out of memory (transport.function.memory_mb)');
    }
    return fail(reason, reason === 'invalid-code' ? `function_code does not load: ${message}` : message);
  };

  try {
    const inputText = vm.newString(JSON.stringify(job.input ?? null));
    vm.setProp(vm.global, '__input', inputText);
    inputText.dispose();
    const log = vm.newFunction('__log', (levelHandle, argsHandle) => {
      if (logs.length >= MAX_LOG_LINES) return;
      const args = /** @type {unknown[]} */ (vm.dump(argsHandle));
      const line = args.map((a) => (typeof a === 'string' ? a : safeJson(a))).join(' ');
      logs.push(`${vm.getString(levelHandle)}: ${line}`.slice(0, MAX_LOG_LINE_CHARS));
      if (logs.length === MAX_LOG_LINES) logs.push('… (more console output dropped)');
    });
    vm.setProp(vm.global, '__log', log);
    log.dispose();
    const host = vm.newFunction('__host', (nameHandle, argHandle) => {
      const name = vm.getString(nameHandle);
      const argText = vm.getString(argHandle);
      const deferred = vm.newPromise();
      life.deferreds.add(deferred);
      const tracked = callHost(name, argText).then(
        (value) => {
          if (life.ended) return;
          const text = vm.newString(JSON.stringify(value ?? null));
          deferred.resolve(text);
          text.dispose();
        },
        (error) => {
          if (life.ended) return;
          const err = vm.newError(`ctx.${name}: ${error instanceof Error ? error.message : String(error)}`);
          deferred.reject(err);
          err.dispose();
        },
      );
      life.inFlight.add(tracked);
      void tracked.finally(() => {
        life.inFlight.delete(tracked);
        life.deferreds.delete(deferred);
      });
      return deferred.handle;
    });
    vm.setProp(vm.global, '__host', host);
    host.dispose();
    const installed = vm.evalCode(prelude(job.bridge), 'prelude.js');
    if (installed.error) return failure(installed.error, 'error');
    installed.value.dispose();

    const defined = vm.evalCode(job.code, 'function_code.js');
    if (defined.error) return failure(defined.error, 'invalid-code');
    defined.value.dispose();
    const started = vm.evalCode(RUNNER, 'runner.js');
    if (started.error) return failure(started.error, 'error');
    const promise = started.value;
    try {
      for (;;) {
        const jobs = runtime.executePendingJobs();
        if (jobs.error) return failure(jobs.error, 'error');
        const state = vm.getPromiseState(promise);
        if (state.type === 'fulfilled') {
          const text = vm.getString(state.value);
          state.value.dispose();
          if (text.length > MAX_OUTPUT_CHARS) {
            return fail(
              'output',
              `the handler's result is ${text.length} characters of JSON; at most ${MAX_OUTPUT_CHARS}`,
            );
          }
          return { ok: true, value: JSON.parse(text), logs };
        }
        if (state.type === 'rejected') return failure(state.error, 'error');
        // An interrupted job queue can return without an error and leave the promise pending: that is the timeout.
        if (Date.now() > deadline) return timeout();
        if (life.inFlight.size === 0) {
          return fail(
            'error',
            'the handler neither returned nor awaited anything (a promise that never settles)',
          );
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) return timeout();
        /** @type {NodeJS.Timeout | undefined} */
        let timer;
        const timedOut = await Promise.race([
          Promise.race(life.inFlight).then(() => false),
          new Promise((resolve) => {
            timer = setTimeout(() => resolve(true), remaining);
          }),
        ]);
        clearTimeout(timer);
        if (timedOut) return timeout();
      }
    } finally {
      promise.dispose();
    }
  } catch (error) {
    // The host's own stack or heap gave out inside QuickJS, or the instance aborted: the worker is replaced.
    faults.push(error instanceof Error ? error.message : String(error));
    return fail('error', `the function failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    life.ended = true;
    // No vm.dispose() / runtime.dispose(): see `nextModule`. A bridged call answered after this point finds the
    // run ended and touches nothing of the dropped instance.
  }
}
parentPort?.on('message', (message) => {
  if (message.type === 'reply') {
    const settle = pendingReplies.get(message.id);
    pendingReplies.delete(message.id);
    settle?.(message);
    return;
  }
  if (message.type === 'run') {
    faults = [];
    void run(message).then((result) => {
      // `recycle`: QuickJS printed something (it aborted) or the host gave out; the host ends this worker.
      parentPort?.postMessage({ type: 'done', result, recycle: faults.length > 0, faults });
      prepareModule();
    });
  }
});
