// The sandbox's QuickJS worker, writing to its own stdout and stderr as it loads and on each run (as a warning of
// Node's or a native library would): what the host's `onWorkerOutput` must receive.
import { parentPort } from 'node:worker_threads';
import '../../shared/adapters/sandbox/quickjs-worker.mjs';

process.stderr.write('noisy worker: loaded\n');
parentPort?.on('message', (message) => {
  if (message.type === 'run') process.stdout.write('noisy worker: a run\n');
});
