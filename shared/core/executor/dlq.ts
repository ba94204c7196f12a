/**
 * Dead-lettered executor messages: SQS gave up on them (every receive failed, e.g. a tool that keeps timing out
 * retriably, or a store that kept throttling). Whoever asked must still get an answer, so this writes the kind's
 * error answer (answers.ts) under the same deterministic id the response would have had: if a response was written after
 * all, the create replays it and nothing new appears; otherwise the error is the one response.
 *
 * What cannot be answered (a body that is not an executor message, a deleted definition) is logged and dropped:
 * there is nobody to answer, and keeping it would only redeliver it.
 */
import type { SQSRecord } from 'aws-lambda';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { DETAIL_TYPES } from '#shared/domain/change-event.ts';
import type { ParsedDefinition } from '#shared/domain/definitions.ts';
import { isRetriable, NotFoundError } from '#shared/domain/errors.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import { type CorrelationKeys, noTracing, type Tracing } from '#shared/ports/tracing.ts';
import { errorAnswer } from './answers.ts';
import { parseBody } from './batch.ts';
import {
  correlationOf,
  type ExecutionInput,
  type ExecutorMessage,
  ExecutorMessageSchema,
} from './contract.ts';
import { definitionParts, loadDefinition } from './definition-cache.ts';
import { outputCausation, writeOutputs } from './outputs.ts';

export interface DeadLetterDeps {
  store: ExecutorStore;
  log?: Log;
  /** One span per dead letter, annotated with the trigger's correlation keys. @default no tracing */
  tracing?: Tracing;
}

export type DeadLetterOutcome =
  | { status: 'answered'; outputId: string }
  | { status: 'dropped'; reason: string };

export async function handleDeadLetter(
  message: unknown,
  deps: DeadLetterDeps,
  reason?: string,
): Promise<DeadLetterOutcome> {
  const log = deps.log ?? silentLog;
  const parsed = ExecutorMessageSchema.safeParse(message);
  if (!parsed.success) return drop(log, 'not an executor message', {});
  const keys = correlationOf(parsed.data);
  return (deps.tracing ?? noTracing).span('dead letter', keys, () =>
    answerDeadLetter(parsed.data, keys, deps, reason),
  );
}

async function answerDeadLetter(
  { definition: ref, event }: ExecutorMessage,
  keys: CorrelationKeys,
  deps: DeadLetterDeps,
  reason: string | undefined,
): Promise<DeadLetterOutcome> {
  const log = deps.log ?? silentLog;
  const detail = event.detail;
  if (event['detail-type'] === DETAIL_TYPES.deleted) return drop(log, 'the trigger was deleted', keys);

  let definition: ParsedDefinition;
  try {
    definition = await loadDefinition(ref, deps.store);
  } catch (error) {
    if (isRetriable(error)) throw error;
    return drop(log, `the definition cannot be loaded: ${(error as Error).message}`, keys);
  }
  let trigger: Breadcrumb | undefined;
  try {
    trigger = await deps.store.getVersion(ref.workspace, detail.id, detail.version);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
  const executionTrigger: ExecutionInput<unknown>['trigger'] | undefined = trigger
    ? {
        ...((await deps.store.contextViews(ref.workspace, [trigger]))[0] ?? toView(trigger)),
        workspace: trigger.workspace,
        created_by: trigger.created_by,
        causation: trigger.causation,
      }
    : undefined;

  const error = `the ${definition.kind} executor could not process this trigger and gave up${reason ? ` (${reason})` : ''}`;
  const output = errorAnswer(definition, executionTrigger, error);
  const { principal } = definitionParts(definition);
  const {
    ids: [outputId],
  } = await writeOutputs([output], {
    store: deps.store,
    workspace: ref.workspace,
    kind: definition.kind,
    definitionId: ref.id,
    trigger: { id: detail.id, version: detail.version },
    principal,
    causation: outputCausation({
      id: detail.id,
      version: detail.version,
      causation: trigger?.causation ?? detail.causation,
    }),
  });
  log.warn('answered a dead-lettered trigger with an error breadcrumb', { ...keys, outputId });
  return { status: 'answered', outputId: outputId ?? '' };
}

function toView(record: Breadcrumb) {
  const { id, schema_name, title, tags, version, updated_at, context } = record;
  return { id, schema_name, title, tags, version, updated_at, context };
}

function drop(log: Log, reason: string, keys: Record<string, unknown>): DeadLetterOutcome {
  log.error(`dropped a dead-lettered message: ${reason}`, keys);
  return { status: 'dropped', reason };
}

/** One executor dead letter: answers it; only store failures throw (for another try). */
export async function handleExecutorDeadLetter(record: SQSRecord, deps: DeadLetterDeps): Promise<void> {
  let body: unknown;
  try {
    body = parseBody(record.body);
  } catch {
    drop(deps.log ?? silentLog, 'the body is not JSON', { messageId: record.messageId });
    return;
  }
  await handleDeadLetter(body, deps, 'every delivery failed and SQS moved it to the dead-letter queue');
}
