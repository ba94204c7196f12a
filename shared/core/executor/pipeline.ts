/**
 * The universal executor pipeline: one message from an executor queue in, at most one response per
 * (definition, trigger id, trigger version) out. Only `execute` differs between kinds (registry.ts).
 *
 *   parse → definition at its version (cached per warm container) → trigger at the version that fired →
 *   re-check the trigger selectors against the stored trigger → hop limit → claim → assemble context →
 *   execute → write outputs (deterministic ids) → complete the claim
 *
 * Exactly one response: every output id is derived from (definition id, trigger id, trigger version, index),
 * and the store's create returns the original when the id exists. So duplicate deliveries, a re-execution after
 * a crash (the claim's lease ran out) and a later dead-letter answer (dlq.ts) all land on the same ids. The
 * claim keeps a second worker from executing while the first still holds a live lease.
 *
 * Errors: retriable ones (RetriableError, SDK throttling and timeouts, the Lambda running out of time) fail the
 * message so SQS redelivers it; anything else from `execute` is answered with the kind's `errorOutput` under the
 * first output id, so nobody waits forever. Store failures while writing are retried through SQS as well.
 */
import { createHash } from 'node:crypto';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import {
  type Breadcrumb,
  CreateBreadcrumbSchema,
  checksumOf,
  parseOrThrow,
} from '#shared/domain/breadcrumb.ts';
import { type Causation, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import {
  contextSelectors,
  DEFAULT_HOP_LIMIT,
  definitionPrincipal,
  type ParsedDefinition,
  parseDefinition,
  triggerSelectors,
} from '#shared/domain/definitions.ts';
import {
  isCrumbsError,
  NotFoundError,
  RetriableError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import { inferRole, type Selector } from '#shared/domain/selector.ts';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import { noTracing, type Tracing } from '#shared/ports/tracing.ts';
import { matchesSelector } from '#shared/routing/compiler.ts';
import type { ExecutorKind } from '#shared/topology.ts';
import type { ClaimKey, Claims } from './claims.ts';
import { asDetail, assembleContext, type ExecutorStore, type VectorSearch } from './context-assembly.ts';
import {
  correlationOf,
  type DefinitionRef,
  type ExecutionInput,
  type ExecutorKindImplementation,
  type ExecutorMessage,
  ExecutorMessageSchema,
  type OutputBreadcrumb,
} from './contract.ts';
import { resolveKind } from './registry.ts';

export const LOOP_STOPPED_SCHEMA = 'system.loop_stopped.v1';
const LOOP_GUARD_PRINCIPAL = 'system:loop-guard';

export interface PipelineDeps {
  store: ExecutorStore;
  claims: Claims;
  /** How long a claim holds off other workers: the function timeout. */
  leaseMs: number;
  log?: Log;
  clock?: Clock;
  vectorSearch?: VectorSearch | undefined;
  /** Aborted shortly before the Lambda times out (middy's signal); passed to `execute`. */
  signal?: AbortSignal;
  /** Kind implementations; the registry (registry.ts) when absent. Tests pass fakes here. */
  implementations?: Partial<Record<ExecutorKind, ExecutorKindImplementation<unknown>>>;
  /** One span per trigger, annotated with its correlation keys. @default no tracing */
  tracing?: Tracing;
}

export type ProcessOutcome =
  | { status: 'responded'; outputIds: string[] }
  | { status: 'errored'; outputIds: string[]; error: string }
  | { status: 'loop-stopped'; outputIds: string[] }
  | { status: 'skipped'; reason: string };

// ---------------------------------------------------------------------------------------------------------------
// Definitions, cached per warm container by (workspace, id, version): a version never changes.

const definitionCache = new Map<string, ParsedDefinition>();
const MAX_CACHED_DEFINITIONS = 500;

async function loadDefinition(ref: DefinitionRef, store: ExecutorStore): Promise<ParsedDefinition> {
  const key = `${ref.workspace}/${ref.id}@${ref.version}`;
  const cached = definitionCache.get(key);
  if (cached) return cached;
  const record = await store.getVersion(ref.workspace, ref.id, ref.version);
  const parsed = parseDefinition(record.schema_name, record.context);
  if (definitionCache.size >= MAX_CACHED_DEFINITIONS) definitionCache.clear();
  definitionCache.set(key, parsed);
  return parsed;
}

/** Test seam: forget cached definitions. */
export function clearDefinitionCache(): void {
  definitionCache.clear();
}

// ---------------------------------------------------------------------------------------------------------------
// Deterministic ids and causation

/** The id of output `index` for this (definition, trigger, version): `<kind>-<26 hex>`. */
export function outputId(
  kind: ExecutorKind,
  definitionId: string,
  triggerId: string,
  triggerVersion: number,
  index: number | string,
): string {
  const hash = createHash('sha256')
    .update(`${definitionId}\u0000${triggerId}\u0000${triggerVersion}\u0000${index}`)
    .digest('hex');
  return `${kind}-${hash.slice(0, 26)}`;
}

/** Causation of what an executor writes in answer to a trigger: caused by it, same thread, one hop further. */
export function outputCausation(trigger: {
  id: string;
  version: number;
  causation?: Causation | null | undefined;
}): Causation {
  return {
    caused_by: `${trigger.id}@${trigger.version}`,
    thread: trigger.causation?.thread ?? trigger.id,
    hop: (trigger.causation?.hop ?? 0) + 1,
  };
}

/** Retriable: our RetriableError, AWS throttling/timeouts/5xx, and aborts when the Lambda is out of time. */
export function isRetriable(error: unknown, signal?: AbortSignal): boolean {
  if (isCrumbsError(error)) return error.retriable;
  if (signal?.aborted) return true;
  if (!(error instanceof Error)) return false;
  const sdk = error as Error & { $retryable?: unknown; $metadata?: { httpStatusCode?: number } };
  if (sdk.$retryable) return true;
  if ((sdk.$metadata?.httpStatusCode ?? 0) >= 500) return true;
  return RETRIABLE_ERROR_NAMES.has(error.name);
}

const RETRIABLE_ERROR_NAMES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalServerError',
  'InternalFailure',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

// ---------------------------------------------------------------------------------------------------------------
// Writing outputs

export interface WriteContext {
  store: ExecutorStore;
  workspace: string;
  kind: ExecutorKind;
  definitionId: string;
  trigger: { id: string; version: number };
  principal: string;
  causation: Causation;
}

/** Writes outputs in order under their deterministic ids; `upsertId` outputs are created or updated. */
export async function writeOutputs(
  outputs: readonly OutputBreadcrumb[],
  ctx: WriteContext,
): Promise<string[]> {
  const ids: string[] = [];
  for (const [index, output] of outputs.entries()) {
    const input = parseOrThrow(
      CreateBreadcrumbSchema,
      {
        schema_name: output.schema_name,
        title: output.title ?? '',
        tags: output.tags ?? [],
        context: output.context,
      },
      `outputs[${index}]`,
    );
    if (output.upsertId !== undefined) {
      ids.push((await upsert(output.upsertId, input, ctx)).id);
      continue;
    }
    const id = outputId(ctx.kind, ctx.definitionId, ctx.trigger.id, ctx.trigger.version, index);
    const { breadcrumb } = await ctx.store.create(ctx.workspace, input, {
      principal: ctx.principal,
      id,
      causation: ctx.causation,
    });
    ids.push(breadcrumb.id);
  }
  return ids;
}

const MAX_UPSERT_ATTEMPTS = 8;

/** Create-or-update with If-Match; an update that would change nothing is skipped (a re-execution). */
async function upsert(
  id: string,
  input: ReturnType<typeof CreateBreadcrumbSchema.parse>,
  ctx: WriteContext,
): Promise<Breadcrumb> {
  for (let attempt = 1; attempt <= MAX_UPSERT_ATTEMPTS; attempt++) {
    let current: Breadcrumb;
    try {
      current = await ctx.store.get(ctx.workspace, id);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const created = await ctx.store.create(ctx.workspace, input, {
        principal: ctx.principal,
        id,
        causation: ctx.causation,
      });
      if (!created.replayed) return created.breadcrumb;
      continue; // created concurrently: update it
    }
    if (
      current.schema_name === input.schema_name &&
      current.checksum === checksumOf(input.context) &&
      current.title === input.title &&
      sameTags(current.tags, input.tags)
    ) {
      return current;
    }
    try {
      return await ctx.store.update(
        ctx.workspace,
        id,
        { title: input.title, tags: input.tags, context: input.context },
        { principal: ctx.principal, expectedVersion: current.version, causation: ctx.causation },
      );
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
    }
  }
  throw new RetriableError(`breadcrumb ${id} kept changing while it was being upserted`);
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\u0000') === [...b].sort().join('\u0000');
}

// ---------------------------------------------------------------------------------------------------------------
// The pipeline

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
  return tracing.span(`${ref.kind} trigger`, correlation, () =>
    processTrigger(parsedMessage.data, { ...correlation, definitionVersion: ref.version }, deps),
  );
}

/** The pipeline for one parsed message; `logKeys` (the correlation keys and more) go on every log line about it. */
async function processTrigger(
  { definition: ref, event }: ExecutorMessage,
  logKeys: Readonly<Record<string, string | number>>,
  deps: PipelineDeps,
): Promise<ProcessOutcome> {
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
  try {
    trigger = await deps.store.getVersion(ref.workspace, detail.id, detail.version);
  } catch (error) {
    if (error instanceof NotFoundError) return skip(log, 'the trigger is gone', logKeys);
    throw error;
  }

  // The rule matched the event; the event may have left a large context out, so match the stored trigger.
  const parts = definitionParts(parsed);
  const selector = parts.triggers.find(
    (s) => inferRole(s) === 'trigger' && matchesSelector(s, asDetail(trigger)),
  );
  if (!selector) return skip(log, 'no trigger selector matches the stored trigger', logKeys);

  const principal = parts.principal;
  if (trigger.updated_by === principal)
    return skip(log, 'the trigger was written by this definition', logKeys);

  const causation = outputCausation(trigger);
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
  const hop = trigger.causation?.hop ?? 0;
  if (hop >= hopLimit) {
    const id = await writeLoopStopped(writeCtx, { ref, trigger, hop, hopLimit });
    log.warn('hop limit reached; wrote system.loop_stopped.v1 instead of executing', {
      ...logKeys,
      hop,
      hopLimit,
    });
    return { status: 'loop-stopped', outputIds: [id] };
  }

  const implementation = deps.implementations?.[parsed.kind] ?? resolveKind(parsed.kind, kindDeps(deps, log));
  if (!implementation) {
    // A wiring fault of this function, not of the message: retry (and alarm on the DLQ) rather than answer.
    throw new RetriableError(`no executor implementation is registered for kind "${parsed.kind}"`);
  }

  const claimKey: ClaimKey = {
    workspace: ref.workspace,
    executor: ref.id,
    triggerId: trigger.id,
    triggerVersion: trigger.version,
  };
  const claim = await deps.claims.acquire(claimKey, deps.leaseMs);
  if (claim.status === 'done') return skip(log, 'already answered', logKeys);
  if (claim.status === 'busy') {
    throw new RetriableError(
      `another worker holds the claim until ${new Date(claim.leaseUntil).toISOString()}`,
    );
  }
  if (claim.takeover) log.warn('took over an expired claim; executing again', logKeys);

  try {
    const [triggerView] = await deps.store.contextViews(ref.workspace, [trigger]);
    if (!triggerView) throw new Error('the store returned no context view for the trigger');
    const context = await assembleContext(
      {
        workspace: ref.workspace,
        trigger,
        triggerView,
        selectors: parts.context,
      },
      { store: deps.store, vectorSearch: deps.vectorSearch },
    );
    const executionTrigger: ExecutionInput<unknown>['trigger'] = {
      ...triggerView,
      workspace: trigger.workspace,
      created_by: trigger.created_by,
      causation: trigger.causation,
    };
    const signal = deps.signal ?? new AbortController().signal;

    let outputs: readonly OutputBreadcrumb[];
    let failure: string | undefined;
    try {
      ({ outputs } = await implementation.execute({
        definition: parsed.definition,
        definitionRef: ref,
        principal,
        trigger: executionTrigger,
        context,
        causation,
        signal,
      }));
    } catch (error) {
      if (isRetriable(error, signal)) throw error;
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

    let outputIds: string[];
    try {
      outputIds = await writeOutputs(outputs, writeCtx);
    } catch (error) {
      if (isRetriable(error) || failure !== undefined) throw error;
      // An output the store refuses (too large, bad tag) will be refused again: answer with the error instead.
      failure = `the executor's output was refused: ${error instanceof Error ? error.message : String(error)}`;
      log.error('output refused; answering with an error breadcrumb', { ...logKeys, error: failure });
      outputIds = await writeOutputs(
        [
          implementation.errorOutput({
            definition: parsed.definition,
            trigger: executionTrigger,
            error: failure,
          }),
        ],
        writeCtx,
      );
    }
    await deps.claims.complete(claimKey, claim.token);
    log.info(failure === undefined ? 'responded' : 'answered with an error', { ...logKeys, outputIds });
    return failure === undefined
      ? { status: 'responded', outputIds }
      : { status: 'errored', outputIds, error: failure };
  } catch (error) {
    // Let the retry start at once instead of waiting out the lease; outputs already written are replayed.
    await deps.claims.release(claimKey, claim.token).catch((releaseError: unknown) => {
      log.warn('could not release the claim; the retry waits for the lease', {
        ...logKeys,
        error: String(releaseError),
      });
    });
    throw error;
  }
}

/** Selectors and principal of a parsed definition (a switch, so each kind's call is checked on its own type). */
export function definitionParts(parsed: ParsedDefinition): {
  triggers: Selector[];
  context: Selector[];
  principal: string;
} {
  return {
    triggers: triggerSelectors(parsed.kind, parsed.definition),
    context: contextSelectors(parsed.kind, parsed.definition),
    principal: definitionPrincipal(parsed.kind, parsed.definition),
  };
}

function kindDeps(deps: PipelineDeps, log: Log) {
  return { store: deps.store, log, clock: deps.clock ?? systemClock };
}

async function writeLoopStopped(
  ctx: WriteContext,
  info: { ref: DefinitionRef; trigger: Breadcrumb; hop: number; hopLimit: number },
): Promise<string> {
  const id = outputId(ctx.kind, ctx.definitionId, ctx.trigger.id, ctx.trigger.version, 'loop-stopped');
  const thread = ctx.causation.thread;
  const { breadcrumb } = await ctx.store.create(
    ctx.workspace,
    parseOrThrow(CreateBreadcrumbSchema, {
      schema_name: LOOP_STOPPED_SCHEMA,
      title: `Loop stopped at hop ${info.hop}: ${ctx.principal} did not answer ${info.trigger.schema_name}`,
      tags: ['system:loop_stopped', `thread:${thread}`, `definition:${info.ref.id}`],
      context: {
        definition_id: info.ref.id,
        definition_version: info.ref.version,
        definition_schema: info.ref.schema_name,
        principal: ctx.principal,
        trigger_id: info.trigger.id,
        trigger_version: info.trigger.version,
        trigger_schema: info.trigger.schema_name,
        trigger_created_by: info.trigger.created_by,
        thread,
        hop: info.hop,
        hop_limit: info.hopLimit,
        reason: `the trigger is ${info.hop} hops from the start of its thread; the limit is ${info.hopLimit}`,
      },
    }),
    { principal: LOOP_GUARD_PRINCIPAL, id, causation: ctx.causation },
  );
  return breadcrumb.id;
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

export interface BatchOutcome extends SQSBatchResponse {
  outcomes: (ProcessOutcome | { status: 'failed'; error: string })[];
}

/**
 * Processes an SQS batch concurrently; failed messages are reported as batch item failures so only they are
 * retried (the event source mapping needs `ReportBatchItemFailures`).
 */
export async function processExecutorBatch(
  records: readonly SQSRecord[],
  deps: PipelineDeps,
): Promise<BatchOutcome> {
  const log = deps.log ?? silentLog;
  const outcomes = await Promise.all(
    records.map(async (record) => {
      try {
        return await processExecutorMessage(parseBody(record.body), deps);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        log.warn('message failed; SQS will redeliver it', { messageId: record.messageId, error: message });
        return { status: 'failed' as const, error: message, messageId: record.messageId };
      }
    }),
  );
  return {
    batchItemFailures: outcomes.flatMap((o) => ('messageId' in o ? [{ itemIdentifier: o.messageId }] : [])),
    outcomes: outcomes.map((o) => ('messageId' in o ? { status: o.status, error: o.error } : o)),
  };
}

export function parseBody(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new InvalidExecutorMessageError('the body is not JSON');
  }
}

export type { ExecutorMessage };
