/**
 * The contract between routing and executors, and between the universal pipeline and each kind's `execute`.
 *
 * Routing: the rule manager compiles a definition's trigger selectors into one EventBridge rule whose SQS target
 * (the queue of the definition's executor kind) gets, through an InputTransformer, this message body:
 *
 *   { "definition": { "id", "version", "workspace", "kind", "schema_name" }, "event": <the whole change event> }
 *
 * Pipeline (shared/core/executor/pipeline.ts): load the definition at that version → re-check the trigger
 * selectors against the stored trigger breadcrumb → hop limit → claim → assemble context → `execute` → write the
 * outputs with deterministic ids → complete the claim. Only `execute` differs between kinds.
 */
import type { ContextView } from '#shared/domain/breadcrumb.ts';
import { type Causation, ChangeEventSchema } from '#shared/domain/change-event.ts';
import * as z from '#shared/domain/zod.ts';
import type { CorrelationKeys } from '#shared/ports/tracing.ts';
import { EXECUTOR_KINDS } from '#shared/topology.ts';

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

/** A breadcrumb an executor asks the pipeline to write. The pipeline adds id, causation and created_by. */
export interface OutputBreadcrumb {
  schema_name: string;
  title?: string;
  tags?: string[];
  context: Record<string, unknown>;
  /** Update this existing breadcrumb (context builder upserts) instead of creating; created when missing. */
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
  /** Causation for outputs: caused_by = trigger@version, same thread, hop + 1. */
  causation: Causation;
  signal: AbortSignal;
}

export interface ExecutionResult {
  outputs: OutputBreadcrumb[];
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
}
