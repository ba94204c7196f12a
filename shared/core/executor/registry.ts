/**
 * Executor kinds by name. Each kind's module registers a factory (`registerKind`), and a handler imports the
 * modules of the kinds it runs, so each bundle carries only the code of its own kind (the agent's no built-in
 * tools, the workflow's no model client). The factory gets the pipeline's dependencies (store, log) because `execute` itself receives only the
 * trigger, its context and the definition (contract.ts).
 */
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { Log } from '#shared/ports/log.ts';
import type { ExecutorKind } from '#shared/topology.ts';
import type { ExecutorStore } from './context-assembly.ts';
import type { ExecutorKindImplementation } from './contract.ts';

export interface KindDependencies {
  store: ExecutorStore;
  log: Log;
  clock: Clock;
}

export type KindFactory = (deps: KindDependencies) => ExecutorKindImplementation<unknown>;

const factories = new Map<ExecutorKind, KindFactory>();

/** Registers (or replaces) the implementation of an executor kind. */
export function registerKind(kind: ExecutorKind, factory: KindFactory): void {
  factories.set(kind, factory);
}

/** The implementation of `kind`, or undefined when no module registered it in this function. */
export function resolveKind(
  kind: ExecutorKind,
  deps: KindDependencies,
): ExecutorKindImplementation<unknown> | undefined {
  return factories.get(kind)?.(deps);
}

export function registeredKinds(): ExecutorKind[] {
  return [...factories.keys()];
}
