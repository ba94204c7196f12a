/**
 * `crumbs rules sync` for one workspace: every definition is reconciled again (so one refused for want of room is
 * placed once there is room), and the workspace's rules on every bus of the pool are deleted where their
 * definition is gone or its rule is on another bus, giving back the slots of a definition whose deletion was never
 * reconciled.
 */
import { DEFINITION_SCHEMAS, SCHEDULE_DEFINITION_SCHEMA } from '#shared/topology.ts';
import { reconcile } from './reconcile.ts';
import type { RuleManagerDependencies } from './rule-manager-deps.ts';
import { poolOf, removeRule, safeParse } from './rule-placement.ts';
import { releaseSlot } from './workspace-checks.ts';

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
