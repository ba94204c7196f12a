/**
 * A worker of the check pool (`check-pool.ts`): runs each task it is sent in full (`runCheck`) and answers with its
 * outcome, one task at a time. Lambda bundles ship it as `check-worker.mjs` beside the handler's bundle (the
 * topology's `bundling.workers`); from the repository's sources `check-worker.mjs` beside this file loads it.
 */
import { parentPort } from 'node:worker_threads';
import { fromWire, runCheck, type WireTask } from './tasks.ts';

const port = parentPort;
if (port === null) throw new Error('check-worker runs as a worker thread of the check pool');
port.on('message', (message: { id: number; task: WireTask }) => {
  void runCheck(fromWire(message.task), 'full').then((outcome) =>
    port.postMessage({ id: message.id, outcome }),
  );
});
