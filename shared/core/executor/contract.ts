/**
 * The contract between routing and executors, and between the universal pipeline and each kind's `execute`.
 *
 * Routing: the rule manager compiles a definition's trigger selectors into one EventBridge rule whose SQS target
 * (the queue of the definition's executor kind) gets, through an InputTransformer, this message body:
 *
 *   { "definition": { "id", "version", "workspace", "kind", "schema_name" }, "event": <the whole change event> }
 *
 * Pipeline (pipeline.ts): load the definition at that version → re-check the trigger selectors against the stored
 * trigger breadcrumb → hop limit (loop-guard.ts) → claim → assemble context → `execute` → write the outputs
 * (outputs.ts) → complete the claim. Only `execute` differs between kinds.
 *
 * Implementations are passed, never registered: each executor handler (`functions/executor-<kind>/handler.ts`)
 * names the implementation it runs and what that implementation needs (its tools, its model client), as inngest's
 * `serve({ functions })` does. A new kind is one module with a factory returning `ExecutorKindImplementation`
 * plus one line in its handler; the pipeline knows nothing about any kind.
 *
 * What an implementation can rely on (the seams the orchestration engine and agent types build on):
 *
 * - **Outputs are written exactly once per trigger version.** Each output's id is one of:
 *   - derived by the pipeline from (definition, trigger id, trigger version, output index) — the default;
 *   - `id`: chosen by the implementation, deterministic (e.g. `deterministicId('wfstep', runId, stepId, attempt)`
 *     from outputs.ts), created once: writing it again (a redelivery, a re-execution after a crash, another
 *     worker) is a replay that returns the stored breadcrumb, never an error and never a second breadcrumb;
 *   - `upsertId`: created, or replaced when its content differs (`BreadcrumbStore.upsert`), for records that
 *     evolve (a conversation, a built context, a run's state).
 *   Output order is write order: an implementation puts the record other outputs depend on last when a crash
 *   between two writes must be retried into a consistent state.
 * - **Hops count chains between definitions, not an executor's own bounded continuation.** A trigger carries the
 *   hop at which it was written (`causation.hop`); outputs are one hop further, and a trigger at the definition's
 *   `hop_limit` is answered with `system.loop_stopped.v1` instead of running. An implementation whose trigger
 *   answers a request it wrote itself (an agent's `tool.request.v1` answered by `tool.response.v1`, a run's step
 *   request answered by its result) says so with `ownRequestOf`: the pipeline checks that request was written
 *   by this definition and then treats the trigger as part of the turn the request belongs to — the loop guard
 *   looks at the hop that turn started at, and outputs get the request's own hop. Tool rounds and workflow
 *   steps therefore do not grow the hop; what bounds them is the implementation's own limit (`max_tool_rounds`,
 *   a run's step and LLM-call limits), which an implementation using `ownRequestOf` must have.
 * - **Retries:** throw a retriable error (`RetriableError`, or anything `isRetriable` in
 *   `#shared/domain/errors.ts` says is) to have SQS deliver the message again after a back-off (a Retry-After on
 *   the error is honoured); anything else is answered with `errorOutput` under the first output id.
 */
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import { type Causation, ChangeEventSchema } from '#shared/domain/change-event.ts';
import * as z from '#shared/domain/zod.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { Log } from '#shared/ports/log.ts';
import type { CorrelationKeys } from '#shared/ports/tracing.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { EXECUTOR_KINDS, type ExecutorKind } from '#shared/topology.ts';

export const DefinitionRefSchema = z.object({
  id: z.string().check(z.minLength(1)),
  version: z.number().check(z.int(), z.minimum(1)),
  workspace: z.string().check(z.minLength(1)),
  kind: z.enum(EXECUTOR_KINDS),
  schema_name: z.string().check(z.minLength(1)),
});
export type DefinitionRef = z.infer<typeof DefinitionRefSchema>;

export const ExecutorMessageSchema = z.object({
  definition: DefinitionRefSchema,
  event: ChangeEventSchema,
});
export type ExecutorMessage = z.infer<typeof ExecutorMessageSchema>;

/** The keys that correlate the logs and traces of a message's trigger (its thread, breadcrumb and definition). */
export function correlationOf({ definition, event }: ExecutorMessage): CorrelationKeys {
  return {
    workspace: definition.workspace,
    breadcrumbId: event.detail.id,
    triggerVersion: event.detail.version,
    thread: event.detail.causation?.thread ?? event.detail.id,
    definitionId: definition.id,
  };
}

/** The InputTransformer the rule manager puts on every executor target (EventBridge syntax). */
export function executorInputTransformer(ref: DefinitionRef): {
  InputPathsMap: Record<string, string>;
  InputTemplate: string;
} {
  return {
    InputPathsMap: {},
    // `<aws.events.event.json>` is the whole event; `<aws.events.event>` would leave out `detail`.
    InputTemplate: `{"definition": ${JSON.stringify(ref)}, "event": <aws.events.event.json>}`,
  };
}

/** A breadcrumb an executor asks the pipeline to write. The pipeline adds causation and created_by. */
export interface OutputBreadcrumb {
  schema_name: string;
  title?: string;
  tags?: string[];
  context: Record<string, unknown>;
  /** Create under this id, once (a repeat is a replay). Default: derived from the trigger and the output index. */
  id?: string;
  /** Create or replace this breadcrumb (context builder, conversations): written again only when it differs. */
  upsertId?: string;
}

/** What the pipeline hands to `execute`. */
export interface ExecutionInput<D> {
  definition: D;
  definitionRef: DefinitionRef;
  /** created_by of everything this definition writes, e.g. `agent:helper`. */
  principal: string;
  /** The trigger as stored (context view applied), at the version that fired. */
  trigger: ContextView & { workspace: string; created_by: string; causation?: Causation | undefined };
  /** Assembled context: `trigger` plus one key per context selector (or an `{ error }` entry for a failed source). */
  context: Record<string, unknown>;
  /** Causation for outputs: caused_by = trigger@version, same thread, hop + 1 (a continuation: its request's hop). */
  causation: Causation;
  signal: AbortSignal;
}

export interface ExecutionResult {
  outputs: OutputBreadcrumb[];
}

/** A breadcrumb an implementation wrote itself and now receives an answer to (see `ownRequestOf`). */
export interface OwnRequestRef {
  id: string;
  /** The version that was answered; the current one when absent. */
  version?: number;
}

export interface ExecutorKindImplementation<D> {
  /** Runs the kind-specific step. Throw RetriableError to retry via SQS, NonRetriableError to answer with an error. */
  execute(input: ExecutionInput<D>): Promise<ExecutionResult>;
  /** The error breadcrumb written for a non-retriable failure or a dead-lettered message. */
  errorOutput(input: {
    definition: D;
    trigger: ExecutionInput<D>['trigger'] | undefined;
    error: string;
  }): OutputBreadcrumb;
  /**
   * The continuation seam (see the header): the request this trigger answers, when this definition wrote that
   * request itself in an earlier step of the same turn; undefined when the trigger starts something new. Only
   * for implementations that bound their own continuation.
   */
  ownRequestOf?(input: {
    definition: D;
    trigger: Breadcrumb;
  }): OwnRequestRef | undefined | Promise<OwnRequestRef | undefined>;
}

/** What the pipeline gives a kind's factory: the function's store, log, clock and vector search. */
export interface KindDependencies {
  store: ExecutorStore;
  log: Log;
  clock: Clock;
  vectorSearch?: VectorSearch | undefined;
}

/** The implementations a function runs, by kind (an executor function runs one; tests may pass several). */
export type ExecutorImplementations = Partial<Record<ExecutorKind, ExecutorKindImplementation<unknown>>>;
