/**
 * Dead letters of the compiled rules' targets: change events EventBridge matched to a definition's rule but could
 * not deliver to the executor queue (the queue was gone, or SQS kept failing past the target's retry policy,
 * `topology.bus.ruleTargets`). EventBridge puts the original event in the rule-targets DLQ with the message
 * attributes RULE_ARN, TARGET_ARN, ERROR_CODE and ERROR_MESSAGE. The trigger never reached its executor, so nobody
 * would ever answer it: this answers it with the same error breadcrumb an executor's own dead letters get
 * (`executor/dlq.ts`), under the response's deterministic id.
 *
 * From the dead letter to the definition without asking EventBridge: RULE_ARN → rule name → the definition's status
 * breadcrumb, tagged `rule:<rule name>` in the event's workspace (`shared/domain/definition-status.ts`) → the
 * definition id, version and kind the rule was compiled from.
 *
 * A dead letter that cannot be answered (not a change event, no rule ARN, no definition has that rule any more) is
 * logged and dropped; store failures are reported back for another try.
 */
import type { SQSRecord } from 'aws-lambda';
import { ChangeEventSchema } from '#shared/domain/change-event.ts';
import { isCrumbsStatus, ruleTag } from '#shared/domain/definition-status.ts';
import { STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import { silentLog } from '#shared/ports/log.ts';
import { EXECUTOR_KINDS } from '#shared/topology.ts';
import {
  type DeadLetterDeps,
  type DeadLetterOutcome,
  handleDeadLetter,
  handleExecutorDeadLetter,
} from '../executor/dlq.ts';

/** The message attribute EventBridge sets on every dead letter of a rule target. */
const RULE_ARN = 'RULE_ARN';

function attribute(record: SQSRecord, name: string): string | undefined {
  const value = record.messageAttributes?.[name];
  return value?.stringValue ?? undefined;
}

/** True for a message EventBridge dead-lettered from a rule target (rather than one SQS redrove from a queue). */
export function isRuleTargetDeadLetter(record: SQSRecord): boolean {
  return attribute(record, RULE_ARN) !== undefined;
}

/** `arn:aws:events:<region>:<account>:rule/<bus>/<name>` (or `rule/<name>` on the default bus) → `<name>`. */
export function ruleNameOf(ruleArn: string): string | undefined {
  const match = /:rule\/(?:[^/]+\/)?([^/]+)$/.exec(ruleArn);
  return match?.[1];
}

export async function handleRuleTargetDeadLetter(
  record: SQSRecord,
  deps: DeadLetterDeps,
): Promise<DeadLetterOutcome> {
  const log = deps.log ?? silentLog;
  const drop = (reason: string, keys: Record<string, unknown> = {}): DeadLetterOutcome => {
    log.error(`dropped a dead-lettered rule target event: ${reason}`, {
      messageId: record.messageId,
      ...keys,
    });
    return { status: 'dropped', reason };
  };
  const ruleArn = attribute(record, RULE_ARN) ?? '';
  const ruleName = ruleNameOf(ruleArn);
  if (!ruleName) return drop(`no rule name in RULE_ARN "${ruleArn}"`);
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    return drop('the body is not JSON', { ruleName });
  }
  const event = ChangeEventSchema.safeParse(body);
  if (!event.success) return drop('the body is not a crumbs change event', { ruleName });
  const { workspace } = event.data.detail;

  const statuses = await deps.store.list({
    workspace,
    schema_name: STATUS_SCHEMA,
    tag: ruleTag(ruleName),
    limit: 10,
  });
  const status = statuses.items.find(isCrumbsStatus)?.context;
  const kind = EXECUTOR_KINDS.find((k) => k === status?.kind);
  if (
    !status ||
    typeof status.definition_id !== 'string' ||
    typeof status.definition_version !== 'number' ||
    typeof status.definition_schema !== 'string' ||
    kind === undefined
  ) {
    return drop('no definition has this rule any more', { ruleName, workspace });
  }
  const code = attribute(record, 'ERROR_CODE') ?? 'UNKNOWN';
  const message = attribute(record, 'ERROR_MESSAGE');
  return handleDeadLetter(
    {
      definition: {
        id: status.definition_id,
        version: status.definition_version,
        workspace,
        kind,
        schema_name: status.definition_schema,
      },
      event: event.data,
    },
    deps,
    `EventBridge could not deliver it to the ${typeof status.runner === 'string' ? status.runner : kind} queue: ${code}${message ? ` ${message}` : ''}`,
  );
}

/**
 * One message of any DLQ the DLQ handler reads: rule-target dead letters are answered here, executor dead letters
 * by `handleExecutorDeadLetter`. Only retriable failures throw (to be tried again).
 */
export async function handleDeadLetterRecord(record: SQSRecord, deps: DeadLetterDeps): Promise<void> {
  if (isRuleTargetDeadLetter(record)) await handleRuleTargetDeadLetter(record, deps);
  else await handleExecutorDeadLetter(record, deps);
}
