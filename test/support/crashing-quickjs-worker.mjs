// The sandbox's QuickJS worker, plus a way to crash it mid-run: a run whose code contains `__crash_worker__`
// ends the worker thread (exit code 70) while the run is in flight, as a native crash or an OOM kill would.
import { parentPort } from 'node:worker_threads';
import '../../shared/adapters/sandbox/quickjs-worker.mjs';

parentPort?.on('message', (message) => {
  if (message.type === 'run' && String(message.code).includes('__crash_worker__')) {
    setTimeout(() => process.exit(70), 50);
  }
});
