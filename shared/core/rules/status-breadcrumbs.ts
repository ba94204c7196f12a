/**
 * The `definition.status.v1` breadcrumb of each definition (id `statusId`; tagged `definition:<id>`, and
 * `rule:<rule name>` while it has a rule, which is how the DLQ handler finds the definition of a rule target's
 * dead letter): its state, errors, warnings, rule, bus, pattern and model. Written only when it changed, deleted
 * with the definition.
 */
import { createHash } from 'node:crypto';
import { ruleTag } from '#shared/domain/definition-status.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import type { DefinitionStatus } from './definition-evaluation.ts';
import { PRINCIPAL, type RuleManagerDependencies } from './rule-manager-deps.ts';

export function statusId(definitionId: string): string {
  return `status-${createHash('sha256').update(definitionId).digest('hex').slice(0, 24)}`;
}

/** Upserts the status breadcrumb; writes nothing when the status is what is already recorded. */
export async function writeStatus(
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

export async function deleteStatus(
  workspace: string,
  definitionId: string,
  deps: RuleManagerDependencies,
): Promise<void> {
  await deps.store.delete(workspace, statusId(definitionId)).catch((error: unknown) => {
    if (!(error instanceof NotFoundError)) throw error;
  });
}
