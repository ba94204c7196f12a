/**
 * A step kind's engine half: how an attempt starts, what ends it, what a running attempt asks the world for (its
 * request, its timer), what it counts against the run's limits, and, for kinds that hold steps, how their
 * children are driven and joined. One module per kind beside this one, listed once in `kinds.ts`; the schema half
 * (fields, checks) is in `shared/domain/steps/`.
 *
 * Every hook is pure: it reads the definition and the run state it is given and returns what the engine writes
 * into the run (`advance.ts`) or derives from it (`effects.ts`, `messages.ts`), so the exactly-once argument of
 * README.md holds for every kind without a kind knowing it.
 */
import type { StepKindSchema } from '#shared/domain/steps/step-schema.ts';
import { parsePin } from '#shared/domain/version-pin.ts';
import type { StepDefinition, StepKindName, WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import type { CancelRunEffect, RequestEffect } from '../effects.ts';
import type { Evaluator, Frame } from '../expressions.ts';
import type { AttemptChain } from '../ids.ts';
import type { RunWrite, SCHEMAS } from '../messages.ts';
import type { Run, StepState } from '../run.ts';

/** How a step's drive ended in this transition: done (ended, or failed with `on_error: "continue"`), waiting, failed. */
export type Drive = 'done' | 'blocked' | 'failed';

export type EndedStatus = 'succeeded' | 'failed' | 'skipped' | 'cancelled';

/** What a kind's `start` is given: the attempt as every kind starts it, and the transition's tools. */
export interface StartContext {
  readonly step: StepDefinition;
  /** The new attempt: `running`, with its id, `started_at` and `timeout_at`. */
  readonly base: StepState;
  readonly now: Date;
  readonly evaluator: Evaluator;
  /** The expressions' scope (`expressions.ts`), evaluated on demand. */
  scope(): Record<string, unknown>;
  /** The state ended with `status` now (deadlines cleared). */
  ended(state: StepState, status: EndedStatus, result: { output?: unknown; error?: string }): StepState;
}

/** The started attempt's state, or why it fails at once (the engine ends it `failed` with that error). */
export type Started = StepState | { readonly fail: string };

/** What a kind that holds steps is given to drive them (the transition, `advance.ts`). */
export interface DriveContext {
  readonly run: Run;
  /** Drives one child: starts it when ready, reports where it is. */
  driveStep(
    step: StepDefinition,
    key: string,
    segment: string,
    chain: AttemptChain,
    frame: Frame,
  ): Promise<Drive>;
  /** Cancels every started child of the step at `key`. */
  cancelDescendants(key: string): void;
  /** The current attempt of `key` failed: retried (after its back-off) or the step fails. */
  failAttempt(key: string, error: string): void;
  ended(state: StepState, status: EndedStatus, result: { output?: unknown; error?: string }): StepState;
}

/** What a running attempt's request carries beyond id, kind, step, attempt and depth (`effects.ts`). */
export type RequestFields = Omit<RequestEffect, 'type' | 'id' | 'kind' | 'step' | 'attempt' | 'depth'>;

/** What a kind's request breadcrumb is built from (`messages.ts`). */
export interface RequestWriteContext {
  readonly run: Run;
  readonly effect: RequestEffect;
  /** `run:`, `step:` and the run's `reply-to:` tag. */
  readonly tags: string[];
  /** `<workflow> › <step>`. */
  readonly title: string;
  /** Who drives the run (`runDriver`). */
  readonly driver: string;
  readonly schemas: typeof SCHEMAS;
}

export interface StepKind<K extends StepKindName = StepKindName> {
  readonly kind: K;
  /** The kind's fields and checks in a definition (`shared/domain/steps/`). */
  readonly schema: StepKindSchema<K>;
  /**
   * What ends an attempt: a `reply` to its request (an answer event), a `person` (a human response), its own
   * `timer`, or its `children` (joined by `drive`). Answers for anything else are recorded as late.
   */
  readonly endedBy: 'reply' | 'person' | 'timer' | 'children';
  /** What a started attempt counts against the run's limits (`limits.ts`). */
  readonly counts: {
    /** `max_steps`: every attempt of a leaf step; a step that holds steps counts through them. */
    readonly step: boolean;
    /** `max_llm_calls`: a model call is what the step is for; a step finding no budget left does not start. */
    readonly llmCall?: boolean;
    /**
     * Its request may make model calls (a tool: the `llm` tool calls a model, an http tool does not): it carries a
     * share of the run's budgets like an agent step, but starts with nothing left (a call that needs a share is
     * refused by the one path model calls take, and its answer's `budget_stop` pauses the run).
     */
    readonly mayCallModel?: boolean;
    /** Its request runs one level deeper (`max_depth`). */
    readonly deeper?: boolean;
  };
  /** The attempt's state once started (expressions evaluated), or why it fails. Throws what evaluation throws. */
  start(context: StartContext): Promise<Started>;
  /** Kinds that hold steps: drive the children of the running attempt at `key`, and join or fail it. */
  drive?(
    context: DriveContext,
    step: StepDefinition,
    key: string,
    chain: AttemptChain,
    frame: Frame,
  ): Promise<void>;
  /**
   * The instance keys nested in the step at `key` among `keys`; `nested` collects a child's own (what a rerun of
   * the step clears, what cancelling it cancels).
   */
  nestedKeys?(
    step: StepDefinition,
    key: string,
    prefix: string,
    keys: readonly string[],
    nested: (child: StepDefinition, childKey: string, prefix: string) => string[],
  ): string[];
  /** Kinds that ask someone: the request of a running attempt, written as `request(…)` below. */
  readonly request?: {
    fields(definition: WorkflowDefinition, run: Run, step: StepDefinition, state: StepState): RequestFields;
    breadcrumb(context: RequestWriteContext): RunWrite;
    /**
     * The definition that answers such requests, when one must exist in the workspace: a request naming nothing
     * defined would never be answered, so its step fails at once (`driver.ts`).
     */
    readonly answeredBy?: { readonly schema: string; nameOf(definitionContext: unknown): string | undefined };
    /**
     * The definitions such requests run, one version of which the driver resolves for each request (the step's
     * pin, else the latest) and records in the step (`definition`); a step whose definition or pinned version is
     * not there fails at once (`driver.ts`, `shared/core/executor/versions.ts`).
     */
    readonly versioned?: { readonly schemas: readonly string[] };
  };
  /** Kinds that are a timer: when the running attempt's timer fires, and the output it ends with then. */
  readonly timer?: {
    at(state: StepState): string | undefined;
    fired(state: StepState): unknown;
    /** How the attempt ends when its timer fires, when that is not `fired`'s success: an output or a failure. */
    outcome?(step: StepDefinition, state: StepState): { output: unknown } | { error: string };
  };
  /** What to write when an attempt is given up (cancelled, timed out, reset by a retry): a sub-run's cancel. */
  abandon?(step: StepDefinition, key: string, attemptId: string): CancelRunEffect | undefined;
}

/**
 * The `definition_version` of a request whose step pins `name@N`: the executor runs version N. An unpinned request
 * names none and runs the version its rule was compiled from, the latest (a request stays as small as it was).
 */
export function pinOf(named: string | undefined): { definition_version?: number } {
  const version = named === undefined ? undefined : parsePin(named)?.version;
  return version === undefined ? {} : { definition_version: version };
}
