/**
 * What a run asks the world to do: write a request, set or cancel a timer, cancel a sub-run, write the result.
 *
 * Effects are *derived from the run state* (`effectsOf`), each with a deterministic id (ids.ts): a step that is
 * running has its request; a step with a deadline has its timer; an ended run has its result. The driver writes
 * them create-if-absent, so writing one again is a replay. `advance` returns the effects that are new in this
 * transition (the difference between the effects of the run before and after it) and, when the event changed
 * nothing (a redelivery), all of the run's effects again: a crash after the run was written and before its
 * effects were is repaired by the redelivery of the event that made it (README.md, "Exactly once").
 */
import {
  type StepKindName,
  type WorkflowDefinition,
  workflowPrincipal,
} from '#shared/domain/workflow-definition.ts';
import { graphOf, stepAt } from './graph.ts';
import { resultIdFor, type TimerPurpose, timerIdFor } from './ids.ts';
import { isActive, isTerminal, type Run, type StepState } from './run.ts';
import { stepKindOf } from './steps/kinds.ts';

export interface RequestEffect {
  readonly type: 'request';
  /** The request breadcrumb's id, and its `request_id`: the step attempt's id. */
  readonly id: string;
  /** A kind that asks someone (its `request`, `steps/`). */
  readonly kind: StepKindName;
  readonly step: string;
  readonly attempt: number;
  /** What the kind asks: a tool name, agent id or workflow id; absent for human steps. */
  readonly target?: string;
  readonly input?: unknown;
  readonly message?: string;
  readonly mode?: string;
  /** Agent steps: the agent orchestrates sub-agents of its own (a nested orchestration). */
  readonly orchestrate?: boolean;
  /** Agent steps: the run's `max_depth`, the deepest the agent's own orchestration may go. */
  readonly max_depth?: number;
  readonly prompt?: string;
  /** Agent and tool steps: the share of the run's budget the request may use (its request budget). */
  readonly budget?: { max_tokens?: number; max_cost_nusd?: number; max_llm_calls?: number };
  /** Agent and tool steps that pin `name@N`: the version of the definition the request runs. */
  readonly definition_version?: number;
  readonly input_schema?: Record<string, unknown>;
  /** Depth of the request (sub-workflows and agents): the run's depth + 1. */
  readonly depth: number;
}

export interface TimerEffect {
  readonly type: 'timer';
  readonly id: string;
  readonly at: string;
  readonly step: string;
  readonly attempt: number;
  readonly purpose: TimerPurpose;
}

export interface CancelTimerEffect {
  readonly type: 'cancel_timer';
  readonly id: string;
}

/** Cancel a sub-workflow's run (the step that started it was cancelled). */
export interface CancelRunEffect {
  readonly type: 'cancel_run';
  readonly id: string;
  readonly run_id: string;
  /** The sub-workflow's id (its runs take controls tagged `reply-to:workflow:<id>`). */
  readonly workflow: string;
  readonly step: string;
}

export interface ResultEffect {
  readonly type: 'result';
  readonly id: string;
  readonly status: 'succeeded' | 'failed' | 'cancelled';
  readonly output?: unknown;
  readonly error?: string;
  readonly failed_step?: string;
}

/** The answer to a human response that could not be applied (its input failed the step's schema). */
export interface ResponseErrorEffect {
  readonly type: 'response_error';
  readonly id: string;
  /** The human request it answered. */
  readonly request_id: string;
  readonly response_id: string;
  readonly step: string;
  readonly error: string;
}

/**
 * A wait_for attempt that waits has an entry in the wait index, keyed by (workspace, workflow, step id,
 * correlation value): how a matching write finds the runs waiting for it (`workflow-kind.ts`).
 */
export interface WaitEntryEffect {
  readonly type: 'wait_entry';
  /** `<attempt id>.waiting`. */
  readonly id: string;
  readonly attempt_id: string;
  /** The step's instance key in the run (`lines[3].confirm`). */
  readonly step: string;
  /** The step's id in the definition: the index is by step, whichever instance waits. */
  readonly step_id: string;
  readonly correlation?: string | number | boolean;
  readonly since: string;
  readonly until: string;
}

/** The attempt stopped waiting (matched, timed out, cancelled, the run ended): its entry goes (best effort). */
export interface RemoveWaitEffect {
  readonly type: 'remove_wait';
  readonly id: string;
  readonly entry: WaitEntryEffect;
}

export type Effect =
  | WaitEntryEffect
  | RemoveWaitEffect
  | RequestEffect
  | TimerEffect
  | CancelTimerEffect
  | CancelRunEffect
  | ResultEffect
  | ResponseErrorEffect;

function requestOf(
  definition: WorkflowDefinition,
  run: Run,
  key: string,
  state: StepState,
): RequestEffect | undefined {
  const request = stepKindOf(state.kind).request;
  if (request === undefined || state.attempt_id === undefined) return undefined;
  const step = stepAt(graphOf(definition), key);
  if (step === undefined) return undefined;
  return {
    type: 'request',
    id: state.attempt_id,
    kind: state.kind,
    step: key,
    attempt: state.attempts,
    depth: run.depth + 1,
    ...request.fields(definition, run, step, state),
  };
}

function timer(key: string, state: StepState, purpose: TimerPurpose, at: string): TimerEffect | undefined {
  if (state.attempt_id === undefined) return undefined;
  return {
    type: 'timer',
    id: timerIdFor(state.attempt_id, purpose),
    at,
    step: key,
    attempt: state.attempts,
    purpose,
  };
}

/** What giving up the attempt `attemptId` of the step at `key` writes (a sub-workflow's cancel), if anything. */
export function abandonOf(
  definition: WorkflowDefinition,
  key: string,
  state: StepState,
  attemptId: string,
): CancelRunEffect | undefined {
  const abandon = stepKindOf(state.kind).abandon;
  if (abandon === undefined) return undefined;
  const step = stepAt(graphOf(definition), key);
  return step === undefined ? undefined : abandon(step, key, attemptId);
}

function waitEntryOf(
  definition: WorkflowDefinition,
  key: string,
  state: StepState,
): WaitEntryEffect | undefined {
  const waiting = state.waiting_for;
  if (
    waiting === undefined ||
    state.status !== 'waiting' ||
    state.wake_at === undefined ||
    state.retry_at !== undefined ||
    state.attempt_id === undefined
  )
    return undefined;
  const step = stepAt(graphOf(definition), key);
  if (step === undefined) return undefined;
  return {
    type: 'wait_entry',
    id: `${state.attempt_id}.waiting`,
    attempt_id: state.attempt_id,
    step: key,
    step_id: step.id,
    ...(waiting.correlation !== undefined ? { correlation: waiting.correlation.value } : {}),
    since: state.started_at ?? waiting.until,
    until: waiting.until,
  };
}

/** Every effect the run state implies, in step order. */
export function effectsOf(definition: WorkflowDefinition, run: Run): Effect[] {
  const out: Effect[] = [];
  const push = (effect: Effect | undefined) => {
    if (effect !== undefined) out.push(effect);
  };
  for (const [key, state] of Object.entries(run.steps)) {
    if (state.status === 'cancelled' && state.attempt_id !== undefined) {
      push(abandonOf(definition, key, state, state.attempt_id));
    }
    if (isTerminal(run.status)) continue;
    if (isActive(state)) {
      push(requestOf(definition, run, key, state));
      const wakeAt = stepKindOf(state.kind).timer?.at(state);
      if (wakeAt !== undefined) push(timer(key, state, 'wait', wakeAt));
      if (state.timeout_at !== undefined) push(timer(key, state, 'timeout', state.timeout_at));
      if (state.retry_at !== undefined) push(timer(key, state, 'retry', state.retry_at));
      push(waitEntryOf(definition, key, state));
    }
  }
  if (isTerminal(run.status)) {
    const status = run.status as ResultEffect['status'];
    push({
      type: 'result',
      id: resultIdFor(run.run_id, run.completions),
      status,
      ...(status === 'succeeded' ? { output: run.output ?? null } : { error: run.error ?? status }),
      ...(run.failed_step !== undefined ? { failed_step: run.failed_step } : {}),
    });
  }
  return out;
}

/** The effects of `after` that `before` did not have, and cancels for the timers `after` no longer has. */
export function freshEffects(
  before: readonly Effect[],
  after: readonly Effect[],
  firedTimer?: string,
): Effect[] {
  const had = new Set(before.map((e) => e.id));
  const has = new Set(after.map((e) => e.id));
  const fresh = after.filter((e) => !had.has(e.id));
  const cancels: Effect[] = before
    .filter((e) => e.type === 'timer' && !has.has(e.id) && e.id !== firedTimer)
    .map((e) => ({ type: 'cancel_timer', id: e.id }));
  const unwaits: Effect[] = before
    .filter((e): e is WaitEntryEffect => e.type === 'wait_entry' && !has.has(e.id))
    .map((entry) => ({ type: 'remove_wait', id: `${entry.attempt_id}.unwait`, entry }));
  return [...fresh, ...cancels, ...unwaits];
}

/** The principal of everything a workflow's runs write. */
export function runPrincipal(definition: WorkflowDefinition): string {
  return workflowPrincipal(definition.workflow_id);
}
