/**
 * Placing a definition's rule on the bus pool and keeping it exact. The rule's pattern is the definition's compiled
 * trigger selectors; its one target is the SQS queue of the definition's executor runner, with the rule-targets
 * dead-letter queue, the retry policy of `topology.bus.ruleTargets` and the definition's workspace as the fair
 * queue's message group (a target that drifted from any of these is put again).
 *
 * A rule stays on the bus it was placed on; a new one goes to the first bus with room (`bus-placement.ts`). A
 * definition no bus has room for is `invalid`, with an error naming the quota (placed by the next `crumbs rules
 * sync` once there is room). A rule found on two buses (a crash between placing and recording) is brought up to
 * date on the one kept before the other is deleted: an event matching both in between is delivered twice and
 * answered once (the executor's claim is per definition × trigger id × version, whichever bus delivered it).
 */

import { type Breadcrumb, canonicalJson } from '#shared/domain/breadcrumb.ts';
import { QuotaExceededError } from '#shared/domain/errors.ts';
import { defaultRunnerOf } from '#shared/domain/runners.ts';
import type { RetryPolicy, RuleRegistry, RuleTarget } from '#shared/ports/rule-registry.ts';
import { topology } from '#shared/topology.ts';
import { addToPlacement, readPlacement } from '../../routing/bus-placement.ts';
import { executorInputTransformer } from '../executor/contract.ts';
import type { DefinitionStatus } from './definition-evaluation.ts';
import {
  type BusPool,
  PRINCIPAL,
  type ReconcileOutcome,
  type RuleManagerDependencies,
} from './rule-manager-deps.ts';

const TARGET_ID = 'executor';

/** After a refusal, a bus is tried after the others for this long (the SDK retries each refusal before it ends). */
const FULL_BUS_MEMORY_MS = 60_000;
const fullUntil = new Map<string, number>();

export function poolOf(deps: RuleManagerDependencies): Required<BusPool> {
  const pool = deps.pool;
  return {
    buses: pool?.buses ?? [deps.busName],
    rulesOn: (bus) => (bus === deps.busName ? deps.rules : (pool?.rulesOn(bus) ?? deps.rules)),
    placementCacheMs: pool?.placementCacheMs ?? 0,
    sleep: pool?.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms))),
  };
}

/** The first bus, then the buses of the pool the workspace's placement names (where its rules can be). */
export async function workspaceBuses(
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

/**
 * Keeps the rule where it is, or places it on the first bus with room; sets `status.event_bus`, or makes the
 * status `invalid` (naming the quota) when no bus of the pool has room.
 */
export async function placeRule(
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
    arn: deps.executorQueueArns[status.runner ?? defaultRunnerOf(status.kind)],
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
export async function removeFrom(
  buses: readonly string[],
  name: string,
  deps: RuleManagerDependencies,
): Promise<boolean> {
  let removed = false;
  for (const bus of buses) if (await removeRule(name, poolOf(deps).rulesOn(bus))) removed = true;
  return removed;
}

export async function removeRule(name: string, rules: RuleRegistry): Promise<boolean> {
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

export function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
