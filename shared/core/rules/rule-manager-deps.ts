/**
 * What the rule manager works with (`RuleManagerDependencies`): the store, the rules of each bus of the pool, the
 * executor queues its rules target, the Scheduler, and the workspaces' secrets and quotas; the principal it writes
 * as; and the outcome of reconciling one definition.
 */
import type { WorkspaceQuotaOverrides } from '#shared/config.ts';
import type { LlmProvider, ModelAliases } from '#shared/domain/llm-model.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Log } from '#shared/ports/log.ts';
import type { RuleRegistry } from '#shared/ports/rule-registry.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import type { Schedules } from '#shared/ports/timers.ts';
import type { WorkspaceQuotas } from '#shared/ports/workspace-quotas.ts';
import type { ExecutorRunner } from '#shared/topology.ts';

export const PRINCIPAL = 'system:rule-manager';

export interface RuleManagerDependencies {
  store: BreadcrumbStore;
  /** The rules of the first bus, `busName`. */
  rules: RuleRegistry;
  busName: string;
  /** The bus pool; absent: the one bus `busName`, whose rules are `rules`. */
  pool?: BusPool | undefined;
  prefix: string;
  /** The queue of each executor runner (`EXECUTOR_RUNNERS`): a definition's rule targets its runner's queue. */
  executorQueueArns: Readonly<Record<ExecutorRunner, string>>;
  /** Where an agent's bare model id runs (`CRUMBS_DEFAULT_LLM_PROVIDER`). */
  defaultLlmProvider: LlmProvider;
  /** The operator's model aliases (`CRUMBS_MODEL_ALIASES`): a bare model id they name runs what they say. */
  modelAliases?: ModelAliases | undefined;
  /** Where EventBridge puts events it could not deliver to a target (`ENV.ruleTargetsDlqArn`). */
  ruleTargetsDlqArn: string;
  /** The longest `timeout_ms` a definition may ask for (`ENV.timeoutCeilingMs`). @default TENANT_LIMITS */
  timeoutCeilingMs?: number | undefined;
  log: Log;
  /** Recurring schedules of `schedule.def.v1` (EventBridge Scheduler); absent, schedules are reported invalid. */
  schedules?: Schedules | undefined;
  /**
   * The workspaces' secrets: a definition whose `secret_ref` names no secret of its own workspace is `invalid`.
   * Absent, every definition that names a secret is reported invalid.
   */
  secrets?: SecretSource | undefined;
  /**
   * Per-workspace quotas on shared capacity and their limits (the operator's `ENV.maxDefinitionsPerWorkspace`,
   * `ENV.maxRulesPerWorkspace`, and a single workspace's own in `ENV.workspaceQuotas`): past one, a definition is
   * `invalid` naming it. Absent: no per-workspace quota.
   */
  quotas?:
    | {
        store: WorkspaceQuotas;
        definitions: number;
        rules: number;
        workspaces?: WorkspaceQuotaOverrides | undefined;
      }
    | undefined;
}

export interface BusPool {
  /** Every bus of the pool, `busName` first. */
  buses: readonly string[];
  rulesOn(bus: string): RuleRegistry;
  /** The publisher's placement cache (`ENV.busPlacementCacheMs`): how long a new placement waits before `active`. */
  placementCacheMs: number;
  sleep?: (ms: number) => Promise<void>;
}

export type ReconcileOutcome = 'created' | 'updated' | 'unchanged' | 'deleted' | 'invalid' | 'absent';
