/**
 * What every executor Lambda shares: the SQS handler skeleton (`sqs-handler.ts`) running each message through the
 * universal pipeline (`processExecutorMessage`), with the store, claims and vector search built once per cold start,
 * a workspace's cap of long-running executions (workspace-slots.ts), the publisher's thread budget (a trigger of a
 * thread it stopped routing is dropped), and middy's abort signal passed down so slow
 * model and HTTP calls stop before the Lambda timeout. Each executor's handler says only which implementation it
 * runs, built from what it needs.
 */
import { vectorDepsFor } from '#functions/wiring/embedder-from-env.ts';
import { DynamoBreadcrumbStore, defaultDocumentClient } from '#shared/adapters/dynamodb/breadcrumb-store.ts';
import { DynamoBudgetCounters } from '#shared/adapters/dynamodb/budget-counters.ts';
import { DynamoClaims } from '#shared/adapters/dynamodb/claims.ts';
import { DynamoWorkspaceSlots } from '#shared/adapters/dynamodb/workspace-slots.ts';
import { BreadthEnvSchema, parseEnv, TableEnvSchema, WorkspaceShareEnvSchema } from '#shared/config.ts';
import { parseBody } from '#shared/core/executor/batch.ts';
import type {
  ExecutorImplementations,
  ExecutorKindImplementation,
  KindDependencies,
} from '#shared/core/executor/contract.ts';
import { processExecutorMessage } from '#shared/core/executor/pipeline.ts';
import { searchSimilar } from '#shared/core/stream/vector-search.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { ENV, EXECUTOR_KINDS, type ExecutorKind, type ExecutorRunner, topology } from '#shared/topology.ts';
import { measureExecutorBatch } from './metrics.ts';
import { powertools } from './powertools.ts';
import { sqsHandler } from './sqs-handler.ts';

export type ExecutorHandlerOptions = {
  /** Stop this long before the Lambda timeout: the message is retried instead of dying mid-write. */
  timeoutEarlyInMillis: number;
} & (
  | {
      /** The implementation of the kind the runner is named after (runners named like a kind only). */
      implementation: (deps: KindDependencies) => ExecutorKindImplementation<unknown>;
    }
  | {
      /** The implementations of the kinds this runner serves (agent-mcp: agents and mcp tools). */
      implementations: (deps: KindDependencies) => ExecutorImplementations;
    }
);

export function createExecutorHandler(runner: ExecutorRunner, options: ExecutorHandlerOptions) {
  const fn = topology.functions.executors[runner];
  const env = parseEnv(TableEnvSchema);
  const pt = powertools(`crumbs-${fn.name}`, [defaultDocumentClient()]);
  const { logger, tracing } = pt;
  const store = new DynamoBreadcrumbStore({ tableName: env[ENV.tableName] });
  const claims = new DynamoClaims(env[ENV.tableName]);
  const vectors = vectorDepsFor(store, env[ENV.tableName]);
  const vectorSearch: VectorSearch = { search: (query) => searchSimilar(vectors, query) };
  const share = parseEnv(WorkspaceShareEnvSchema);
  const slots = {
    slots: new DynamoWorkspaceSlots(env[ENV.tableName], fn.name),
    cap: share[ENV.workspaceInFlight],
    graceMs: share[ENV.workspaceInFlightGraceMs],
    leaseMs: fn.timeoutSeconds * 1000,
  };
  // The publisher's thread budget: a trigger of a thread it stopped routing is dropped (one read of its counter).
  const threadBudget = {
    counters: new DynamoBudgetCounters(env[ENV.tableName]),
    limit: parseEnv(BreadthEnvSchema)[ENV.threadBudget],
  };
  const deps: KindDependencies = { store, log: logger, clock: systemClock, vectorSearch };
  let implementations: ExecutorImplementations;
  if ('implementations' in options) implementations = options.implementations(deps);
  else if ((EXECUTOR_KINDS as readonly string[]).includes(runner)) {
    implementations = { [runner as ExecutorKind]: options.implementation(deps) };
  } else throw new Error(`runner ${runner} serves no kind of its own name: pass implementations`);

  return sqsHandler(pt, {
    queue: fn.trigger.queue,
    handle: (record, signal) =>
      processExecutorMessage(parseBody(record.body), {
        store,
        claims,
        leaseMs: fn.timeoutSeconds * 1000,
        implementations,
        log: logger,
        signal,
        vectorSearch,
        tracing,
        slots,
        threadBudget,
      }),
    measure: measureExecutorBatch,
    timeoutEarlyInMillis: options.timeoutEarlyInMillis,
  });
}
