/**
 * The contract between routing and executors, and between the pipeline and each kind's `execute`.
 *
 * Routing: a definition's rule sends its kind's queue `{ definition: { id, version, workspace, kind, schema_name },
 * event: <the change event> }` (`ExecutorMessageSchema`, built by `executorInputTransformer`). The pipeline
 * (pipeline.ts) loads the definition at that version, re-checks the trigger, applies the hop limit (loop-guard.ts),
 * claims, assembles context, calls `execute`, writes the outputs (outputs.ts) and completes the claim: only
 * `execute` differs between kinds. Implementations are passed, never registered: each executor handler names the
 * one it runs and what it needs, so a new kind is one module plus one line in its handler.
 *
 * What an implementation relies on (shared/domain/CONVENTIONS.md, "Executors"): every output is written once per
 * trigger version, in the order given; a trigger that answers a request this definition wrote (`ownRequestOf`)
 * continues that turn's hop instead of growing it, so such a kind bounds itself; a retriable error
 * (`isRetriable`) is delivered again after a back-off, anything else is answered with `errorOutput`.
 */
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import type { BudgetLimits } from '#shared/domain/budget.ts';
import { type Causation, ChangeEventSchema } from '#shared/domain/change-event.ts';
import type { OutputBreadcrumb } from '#shared/domain/protocol.ts';
import * as z from '#shared/domain/zod.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { Log } from '#shared/ports/log.ts';
import type { CorrelationKeys } from '#shared/ports/tracing.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import { EXECUTOR_KINDS, type ExecutorKind } from '#shared/topology.ts';

export type { OutputBreadcrumb };

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
  /**
   * Registers what to do once the outputs are written (or, when the execution failed, its error answer): e.g. tell
   * a person watching the answer's stream which breadcrumb holds it. Runs after the writes succeed, never before;
   * a failure there is logged and changes nothing written. Not called when the execution is retried.
   */
  afterWrite?: (callback: AfterWrite) => void;
}

/** What `afterWrite` callbacks learn: the ids written, in output order, and the failure the error answer states. */
export type AfterWrite = (written: {
  outputIds: readonly string[];
  failure?: string;
}) => Promise<void> | void;

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
  /**
   * Every execution writes exactly one output (its answer or its error) under the id the pipeline derives for it.
   * Then that answer's existence is the claim's completion: no write marks the claim done, and a worker taking over
   * an expired claim first looks for the answer (pipeline.ts).
   */
  answersOnce?: true;
  /**
   * The kind's own conditional writes already make each trigger's effect happen once (a workflow run advances by a
   * write conditional on the version it read, and what it writes has ids derived from the run), so the pipeline
   * takes no claim: a duplicate delivery, or two at once, re-read the run and replay the same ids.
   */
  exactlyOnceByItself?: true;
  /**
   * The request budget of this invocation's model calls (`shared/domain/budget.ts`): each call is checked against
   * it before it is made, on the one path every model call takes (`shared/core/model-calls/`). Absent: none.
   */
  modelBudget?(input: ExecutionInput<D>): BudgetLimits;
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
