/**
 * `DataChecks` (`shared/ports/checks.ts`): each check first runs on the caller's thread within a slice of a few
 * milliseconds (CHECK_SLICE), which nearly every check needs no more than; one that does not is run again in full
 * in the check pool (`check-pool.ts`), so the event loop that serves every other request of the process (all of
 * `crumbs dev`, an executor's batch of messages from several workspaces) is never held longer than a slice. With
 * no pool (`CRUMBS_CHECK_WORKERS=0`: a function that serves one request per instance) every check runs in full on
 * the caller's thread, where it holds no one else's request.
 */
import type { ContextView } from '#shared/domain/breadcrumb.ts';
import type { FieldIssue } from '#shared/domain/errors.ts';
import type { DataChecks } from '#shared/ports/checks.ts';
import { ChecksEnvSchema, parseEnv } from '../../config.ts';
import { ENV } from '../../topology.ts';
import { CheckPool, defaultCheckWorkers } from './check-pool.ts';
import { type CheckOutcome, type CheckTask, rebuilt, runCheck } from './tasks.ts';

export { ChecksBusyError } from './check-pool.ts';

/** Checks with this pool behind them; none: every check in full on the caller's thread. */
export function pooledChecks(pool: CheckPool | undefined): DataChecks {
  const run = async (workspace: string, task: CheckTask, signal?: AbortSignal): Promise<unknown> => {
    let outcome: CheckOutcome = await runCheck(task, pool === undefined ? 'full' : 'slice');
    if (!outcome.ok && 'slice' in outcome) outcome = await (pool as CheckPool).run(workspace, task, signal);
    if (outcome.ok) return outcome.value;
    if ('slice' in outcome) throw new Error('a check in full answered as a slice');
    throw rebuilt(outcome.error);
  };
  return {
    validate: async (workspace, check, signal) =>
      (await run(workspace, { kind: 'schema', ...check }, signal)) as FieldIssue[],
    evaluate: (workspace, check, signal) => run(workspace, { kind: 'jsonata', ...check }, signal),
    views: async (workspace, items) => (await run(workspace, { kind: 'views', items })) as ContextView[],
  };
}

let shared: { checks: DataChecks; pool: CheckPool | undefined } | undefined;

/**
 * This process's checks, made at first use from `CRUMBS_CHECK_WORKERS` (absent: `defaultCheckWorkers()`; 0: no
 * pool). One pool per process, as the event loop it protects is one per process.
 */
export function dataChecks(env: NodeJS.ProcessEnv = process.env): DataChecks {
  if (shared === undefined) {
    const workers = parseEnv(ChecksEnvSchema, env)[ENV.checkWorkers] ?? defaultCheckWorkers();
    const pool = workers > 0 ? new CheckPool({ workers }) : undefined;
    shared = { checks: pooledChecks(pool), pool };
  }
  return shared.checks;
}

/** Ends this process's pool, if one was made (`crumbs dev` stopping, tests); the next use makes a new one. */
export async function closeDataChecks(): Promise<void> {
  const pool = shared?.pool;
  shared = undefined;
  await pool?.close();
}
