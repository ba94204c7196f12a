/**
 * What a definition's workspace must allow before the definition gets a rule. What all workspaces share is bounded
 * per workspace: a definition holds a slot of its workspace's definitions quota, and one of its rules quota while
 * it has a rule (`ENV.maxDefinitionsPerWorkspace`, `ENV.maxRulesPerWorkspace`, a workspace's own in
 * `ENV.workspaceQuotas`; slots taken atomically, given back when it is deleted or loses its rule); past either it
 * is `invalid`, naming the setting. A `secret_ref` must name a secret of the definition's own workspace
 * (`secret-refs.ts`): the secret source is asked whether it has it, never for its value.
 */
import type { FieldIssue } from '#shared/domain/errors.ts';
import type { SecretRefUse } from '#shared/domain/secret-refs.ts';
import type { QuotaName } from '#shared/ports/workspace-quotas.ts';
import { ENV } from '#shared/topology.ts';
import type { RuleManagerDependencies } from './rule-manager-deps.ts';

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
export async function takeSlot(
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

export async function releaseSlot(
  workspace: string,
  quota: QuotaName,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<void> {
  await deps.quotas?.store.release(workspace, quota, definitionId);
}

/**
 * The `secret_ref`s that name no secret of the definition's own workspace. Their shape was checked with the
 * definition (no path, ARN or `..` gets here); this asks the secret source whether the workspace has each one.
 */
export async function missingSecrets(
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
