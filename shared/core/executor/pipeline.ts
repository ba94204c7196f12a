/**
 * The universal executor pipeline: one message from an executor queue in, at most one response per
 * (definition, trigger id, trigger version) out. Only `execute` differs between kinds (contract.ts).
 *
 *   parse → definition at its version (definition-cache.ts) → trigger at the version that fired (from its event,
 *   else read: `triggerOf`) → re-check the trigger selectors against it → hops (loop-guard.ts) → claim → assemble
 *   context → execute
 *   (past a grace period, in one of the workspace's slots: workspace-slots.ts) → write outputs (outputs.ts) →
 *   complete the claim
 *
 * Exactly one response: every output id is deterministic (outputs.ts) and the store's create replays an existing
 * id, so duplicate deliveries, a re-execution after a crash (the claim's lease ran out) and a later dead-letter
 * answer (dlq.ts) all land on the same ids; the claim keeps a second worker from executing while the first holds a
 * live lease. A tool's answer is its claim's completion (`answersOnce`); a workflow run takes no claim, its own
 * conditional write being the guard (`exactlyOnceByItself`). Errors: what `isRetriable` (`#shared/domain/errors.ts`) calls retriable fails the message, so SQS
 * delivers it again after a back-off (batch.ts); anything else from `execute`, and an output the store refuses for
 * good (too large, a bad tag), is answered with the kind's `errorOutput` under the first output id.
 */
import { randomUUID } from 'node:crypto';
import {
  type Breadcrumb,
  BreadcrumbSchema,
  type ContextView,
  checksumOf,
  isExpired,
} from '#shared/domain/breadcrumb.ts';
import { DETAIL_TYPES, recordOf } from '#shared/domain/change-event.ts';
import { DEFAULT_HOP_LIMIT, type ParsedDefinition } from '#shared/domain/definitions.ts';
import { isRetriable, NotFoundError, RetriableError, ValidationError } from '#shared/domain/errors.ts';
import { type ModelUsageSum, usageSumOf } from '#shared/domain/llm-usage.ts';
import { inferRole } from '#shared/domain/selector.ts';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { BudgetCounters } from '#shared/ports/budget-counters.ts';
import type { ClaimKey, Claims } from '#shared/ports/claims.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import { noTracing, type Tracing } from '#shared/ports/tracing.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { matchesSelector } from '#shared/routing/compiler.ts';
import { threadBudgetKey } from '../stream/breadth-budget.ts';
import { asDetail, assembleContext } from './context-assembly.ts';
import {
  type AfterWrite,
  correlationOf,
  type ExecutionInput,
  type ExecutorImplementations,
  type ExecutorMessage,
  ExecutorMessageSchema,
  type OutputBreadcrumb,
} from './contract.ts';
import { definitionParts, loadDefinition } from './definition-cache.ts';
import { accountHops, writeLoopStopped } from './loop-guard.ts';
import { outputId, type WriteContext, writeOutputs } from './outputs.ts';
import { definitionForTrigger } from './versions.ts';
import { type SlotPolicy, WorkspaceBusyError, withWorkspaceSlot } from './workspace-slots.ts';

export interface PipelineDeps {
  store: ExecutorStore;
  claims: Claims;
  /** How long a claim holds off other workers: the function timeout. */
  leaseMs: number;
  /** The kinds this function runs (its handler lists them); a message for another kind is retried. */
  implementations: ExecutorImplementations;
  log?: Log;
  clock?: Clock;
  vectorSearch?: VectorSearch | undefined;
  /** Aborted shortly before the Lambda times out (middy's signal); passed to `execute`. */
  signal?: AbortSignal;
  /** One span per trigger, annotated with its correlation keys. @default no tracing */
  tracing?: Tracing;
  /** The workspace's share of this function (workspace-slots.ts); absent: no cap. */
  slots?: SlotPolicy | undefined;
  /**
   * The publisher's thread budget (`shared/core/stream/breadth-budget.ts`): a trigger an executor wrote in a thread
   * whose counter has reached it is dropped, so a storm's backlog already routed does not run. Absent: not checked.
   */
  threadBudget?: { counters: Pick<BudgetCounters, 'read'>; limit: number } | undefined;
}

export type ProcessOutcome =
  | { status: 'responded'; outputIds: string[]; modelUsage: ModelUsageSum }
  | { status: 'errored'; outputIds: string[]; error: string; modelUsage: ModelUsageSum }
  | { status: 'loop-stopped'; outputIds: string[] }
  | { status: 'skipped'; reason: string };

export async function processExecutorMessage(message: unknown, deps: PipelineDeps): Promise<ProcessOutcome> {
  const parsedMessage = ExecutorMessageSchema.safeParse(message);
  if (!parsedMessage.success) {
    // Not retriable, but failing it (rather than dropping it) keeps it in the DLQ for someone to look at.
    throw new InvalidExecutorMessageError(
      parsedMessage.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
  const ref = parsedMessage.data.definition;
  const correlation = correlationOf(parsedMessage.data);
  const tracing = deps.tracing ?? noTracing;
  // The publisher's span for the trigger is the parent (the event carries it): rule and queue are AWS's hops, named
  // on this span, so the write, its publishing and this run are one trace.
  return tracing.span(
    `${ref.kind} trigger`,
    correlation,
    ({ traceId }) =>
      processTrigger(
        parsedMessage.data,
        {
          ...correlation,
          definitionVersion: ref.version,
          ...(traceId !== undefined ? { trace_id: traceId } : {}),
        },
        deps,
      ),
    {
      kind: 'consumer',
      parent: parsedMessage.data.event.detail.traceparent,
      attributes: {
        'messaging.system': 'aws_sqs',
        'messaging.operation.type': 'process',
        'crumbs.definition_kind': ref.kind,
        'crumbs.rule': `${ref.workspace}/${ref.id}`,
        'crumbs.schema_name': parsedMessage.data.event.detail.schema_name,
      },
    },
  );
}

/** The pipeline for one parsed message; `logKeys` (the correlation keys and more) go on every log line about it. */
async function processTrigger(
  { definition: ref, event }: ExecutorMessage,
  keys: Readonly<Record<string, string | number>>,
  deps: PipelineDeps,
): Promise<ProcessOutcome> {
  let logKeys = keys;
  const log = deps.log ?? silentLog;
  const detail = event.detail;
  if (event['detail-type'] === DETAIL_TYPES.deleted) return skip(log, 'the trigger was deleted', logKeys);
  if (detail.workspace !== ref.workspace) return skip(log, 'the trigger is in another workspace', logKeys);

  let parsed: ParsedDefinition;
  try {
    parsed = await loadDefinition(ref, deps.store);
  } catch (error) {
    if (error instanceof NotFoundError) return skip(log, 'the definition was deleted', logKeys);
    if (!(error instanceof ValidationError)) throw error;
    log.error('the definition does not parse; nothing to run', { ...logKeys, error: error.message });
    return { status: 'skipped', reason: `invalid definition: ${error.message}` };
  }
  if (parsed.kind !== ref.kind)
    return skip(log, `the definition is a ${parsed.kind}, not a ${ref.kind}`, logKeys);

  let trigger: Breadcrumb;
  let triggerView: ContextView | undefined;
  try {
    ({ trigger, view: triggerView } = await triggerOf(ref.workspace, detail, deps));
  } catch (error) {
    if (error instanceof NotFoundError) return skip(log, 'the trigger is gone', logKeys);
    throw error;
  }

  // A request may name the version to run (versions.ts): the rule was compiled from the latest.
  const chosen = await definitionForTrigger(ref, parsed, trigger, deps.store);
  if ('gone' in chosen) return skip(log, chosen.gone, logKeys);
  ({ ref, parsed } = chosen);
  if (ref.version !== keys.definitionVersion) logKeys = { ...logKeys, definitionVersion: ref.version };

  // The rule matched the event; the event may have left a large context out, so match the whole trigger.
  const parts = definitionParts(parsed);
  const selector = parts.triggers.find(
    (s) => inferRole(s) === 'trigger' && matchesSelector(s, asDetail(trigger)),
  );
  if (!selector) return skip(log, 'no trigger selector matches the stored trigger', logKeys);

  const principal = parts.principal;
  if (trigger.updated_by === principal)
    return skip(log, 'the trigger was written by this definition', logKeys);

  const thread = await threadBudgetOf(trigger, deps);
  if (thread === 'spent') {
    return skip(log, 'the thread reached its breadth budget (the publisher stopped routing it)', logKeys);
  }

  const implementation = deps.implementations[parsed.kind];
  if (!implementation) {
    // A wiring fault of this function, not of the message: retry (and alarm on the DLQ) rather than answer.
    throw new RetriableError(`this function runs no executor implementation of kind "${parsed.kind}"`);
  }

  const ownRequest = await implementation.ownRequestOf?.({ definition: parsed.definition, trigger });
  const { hop, causation, continues } = await accountHops(trigger, principal, ownRequest, deps.store);
  const writeCtx: WriteContext = {
    store: deps.store,
    workspace: ref.workspace,
    kind: parsed.kind,
    definitionId: ref.id,
    trigger,
    principal,
    causation,
  };

  const hopLimit = parsed.definition.hop_limit ?? DEFAULT_HOP_LIMIT;
  if (hop >= hopLimit) {
    const id = await writeLoopStopped(writeCtx, { ref, trigger, hop, hopLimit });
    log.warn('hop limit reached; wrote system.loop_stopped.v1 instead of executing', {
      ...logKeys,
      hop,
      hopLimit,
    });
    return { status: 'loop-stopped', outputIds: [id] };
  }

  const claimKey: ClaimKey = {
    workspace: ref.workspace,
    executor: ref.id,
    triggerId: trigger.id,
    triggerVersion: trigger.version,
  };
  const claims: Claims = implementation.exactlyOnceByItself ? noClaims : deps.claims;
  const claim = await claims.acquire(claimKey, deps.leaseMs);
  if (claim.status === 'done') return skip(log, 'already answered', logKeys);
  // A kind that answers once completes its claim by answering: a claim still running (a duplicate delivery, or a
  // worker that answered and stopped) is done when the answer exists.
  const answered = async () =>
    implementation.answersOnce === true &&
    (await exists(deps.store, ref.workspace, outputId(parsed.kind, ref.id, trigger.id, trigger.version, 0)));
  if (claim.status === 'busy' && (await answered())) return skip(log, 'already answered', logKeys);
  if (claim.status === 'busy') {
    // Come back when the lease runs out: the holder has answered by then, or it died and the lease is free.
    const now = (deps.clock ?? systemClock).now().getTime();
    throw new RetriableError(
      `another worker holds the claim until ${new Date(claim.leaseUntil).toISOString()}`,
      { retryAfterSeconds: Math.max(1, Math.ceil((claim.leaseUntil - now) / 1000) + 1) },
    );
  }
  if (claim.takeover && (await answered())) {
    await claims.complete(claimKey, claim.token);
    return skip(log, 'already answered', logKeys);
  }
  if (claim.takeover) log.warn('took over an expired claim; executing again', logKeys);
  if (continues !== undefined) logKeys = { ...logKeys, continues };

  try {
    triggerView ??= await contextViewOf(ref.workspace, trigger, deps.store);
    const context = await assembleContext(
      {
        workspace: ref.workspace,
        trigger,
        triggerView,
        selectors: parts.context,
      },
      { store: deps.store, vectorSearch: deps.vectorSearch, ...(deps.log ? { log: deps.log } : {}) },
    );
    const executionTrigger: ExecutionInput<unknown>['trigger'] = {
      ...triggerView,
      workspace: trigger.workspace,
      created_by: trigger.created_by,
      causation: trigger.causation,
    };
    const signal = deps.signal ?? new AbortController().signal;
    const afterWrites: AfterWrite[] = [];

    let outputs: readonly OutputBreadcrumb[];
    let failure: string | undefined;
    try {
      ({ outputs } = await withWorkspaceSlot(
        deps.slots,
        { workspace: ref.workspace, holder: claim.token },
        signal,
        (slotSignal) =>
          implementation.execute({
            definition: parsed.definition,
            definitionRef: ref,
            principal,
            trigger: executionTrigger,
            context,
            causation,
            signal: slotSignal,
            afterWrite: (callback) => afterWrites.push(callback),
          }),
        log,
      ));
    } catch (error) {
      if (error instanceof WorkspaceBusyError || isRetriable(error, signal)) throw error;
      failure = error instanceof Error ? error.message : String(error);
      log.error('execution failed; answering with an error breadcrumb', { ...logKeys, error: failure });
      outputs = [
        implementation.errorOutput({
          definition: parsed.definition,
          trigger: executionTrigger,
          error: failure,
        }),
      ];
    }

    // The claim is marked done after the answer, in a request of its own: a crash in between leaves the claim
    // running, and the redelivery after its lease re-executes and replays the answer (its id is derived from the
    // trigger, so nothing is written twice) before marking it done. A kind that answers once needs no such write:
    // its answer, under the derived id, is the completion (checked when a worker takes the claim over).
    // A thread near its budget when this began may have reached it while this ran (a storm's executions run side
    // by side): read its counter again, and write nothing into a stopped thread.
    if (thread === 'near' && (await threadBudgetOf(trigger, deps)) === 'spent') {
      await claims.complete(claimKey, claim.token);
      return skip(log, 'the thread reached its breadth budget while this ran; nothing written', logKeys);
    }
    let outputIds: string[];
    try {
      ({ ids: outputIds } = await writeOutputs(outputs, writeCtx));
    } catch (error) {
      if (isRetriable(error) || failure !== undefined) throw error;
      // An output the store refuses (too large, bad tag) will be refused again: answer with the error instead.
      failure = `the executor's output was refused: ${error instanceof Error ? error.message : String(error)}`;
      log.error('output refused; answering with an error breadcrumb', { ...logKeys, error: failure });
      ({ ids: outputIds } = await writeOutputs(
        [
          implementation.errorOutput({
            definition: parsed.definition,
            trigger: executionTrigger,
            error: failure,
          }),
        ],
        writeCtx,
      ));
    }
    const answeredOnce =
      implementation.answersOnce === true &&
      outputs.length === 1 &&
      outputs[0]?.id === undefined &&
      outputs[0]?.upsertId === undefined &&
      outputIds[0] === outputId(parsed.kind, ref.id, trigger.id, trigger.version, 0);
    if (!answeredOnce) await claims.complete(claimKey, claim.token);
    await runAfterWrites(afterWrites, { outputIds, ...(failure !== undefined ? { failure } : {}) }, log);
    log.info(failure === undefined ? 'responded' : 'answered with an error', { ...logKeys, outputIds });
    // What the answer records of its model calls (`llm_usage`), for the executor's metrics.
    const modelUsage = usageSumOf(outputs.map((o) => o.context));
    return failure === undefined
      ? { status: 'responded', outputIds, modelUsage }
      : { status: 'errored', outputIds, error: failure, modelUsage };
  } catch (error) {
    // Let the retry start at once instead of waiting out the lease; outputs already written are replayed.
    await claims.release(claimKey, claim.token).catch((releaseError: unknown) => {
      log.warn('could not release the claim; the retry waits for the lease', {
        ...logKeys,
        error: String(releaseError),
      });
    });
    throw error;
  }
}

/**
 * Where the trigger's thread stands against the publisher's thread budget, when the trigger is one the publisher
 * counts (an executor's write, hop 1 or more): one read of the counter the publisher keeps. The publisher stops
 * routing a thread at its budget, but events routed before the stop wait in the queues: a trigger of a `spent`
 * thread is dropped before it runs, and one of a thread `near` its budget (past `NEAR_THREAD_BUDGET` of it) is read
 * again before its outputs are written, so the executions already running when the budget is reached write nothing
 * either. A storm's writes then stay within the budget plus what the publisher had not flushed (one step) and what
 * was being written at that moment. A counter that cannot be read lets the trigger run (as the publisher routes
 * when it cannot count).
 */
async function threadBudgetOf(trigger: Breadcrumb, deps: PipelineDeps): Promise<'spent' | 'near' | 'room'> {
  const budget = deps.threadBudget;
  const thread = trigger.causation?.thread;
  if (budget === undefined || thread === undefined || (trigger.causation?.hop ?? 0) < 1) return 'room';
  try {
    const count = await budget.counters.read(trigger.workspace, threadBudgetKey(thread));
    if (count >= budget.limit) return 'spent';
    return count >= budget.limit * NEAR_THREAD_BUDGET ? 'near' : 'room';
  } catch (error) {
    (deps.log ?? silentLog).warn('could not read the thread budget; running the trigger', {
      thread,
      error: (error as Error).message,
    });
    return 'room';
  }
}

/** Past this share of its thread budget, a trigger's thread is read again before its outputs are written. */
export const NEAR_THREAD_BUDGET = 0.8;

/** The implementation's after-write callbacks: what they do is a courtesy (a stream's last event), never a write. */
async function runAfterWrites(
  callbacks: readonly AfterWrite[],
  written: Parameters<AfterWrite>[0],
  log: Log,
): Promise<void> {
  for (const callback of callbacks) {
    try {
      await callback(written);
    } catch (error) {
      log.warn('an after-write callback failed; the outputs stand', { error: String(error) });
    }
  }
}

/**
 * The trigger at the version that fired, and its context view when it came with the read.
 *
 * An event whose context fits carries the whole version (change-event.ts `recordOf`), and that is the trigger: a
 * version never changes, so a read would return the same record. The event is trusted that far because only the
 * publisher writes events (`events:PutEvents` on the buses is granted to the publisher function alone,
 * `infra/constructs/crumbs-function.ts` `bindBus`; an executor queue accepts only the compiled rules of those
 * buses, `work-queue.ts`), and the publisher builds them from the table's stream; the workspace check above still
 * holds it to the definition's workspace, the checksum to its own context. An event that left the context out, or
 * of a publisher that did not send the whole record, is read as stored, with the schema's settings (one request).
 *
 * A trigger deleted after its event was routed is still answered, once, under the same derived id: its event
 * stands for a version that existed, and the read never closed that window (a delete just after the read had the
 * same outcome). Its deletion is an event of its own, which executors skip. One that expired is gone, as a read
 * would say.
 */
async function triggerOf(
  workspace: string,
  detail: ExecutorMessage['event']['detail'],
  deps: PipelineDeps,
): Promise<{ trigger: Breadcrumb; view?: ContextView | undefined }> {
  const carried = recordOf(detail);
  const parsed = carried === undefined ? undefined : BreadcrumbSchema.safeParse(carried);
  if (
    parsed?.success &&
    parsed.data.workspace === workspace &&
    checksumOf(parsed.data.context) === detail.checksum
  ) {
    const trigger = parsed.data;
    if (isExpired(trigger, (deps.clock ?? systemClock).now().getTime()))
      throw new NotFoundError(`breadcrumb ${trigger.id} expired`);
    return { trigger };
  }
  // With the context view when the store can read both at once (one request: head, version, schema settings).
  if (deps.store.getVersionWithView) {
    const { record, view } = await deps.store.getVersionWithView(
      workspace,
      detail.id,
      detail.version,
      detail.schema_name,
    );
    return { trigger: record, view };
  }
  return { trigger: await deps.store.getVersion(workspace, detail.id, detail.version) };
}

/**
 * How old the schema's llm_hints defaults in a trigger's context view may be (the store's settings cache, read
 * again past this). They change only when someone edits the schema's `schema.def.v1`, so an edit shows in the
 * trigger views of a warm executor instance within 5 s. That is shorter than the 30 s writes allow for a schema's
 * TTL default (`SCHEMA_SETTINGS_CACHE_MS`) because hints decide what a model is shown (an `exclude` may hide a
 * field), and long enough that a busy instance reads each schema's settings once per 5 s instead of per trigger.
 */
export const TRIGGER_SCHEMA_SETTINGS_MAX_AGE_MS = 5_000;

/** The trigger's context view (its llm_hints over its schema's, the latter cached where the store can). */
async function contextViewOf(
  workspace: string,
  trigger: Breadcrumb,
  store: ExecutorStore,
): Promise<ContextView> {
  const [view] = store.contextViewsWithin
    ? await store.contextViewsWithin(workspace, [trigger], TRIGGER_SCHEMA_SETTINGS_MAX_AGE_MS)
    : await store.contextViews(workspace, [trigger]);
  if (!view) throw new Error('the store returned no context view for the trigger');
  return view;
}

function skip(log: Log, reason: string, keys: Record<string, unknown>): ProcessOutcome {
  log.info(`skipped: ${reason}`, keys);
  return { status: 'skipped', reason };
}

/** An SQS body that is not an executor message: kept for the DLQ, never executed. */
export class InvalidExecutorMessageError extends Error {
  constructor(detail: string) {
    super(`not an executor message: ${detail}`);
    this.name = 'InvalidExecutorMessageError';
  }
}

async function exists(store: ExecutorStore, workspace: string, id: string): Promise<boolean> {
  try {
    await store.get(workspace, id);
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

/** The claims of a kind that needs none (`exactlyOnceByItself`): always acquired, nothing written. */
const noClaims: Claims = {
  acquire: async () => ({ status: 'acquired', token: randomUUID(), takeover: false }),
  complete: async () => undefined,
  release: async () => undefined,
};
