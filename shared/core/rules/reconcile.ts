/**
 * Reconciling one definition, to its *stored* state rather than to what the event said, so events may arrive
 * late, twice or out of order and the outcome is the same; a second run changes nothing. A valid definition
 * (`definition-evaluation.ts`) whose workspace allows it (`workspace-checks.ts`) has exactly one rule
 * (`rule-placement.ts`); an invalid or deleted one has none; a schedule has its schedule (`schedule-manager.ts`).
 * The outcome is recorded in the definition's status breadcrumb (`status-breadcrumbs.ts`).
 */
import { NotFoundError } from '#shared/domain/errors.ts';
import { DEFINITION_SCHEMAS, SCHEDULE_DEFINITION_SCHEMA } from '#shared/topology.ts';
import { evaluateDefinition, markInvalid, ruleName } from './definition-evaluation.ts';
import { PRINCIPAL, type ReconcileOutcome, type RuleManagerDependencies } from './rule-manager-deps.ts';
import { placeRule, removeFrom, workspaceBuses } from './rule-placement.ts';
import { reconcileSchedule } from './schedule-manager.ts';
import { deleteStatus, statusId, writeStatus } from './status-breadcrumbs.ts';
import { missingPins } from './version-pins.ts';
import { missingSecrets, releaseSlot, takeSlot } from './workspace-checks.ts';

export async function reconcileDefinition(
  workspace: string,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<ReconcileOutcome> {
  return (await reconcile(workspace, definitionId, deps)).outcome;
}

/** Reconciles one definition; says which bus its rule is on now (none when it has no rule). */
export async function reconcile(
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
    deps.modelAliases,
  );
  markInvalid(status, refusedDefinition);
  if (status.state === 'active') markInvalid(status, await missingSecrets(workspace, secretRefs, deps));
  if (status.state === 'active') markInvalid(status, await missingPins(workspace, record, deps.store));
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
