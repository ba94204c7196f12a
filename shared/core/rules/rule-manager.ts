/**
 * The rule manager core: keeps exactly one EventBridge rule per valid definition, whose pattern is the
 * definition's compiled trigger selectors and whose one target is the SQS queue of the definition's executor kind,
 * with the rule-targets dead-letter queue, the retry policy of `topology.bus.ruleTargets` and the definition's
 * workspace as the fair queue's message group (a target that drifted
 * from any of these, e.g. one created before targets had a DLQ, is put again).
 *
 * It reconciles to the *stored* state of the definition (not to what the event said), so events may arrive late,
 * twice or out of order and the outcome is the same; a second run changes nothing. The outcome is recorded in a
 * `definition.status.v1` breadcrumb tagged `definition:<id>` (and `rule:<rule name>` while it has a rule; written
 * only when it changed): state, errors, warnings (fields crumbs does not know), rule,
 * pattern, and for agents which provider and model will run (`llm`, resolved against the stack's default
 * provider; an unknown provider makes the definition `invalid`).
 *
 * Rules are spread over the bus pool (`topology.bus.pool`, `bus-placement.ts`): a definition's rule stays on the bus
 * it was placed on; a new one goes to the first bus with room. A definition no bus has room for is `invalid`, with
 * an error naming the quota (it is placed by the next `crumbs rules sync` once there is room). If a rule is found
 * on two buses (a crash between placing and recording), the one kept is brought up to date before the other is
 * deleted: an event matching both in between is delivered twice and answered once (the executor's claim is per
 * definition × trigger id × version, whichever bus delivered it).
 *
 * What all workspaces share is bounded per workspace: a definition holds a slot of its workspace's definitions quota,
 * and one of its rules quota while it has a rule (`ENV.maxDefinitionsPerWorkspace`, `ENV.maxRulesPerWorkspace`;
 * slots taken atomically, given back when it is deleted or loses its rule); past either it is `invalid`, naming
 * the setting. A `secret_ref` must name a secret of the definition's own workspace (`secret-refs.ts`).
 *
 * Batches go through the one SQS batch loop (`sqs-batch.ts`); messages about the same definition are handled one
 * after the other, in order, and the rest concurrently.
 */
import { createHash } from 'node:crypto';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { definitionLimits, type WorkspaceQuotaOverrides } from '#shared/config.ts';
import { agentModel, agentModelPath } from '#shared/domain/agent-spec.ts';
import { type Breadcrumb, canonicalJson, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { ChangeEventSchema, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import { ruleTag } from '#shared/domain/definition-status.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { definitionPrincipal, triggerSelectorEntries } from '#shared/domain/definitions.ts';
import {
  type FieldIssue,
  isRetriable,
  NotFoundError,
  QuotaExceededError,
  ValidationError,
} from '#shared/domain/errors.ts';
import { type LlmProvider, type ResolvedModel, resolveModel } from '#shared/domain/llm-model.ts';
import { LEGACY_AGENT_DEF_SCHEMA, STATUS_SCHEMA, SYNC_RESULT_SCHEMA } from '#shared/domain/protocol.ts';
import { executorRunnerOf } from '#shared/domain/runners.ts';
import { type SecretRefUse, secretRefsOf } from '#shared/domain/secret-refs.ts';
import { timeoutCeilingIssues } from '#shared/domain/timeout-ceiling.ts';
import { definitionWarnings } from '#shared/domain/unknown-fields.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Log } from '#shared/ports/log.ts';
import type { RetryPolicy, RuleRegistry, RuleTarget } from '#shared/ports/rule-registry.ts';
import type { SecretSource } from '#shared/ports/secrets.ts';
import type { Schedules } from '#shared/ports/timers.ts';
import type { QuotaName, WorkspaceQuotas } from '#shared/ports/workspace-quotas.ts';
import { compileTriggerPattern, patternHash } from '#shared/routing/compiler.ts';
import {
  DEFINITION_SCHEMAS,
  ENV,
  type ExecutorKind,
  type ExecutorRunner,
  RULES_SYNC_SCHEMA,
  SCHEDULE_DEFINITION_SCHEMA,
  TENANT_LIMITS,
  topology,
} from '#shared/topology.ts';
import { processSqsBatch, type Redelivery } from '../../adapters/sqs/sqs-batch.ts';
import { addToPlacement, readPlacement } from '../../routing/bus-placement.ts';
import { executorInputTransformer } from '../executor/contract.ts';
import { reconcileSchedule } from './schedule-manager.ts';

export const PRINCIPAL = 'system:rule-manager';
const TARGET_ID = 'executor';

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
  /** Where EventBridge puts events it could not deliver to a target (`ENV.ruleTargetsDlqArn`). */
  ruleTargetsDlqArn: string;
  /** The longest `timeout_ms` a definition may ask for (`ENV.timeoutCeilingMs`). @default TENANT_LIMITS */
  timeoutCeilingMs?: number | undefined;
  log: Log;
  /** Failed messages come back after a back-off instead of the queue's visibility timeout. */
  redelivery?: Redelivery | undefined;
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

/** After a refusal, a bus is tried after the others for this long (the SDK retries each refusal before it ends). */
const FULL_BUS_MEMORY_MS = 60_000;
const fullUntil = new Map<string, number>();

function poolOf(deps: RuleManagerDependencies): Required<BusPool> {
  const pool = deps.pool;
  return {
    buses: pool?.buses ?? [deps.busName],
    rulesOn: (bus) => (bus === deps.busName ? deps.rules : (pool?.rulesOn(bus) ?? deps.rules)),
    placementCacheMs: pool?.placementCacheMs ?? 0,
    sleep: pool?.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms))),
  };
}

/** The first bus, then the buses of the pool the workspace's placement names (where its rules can be). */
async function workspaceBuses(
  workspace: string,
  deps: RuleManagerDependencies,
): Promise<{ buses: string[]; placed: string[]; addedAt: Record<string, number> }> {
  const { buses } = poolOf(deps);
  if (buses.length === 1) return { buses: [deps.busName], placed: [], addedAt: {} };
  const placement = await readPlacement(deps.store, workspace);
  const placed = buses.filter((b) => b !== deps.busName && placement.buses.includes(b));
  return { buses: [deps.busName, ...placed], placed, addedAt: placement.addedAt };
}

/** Waits until publishers route the workspace's events to a bus added to its placement at `addedAt`. */
async function untilRouted(addedAt: number | undefined, pool: Required<BusPool>): Promise<void> {
  if (addedAt === undefined || pool.placementCacheMs === 0) return;
  const wait = addedAt + pool.placementCacheMs + 1000 - Date.now();
  if (wait > 0) await pool.sleep(wait);
}

/** The retry policy of every compiled target (see `topology.bus.ruleTargets`). */
export const TARGET_RETRY_POLICY: RetryPolicy = {
  maximumRetryAttempts: topology.bus.ruleTargets.maximumRetryAttempts,
  maximumEventAgeSeconds: topology.bus.ruleTargets.maximumEventAgeSeconds,
};

export type DefinitionState = 'active' | 'invalid';

export interface DefinitionStatus {
  definition_id: string;
  definition_schema: string;
  definition_version: number;
  kind: ExecutorKind;
  /** The executor function whose queue the rule targets (`executorRunnerOf`); null when invalid. */
  runner: ExecutorRunner | null;
  state: DefinitionState;
  errors: FieldIssue[];
  /** Fields crumbs does not know and ignores (`definitionWarnings`): the definition runs without them. */
  warnings: FieldIssue[];
  rule_name: string | null;
  /** The bus of the pool that holds the rule; null when there is no rule. */
  event_bus: string | null;
  pattern: unknown;
  pattern_hash: string | null;
  /**
   * For agents whose type calls a model (context agents; tool agents with `extract_arguments`): the provider and
   * model their calls go to (`agentModel`). Null for agents that call none, other kinds and invalid definitions.
   */
  llm: ResolvedModel | null;
}

export type ReconcileOutcome = 'created' | 'updated' | 'unchanged' | 'deleted' | 'invalid' | 'absent';

/** Deterministic, unique per (workspace, definition), within EventBridge's 64-character name limit. */
export function ruleName(prefix: string, workspace: string, definitionId: string): string {
  const hash = createHash('sha256').update(`${workspace}\u0000${definitionId}`).digest('hex').slice(0, 12);
  const safe = (s: string, n: number) => s.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, n);
  return `${prefix}${safe(workspace, 16)}-${safe(definitionId, 20)}-${hash}`;
}

export function statusId(definitionId: string): string {
  return `status-${createHash('sha256').update(definitionId).digest('hex').slice(0, 24)}`;
}

/** What a definition compiles to, or why it cannot, and the secrets it names (checked with I/O later): no I/O. */
export function evaluateDefinition(
  record: Breadcrumb,
  prefix: string,
  defaultLlmProvider: LlmProvider,
  timeoutCeilingMs: number = TENANT_LIMITS.timeoutCeilingMs,
): DefinitionStatus & { kindKnown: boolean; secretRefs: SecretRefUse[] } {
  const kind = DEFINITION_SCHEMAS[record.schema_name as keyof typeof DEFINITION_SCHEMAS];
  const base = {
    definition_id: record.id,
    definition_schema: record.schema_name,
    definition_version: record.version,
    kind,
    // Set when the rule has been placed (`placeRule`).
    event_bus: null,
    kindKnown: kind !== undefined,
    secretRefs: [] as SecretRefUse[],
    warnings: definitionWarnings(record.schema_name, record.context),
  };
  try {
    const parsed = validateDefinition(record.schema_name, record.context, definitionLimits());
    const overCeiling = timeoutCeilingIssues(parsed, timeoutCeilingMs);
    if (overCeiling.length > 0) throw new ValidationError(overCeiling);
    // The model the agent's type will call (none for api, external and function agents, nor for tool agents
    // that take their arguments as given), resolved as the LLM router will resolve it.
    const model = parsed.kind === 'agent' && parsed.spec ? agentModel(parsed.spec) : undefined;
    const llm =
      parsed.kind === 'agent' && model !== undefined
        ? resolveModel(
            model,
            defaultLlmProvider,
            record.schema_name === LEGACY_AGENT_DEF_SCHEMA
              ? 'llm_config.model'
              : agentModelPath(parsed.definition),
          )
        : null;
    const entries = triggerSelectorEntries(parsed.kind, parsed.definition);
    if (entries.length === 0) {
      throw new ValidationError([
        {
          path: 'subscriptions.selectors',
          message: 'no trigger selector: nothing would ever run this definition',
        },
      ]);
    }
    const pattern = compileTriggerPattern({
      workspace: record.workspace,
      principal: definitionPrincipal(parsed.kind, parsed.definition),
      selectors: entries.map((e) => e.selector),
      selectorPaths: entries.map((e) => e.path),
    });
    return {
      ...base,
      secretRefs: secretRefsOf(parsed),
      kind: parsed.kind,
      runner: executorRunnerOf(parsed),
      state: 'active',
      errors: [],
      rule_name: ruleName(prefix, record.workspace, record.id),
      pattern,
      pattern_hash: patternHash(pattern),
      llm,
    };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return {
      ...base,
      runner: null,
      state: 'invalid',
      errors: [...error.issues],
      rule_name: null,
      pattern: null,
      pattern_hash: null,
      llm: null,
    };
  }
}

export async function reconcileDefinition(
  workspace: string,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<ReconcileOutcome> {
  return (await reconcile(workspace, definitionId, deps)).outcome;
}

/** Reconciles one definition; says which bus its rule is on now (none when it has no rule). */
async function reconcile(
  workspace: string,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<{ outcome: ReconcileOutcome; bus: string | null }> {
  const name = ruleName(deps.prefix, workspace, definitionId);
  const record = await deps.store.get(workspace, definitionId).catch((error: unknown) => {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  });
  if (record?.schema_name === SCHEDULE_DEFINITION_SCHEMA) {
    // A schedule counts as a definition and holds no rule.
    const refused = await takeSlot(workspace, 'definitions', definitionId, deps);
    await releaseSlot(workspace, 'rules', definitionId, deps);
    const outcome = await reconcileSchedule(record, {
      store: deps.store,
      schedules: deps.schedules,
      principal: PRINCIPAL,
      statusId: statusId(definitionId),
      refused,
    });
    deps.log.info('schedule reconciled', {
      workspace,
      definitionId,
      definitionVersion: record.version,
      outcome,
    });
    return { outcome, bus: null };
  }
  const { buses } = await workspaceBuses(workspace, deps);
  if (!record || !(record.schema_name in DEFINITION_SCHEMAS)) {
    const removed = await removeFrom(buses, name, deps);
    // The definition may have been a schedule: its schedule goes too (a missing one is fine).
    await deps.schedules?.delete(workspace, definitionId);
    await deleteStatus(workspace, definitionId, deps);
    // Its slots are given back after its rule is gone: a crash in between leaves a slot held, not a rule uncounted.
    await releaseSlot(workspace, 'rules', definitionId, deps);
    await releaseSlot(workspace, 'definitions', definitionId, deps);
    return { outcome: removed ? 'deleted' : 'absent', bus: null };
  }

  const refusedDefinition = await takeSlot(workspace, 'definitions', definitionId, deps);
  const { secretRefs, ...status } = evaluateDefinition(
    record,
    deps.prefix,
    deps.defaultLlmProvider,
    deps.timeoutCeilingMs,
  );
  markInvalid(status, refusedDefinition);
  if (status.state === 'active') markInvalid(status, await missingSecrets(workspace, secretRefs, deps));
  // The rule's slot is taken before the rule is put, so no rule exists uncounted.
  if (status.state === 'active') markInvalid(status, await takeSlot(workspace, 'rules', definitionId, deps));
  let outcome: ReconcileOutcome;
  if (status.state === 'invalid') {
    await removeFrom(buses, name, deps);
    outcome = 'invalid';
  } else {
    outcome = await placeRule(name, record, status, deps);
  }
  if (status.state === 'invalid') await releaseSlot(workspace, 'rules', definitionId, deps);
  const { kindKnown: _known, ...stored } = status;
  await writeStatus(workspace, stored, deps);
  deps.log.info('definition reconciled', {
    workspace,
    definitionId,
    definitionVersion: record.version,
    outcome,
    ruleName: status.rule_name,
    eventBus: status.event_bus,
  });
  return { outcome, bus: status.event_bus };
}

const QUOTA_SETTINGS: Record<QuotaName, { setting: string; what: string; cdk: string; flag: string }> = {
  definitions: {
    setting: ENV.maxDefinitionsPerWorkspace,
    what: 'definitions',
    cdk: 'crumbs:maxDefinitionsPerWorkspace',
    flag: '--max-definitions-per-workspace',
  },
  rules: {
    setting: ENV.maxRulesPerWorkspace,
    what: 'rules on the event bus pool',
    cdk: 'crumbs:maxRulesPerWorkspace',
    flag: '--max-rules-per-workspace',
  },
};

/**
 * Takes the definition's slot of a per-workspace quota; the issue that makes it `invalid` when the workspace's
 * slots are all held by its other definitions (none when there is no quota or it holds a slot).
 */
async function takeSlot(
  workspace: string,
  quota: QuotaName,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<FieldIssue[]> {
  if (deps.quotas === undefined) return [];
  const own = Object.hasOwn(deps.quotas.workspaces ?? {}, workspace)
    ? deps.quotas.workspaces?.[workspace]?.[quota]
    : undefined;
  const limit = own ?? deps.quotas[quota];
  if (await deps.quotas.store.acquire(workspace, quota, definitionId, limit)) return [];
  const q = QUOTA_SETTINGS[quota];
  const setBy =
    own !== undefined
      ? `its own, in ${ENV.workspaceQuotas}, set by the operator: CDK context crumbs:workspaceQuotas, crumbs dev ${ENV.workspaceQuotas}`
      : `${q.setting}, set by the operator: CDK context ${q.cdk}, crumbs dev ${q.flag}`;
  return [
    {
      path: `quota.${quota}`,
      message:
        `workspace ${JSON.stringify(workspace)} is at its quota of ${limit} ${q.what} (${setBy}). Delete one of ` +
        'its definitions, then apply this one again or run `crumbs rules sync`',
    },
  ];
}

async function releaseSlot(
  workspace: string,
  quota: QuotaName,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<void> {
  await deps.quotas?.store.release(workspace, quota, definitionId);
}

/** Makes the status `invalid` with these issues (none: unchanged). */
function markInvalid(status: DefinitionStatus, issues: readonly FieldIssue[]): void {
  if (issues.length === 0) return;
  status.state = 'invalid';
  status.errors = [...issues];
  status.runner = null;
  status.rule_name = null;
  status.pattern = null;
  status.pattern_hash = null;
  status.llm = null;
}

/**
 * The `secret_ref`s that name no secret of the definition's own workspace. Their shape was checked with the
 * definition (no path, ARN or `..` gets here); this asks the secret source whether the workspace has each one.
 */
async function missingSecrets(
  workspace: string,
  refs: readonly SecretRefUse[],
  deps: RuleManagerDependencies,
): Promise<FieldIssue[]> {
  const issues: FieldIssue[] = [];
  for (const ref of refs) {
    if (deps.secrets === undefined) {
      issues.push({ path: ref.path, message: 'this stack has no secret source: no secret_ref can be read' });
    } else if (!(await deps.secrets.has(workspace, ref.name))) {
      issues.push({
        path: ref.path,
        message:
          `workspace ${JSON.stringify(workspace)} has no secret ${JSON.stringify(ref.name)} ` +
          `(${deps.secrets.whereIs(workspace, ref.name)}): a secret_ref names a secret of the definition's own ` +
          'workspace. Create it, then apply the definition again or run `crumbs rules sync`',
      });
    }
  }
  return issues;
}

/**
 * Keeps the rule where it is, or places it on the first bus with room; sets `status.event_bus`, or makes the
 * status `invalid` (naming the quota) when no bus of the pool has room.
 */
async function placeRule(
  name: string,
  record: Breadcrumb,
  status: DefinitionStatus,
  deps: RuleManagerDependencies,
): Promise<ReconcileOutcome> {
  const pool = poolOf(deps);
  const { buses, placed, addedAt } = await workspaceBuses(record.workspace, deps);
  const found: string[] = [];
  for (const bus of buses) if (await pool.rulesOn(bus).describe(name)) found.push(bus);
  const [home, ...strays] = found;
  if (home !== undefined) {
    const outcome = await ensureRule(name, record, status, pool.rulesOn(home), deps);
    // The kept rule is up to date before another copy goes: no event falls between them (see the header).
    await removeFrom(strays, name, deps);
    // Placed before a crash that cut the wait short: wait out the rest before calling it active.
    await untilRouted(addedAt[home], pool);
    status.event_bus = home;
    return outcome;
  }

  // The first bus, then buses the workspace already uses, then the rest; a bus refused recently goes last.
  const now = Date.now();
  const preferred = [deps.busName, ...placed, ...pool.buses.filter((b) => !buses.includes(b))];
  const order = [
    ...preferred.filter((b) => (fullUntil.get(b) ?? 0) <= now),
    ...preferred.filter((b) => (fullUntil.get(b) ?? 0) > now),
  ];
  const refusals: QuotaExceededError[] = [];
  for (const bus of order) {
    let outcome: ReconcileOutcome;
    try {
      outcome = await ensureRule(name, record, status, pool.rulesOn(bus), deps);
    } catch (error) {
      if (!(error instanceof QuotaExceededError)) throw error;
      fullUntil.set(bus, Date.now() + FULL_BUS_MEMORY_MS);
      refusals.push(error);
      continue;
    }
    fullUntil.delete(bus);
    if (bus !== deps.busName) {
      // A bus new to the workspace is added to its placement; the publisher sends the workspace's events there once
      // it has read the placement again, at most `placementCacheMs` after the bus was added (by this placement or a
      // concurrent one): only then is the definition active.
      const added = buses.includes(bus)
        ? addedAt[bus]
        : (await addToPlacement(deps.store, record.workspace, bus, PRINCIPAL)).addedAt;
      await untilRouted(added, pool);
    }
    status.event_bus = bus;
    return outcome;
  }
  const quotas = [...new Set(refusals.map((r) => `"${r.quota}"`))].join(', ');
  status.state = 'invalid';
  status.rule_name = null;
  status.errors = [
    {
      path: 'event_bus',
      message:
        `no event bus has room for its rule: EventBridge refused it (LimitExceededException, the ${quotas} quota) ` +
        `on every bus of the pool (${pool.buses.join(', ')}). Delete definitions, raise the quota, or add buses ` +
        '(CDK context crumbs:buses; crumbs dev --buses), then run `crumbs rules sync`',
    },
  ];
  return 'invalid';
}

async function ensureRule(
  name: string,
  record: Breadcrumb,
  status: DefinitionStatus,
  rules: RuleRegistry,
  deps: RuleManagerDependencies,
): Promise<ReconcileOutcome> {
  const pattern = JSON.stringify(status.pattern);
  const description = JSON.stringify({ workspace: record.workspace, definition_id: record.id });
  const target: RuleTarget = {
    id: TARGET_ID,
    arn: deps.executorQueueArns[status.runner ?? status.kind],
    inputTransformer: executorInputTransformer({
      id: record.id,
      version: record.version,
      workspace: record.workspace,
      kind: status.kind,
      schema_name: record.schema_name,
    }),
    deadLetterArn: deps.ruleTargetsDlqArn,
    retryPolicy: TARGET_RETRY_POLICY,
    // The executor queues are SQS fair queues keyed by workspace; a definition belongs to one workspace, so its
    // rule's target names that workspace statically (DESIGN.md "Tenants", share).
    messageGroupId: record.workspace,
  };

  const existing = await rules.describe(name);
  const samePattern =
    existing !== undefined && canonicalJson(safeParse(existing.pattern)) === canonicalJson(status.pattern);
  if (!existing || !samePattern || existing.description !== description || existing.state !== 'ENABLED') {
    await rules.put({ name, pattern, description });
  }
  const targets = await rules.targets(name);
  const current = targets.find((t) => t.id === TARGET_ID);
  const sameTarget =
    current !== undefined &&
    current.arn === target.arn &&
    canonicalJson(current.inputTransformer ?? null) === canonicalJson(target.inputTransformer) &&
    current.deadLetterArn === target.deadLetterArn &&
    canonicalJson(current.retryPolicy ?? null) === canonicalJson(target.retryPolicy) &&
    current.messageGroupId === target.messageGroupId;
  if (!sameTarget) await rules.putTargets(name, [target]);
  const extra = targets.filter((t) => t.id !== TARGET_ID).map((t) => t.id);
  await rules.removeTargets(name, extra);

  if (!existing) return 'created';
  return samePattern && sameTarget && extra.length === 0 ? 'unchanged' : 'updated';
}

/** Removes the rule from each of `buses`; true when there was one to remove. */
async function removeFrom(
  buses: readonly string[],
  name: string,
  deps: RuleManagerDependencies,
): Promise<boolean> {
  let removed = false;
  for (const bus of buses) if (await removeRule(name, poolOf(deps).rulesOn(bus))) removed = true;
  return removed;
}

async function removeRule(name: string, rules: RuleRegistry): Promise<boolean> {
  const existing = await rules.describe(name);
  if (!existing) return false;
  const targets = await rules.targets(name);
  await rules.removeTargets(
    name,
    targets.map((t) => t.id),
  );
  await rules.delete(name);
  return true;
}

/** Upserts the status breadcrumb; writes nothing when the status is what is already recorded. */
async function writeStatus(
  workspace: string,
  status: DefinitionStatus,
  deps: RuleManagerDependencies,
): Promise<void> {
  await deps.store.upsert(
    workspace,
    statusId(status.definition_id),
    {
      schema_name: STATUS_SCHEMA,
      title: `${status.definition_id}: ${status.state}`,
      tags: [
        `definition:${status.definition_id}`,
        `state:${status.state}`,
        'definition-status',
        ...(status.rule_name ? [ruleTag(status.rule_name)] : []),
      ],
      context: { ...status } as Record<string, unknown>,
    },
    { principal: PRINCIPAL },
  );
}

async function deleteStatus(
  workspace: string,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<void> {
  await deps.store.delete(workspace, statusId(definitionId)).catch((error: unknown) => {
    if (!(error instanceof NotFoundError)) throw error;
  });
}

export interface SyncReport {
  workspace: string;
  definitions: number;
  created: number;
  updated: number;
  unchanged: number;
  invalid: number;
  deleted_orphans: number;
}

/**
 * Reconciles every definition of a workspace (placing those refused for want of room, if there is room now), and
 * deletes the workspace's rules, on every bus of the pool, whose definition is gone or whose definition's rule is
 * on another bus.
 */
export async function syncWorkspace(workspace: string, deps: RuleManagerDependencies): Promise<SyncReport> {
  const report: SyncReport = {
    workspace,
    definitions: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    invalid: 0,
    deleted_orphans: 0,
  };
  const placedOn = new Map<string, string | null>();
  for (const schema of [...Object.keys(DEFINITION_SCHEMAS), SCHEDULE_DEFINITION_SCHEMA]) {
    let cursor: string | undefined;
    do {
      const page = await deps.store.list({
        workspace,
        schema_name: schema,
        limit: 100,
        ...(cursor ? { cursor } : {}),
      });
      for (const record of page.items) {
        report.definitions++;
        const { outcome, bus } = await reconcile(workspace, record.id, deps);
        placedOn.set(record.id, bus);
        if (
          outcome === 'created' ||
          outcome === 'updated' ||
          outcome === 'unchanged' ||
          outcome === 'invalid'
        )
          report[outcome]++;
      }
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  const pool = poolOf(deps);
  for (const bus of pool.buses) {
    const rules = pool.rulesOn(bus);
    for (const rule of await rules.list(deps.prefix)) {
      const owner = safeParse(rule.description) as { workspace?: unknown; definition_id?: unknown } | null;
      if (owner?.workspace !== workspace || typeof owner.definition_id !== 'string') continue;
      if (placedOn.has(owner.definition_id) && placedOn.get(owner.definition_id) === bus) continue;
      await removeRule(rule.name, rules);
      report.deleted_orphans++;
      // A definition deleted while its change was lost still held its slots: they are free again.
      if (!placedOn.has(owner.definition_id)) {
        await releaseSlot(workspace, 'rules', owner.definition_id, deps);
        await releaseSlot(workspace, 'definitions', owner.definition_id, deps);
      }
    }
  }
  return report;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * One SQS batch from the rule manager's queue (bodies are change events from its static rule). Failed messages
 * are reported so SQS retries only them, after a back-off.
 */
export async function handleRuleManagerBatch(
  records: readonly SQSRecord[],
  deps: RuleManagerDependencies,
): Promise<SQSBatchResponse> {
  // Messages about different definitions are independent: reconciled concurrently. Messages about the same
  // definition are chained in order (each reconciles to the stored state anyway, but a delete and an update
  // racing on one rule could leave the older outcome last).
  const chains = new Map<string, Promise<unknown>>();
  const { batchItemFailures } = await processSqsBatch(
    records,
    (record) => {
      const key = groupKey(record.body);
      const run = (chains.get(key) ?? Promise.resolve()).then(() => handleOne(record, deps));
      chains.set(
        key,
        run.catch(() => undefined),
      );
      return run;
    },
    { log: deps.log, redelivery: deps.redelivery },
  );
  return { batchItemFailures };
}

function groupKey(body: string): string {
  try {
    const detail = (JSON.parse(body) as { detail?: { workspace?: unknown; id?: unknown } }).detail;
    return `${String(detail?.workspace)}/${String(detail?.id)}`;
  } catch {
    return body;
  }
}

/** Handles one message; throws when it should be retried. */
async function handleOne(
  record: { messageId: string; body: string },
  deps: RuleManagerDependencies,
): Promise<void> {
  try {
    // A ValidationError (not zod's own error) so it is judged like every other bad input below; `instanceof` on
    // zod's error class would also pull the whole `z.core` namespace, every locale included, into the bundle.
    const event = parseOrThrow(ChangeEventSchema, JSON.parse(record.body));
    const { workspace, id, schema_name: schema } = event.detail;
    if (schema !== RULES_SYNC_SCHEMA) {
      await reconcileDefinition(workspace, id, deps);
      return;
    }
    if (event['detail-type'] !== DETAIL_TYPES.created) return;
    const report = await syncWorkspace(workspace, deps);
    await deps.store.create(
      workspace,
      {
        schema_name: SYNC_RESULT_SCHEMA,
        title: `rules sync: ${report.definitions} definitions`,
        tags: [`sync:${id}`],
        context: { request_id: id, ...report },
      },
      {
        principal: PRINCIPAL,
        id: `sync-result-${createHash('sha256').update(id).digest('hex').slice(0, 24)}`,
      },
    );
  } catch (error) {
    if (isRetriable(error)) throw error;
    // A message that can never succeed (not JSON, not a change event, a store refusal): log it and let it go
    // rather than retry it into the DLQ.
    deps.log.error('rule manager dropped an unusable message', {
      messageId: record.messageId,
      error: String(error),
    });
  }
}
