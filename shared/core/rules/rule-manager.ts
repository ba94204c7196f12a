/**
 * The rule manager: keeps exactly one EventBridge rule per valid definition, and one Scheduler schedule per valid
 * schedule definition, each recorded in the definition's status breadcrumb. Its message is a change event from its
 * static rule: a definition changed (reconciled, `reconcile.ts`), or a `system.rules_sync.v1` request was created
 * (its workspace synced, `rules-sync.ts`, the report written as a `system.rules_sync_result.v1` breadcrumb whose
 * id derives from the request's). A message that can never succeed is logged and dropped; a retriable failure
 * throws, so SQS delivers it again. Messages about one definition run one after the other (`definitionKeyOf`).
 *
 * Its parts: evaluate (`definition-evaluation.ts`), admit (`workspace-checks.ts`), place (`rule-placement.ts`),
 * record (`status-breadcrumbs.ts`), reconcile, sync, schedules (`schedule-manager.ts`); the dead letters of the
 * rules' targets are answered by `rule-target-dead-letters.ts`.
 */
import { createHash } from 'node:crypto';
import { parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { ChangeEventSchema, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import { isRetriable } from '#shared/domain/errors.ts';
import { SYNC_RESULT_SCHEMA } from '#shared/domain/protocol.ts';
import { RULES_SYNC_SCHEMA } from '#shared/topology.ts';
import { reconcileDefinition } from './reconcile.ts';
import { PRINCIPAL, type RuleManagerDependencies } from './rule-manager-deps.ts';
import { syncWorkspace } from './rules-sync.ts';

/**
 * The key of the definition a message is about: messages about different definitions are independent, those about
 * one definition are handled in order (each reconciles to the stored state anyway, but a delete and an update
 * racing on one rule could leave the older outcome last).
 */
export function definitionKeyOf(record: { body: string }): string {
  const body = record.body;
  try {
    const detail = (JSON.parse(body) as { detail?: { workspace?: unknown; id?: unknown } }).detail;
    return `${String(detail?.workspace)}/${String(detail?.id)}`;
  } catch {
    return body;
  }
}

/** One message of the rule manager's queue; throws when it should be retried. */
export async function handleRuleManagerMessage(
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
