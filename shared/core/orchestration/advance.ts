/**
 * The engine: `advance(definition, run, event, now)` → the next run and the effects to write. Pure (no I/O, no
 * clock: `now` is given; expressions see it as `$now()`), so a transition can be re-applied after a write conflict
 * and tested without a store. It is async only because JSONata evaluation is.
 *
 * A transition applies the event to the step states (an answer, a person's decision, a fired timer, a control),
 * then reconciles: start whatever is ready, join what has finished, end the run when the top-level steps are done
 * or one failed. Reconciling twice changes nothing, so a duplicate event is a no-op. What a step does is its
 * kind's (`steps/`); the rules here are every kind's: top-level steps in order, `when`, `on_error`, retries with
 * back-off (an expression that fails, a rejection and a limit are not retried), controls (`pause`, `resume`,
 * `cancel`, `retry` from a top-level step as new attempts), and who may answer or control (`authority.ts`).
 * README.md has the state machine.
 */

import { jsonBytes, LIMITS } from '#shared/domain/breadcrumb.ts';
import type { StepDefinition, WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import { actingPrincipal, controlRefusal, humanResponseRefusal } from './authority.ts';
import { humanInputProblem, inputProblem, type Validate } from './checks.ts';
import { abandonOf, type Effect, effectsOf, freshEffects } from './effects.ts';
import type {
  AnswerEvent,
  ControlEvent,
  HumanEvent,
  MatchEvent,
  RunEvent,
  StartEvent,
  TimerEvent,
} from './events.ts';
import {
  type Evaluate,
  Evaluator,
  expressionFailure,
  type Frame,
  scopeOf,
  TOP_FRAME,
} from './expressions.ts';
import { graphOf, itemPrefix, stepAt } from './graph.ts';
import { type AttemptChain, attemptIdFor, responseErrorIdFor, timerIdFor } from './ids.ts';
import {
  BudgetReached,
  checkDepth,
  countStart,
  countUsage,
  LimitExceededError,
  reserveBudgets,
  runLimits,
  usedOf,
} from './limits.ts';
import { isActive, isTerminal, type Run, type StepState } from './run.ts';
import { descendantKeys, kindOfStep, stepKindOf } from './steps/kinds.ts';
import type { Drive, DriveContext, EndedStatus } from './steps/step-kind.ts';
import { matchesWait } from './steps/wait-for.ts';

export interface AdvanceInput {
  readonly definition: WorkflowDefinition;
  /** The run as stored; undefined before its start. */
  readonly run: Run | undefined;
  readonly event: RunEvent;
  readonly now: Date;
  /** The workflow's assembled context selectors (expressions' `context`). */
  readonly context?: Record<string, unknown>;
  /**
   * Where the run's checks of data run (its input against `input_schema`, its expressions): the run workspace's
   * data checks (`shared/ports/checks.ts`), off the event loop past a slice. Default: on this thread.
   */
  readonly checks?: RunChecks;
}

/** The checks a transition makes, as functions (the engine does no IO itself). */
export interface RunChecks {
  readonly validate: Validate;
  readonly evaluate: Evaluate;
}

export interface AdvanceResult {
  /** The run after the event; undefined when there is no run and the event does not start one. */
  readonly run: Run | undefined;
  /** False when the event changed nothing (a duplicate, a late or unknown answer): nothing to write but effects. */
  readonly changed: boolean;
  /** What to write now: the new effects of this transition, or every effect of the run when nothing changed. */
  readonly effects: Effect[];
  /** Why an event changed nothing, for logs. */
  readonly note?: string;
}

const MAX_CONTROLS_KEPT = 100;
const MAX_LATE_ANSWERS_KEPT = 20;
const MAX_REFUSED_KEPT = 20;

/** Control flow inside a transition: the run fails now (a limit), whatever step was being started. */
class RunFailure extends Error {
  constructor(
    message: string,
    readonly step?: string,
  ) {
    super(message);
  }
}

function addSeconds(now: Date, seconds: number): string {
  return new Date(now.getTime() + seconds * 1000).toISOString();
}

/** JSONata truthiness for `when`: null, false, 0, "" and [] skip. */
function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return Boolean(value);
}

class Transition implements DriveContext {
  readonly graph;
  readonly nowIso: string;
  readonly evaluator: Evaluator;
  /** Effects of this event only (not derivable from state): response errors, cancels of orphaned sub-runs. */
  readonly extra: Effect[] = [];
  note: string | undefined;

  constructor(
    readonly definition: WorkflowDefinition,
    readonly run: Run,
    readonly now: Date,
    readonly context: Record<string, unknown>,
    readonly checks: RunChecks | undefined,
  ) {
    this.graph = graphOf(definition);
    this.nowIso = now.toISOString();
    this.evaluator = new Evaluator(now, checks?.evaluate);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Events

  async apply(event: Exclude<RunEvent, StartEvent>): Promise<void> {
    switch (event.type) {
      case 'answer':
        this.answer(event);
        break;
      case 'human':
        await this.human(event);
        break;
      case 'timer':
        this.timer(event);
        break;
      case 'control':
        this.control(event);
        break;
      case 'matched':
        this.matched(event);
        break;
      case 'wait_refused': {
        const found = this.findAttempt(event.request_id);
        if (found === undefined || found[1].status !== 'waiting' || found[1].kind !== 'wait_for') {
          this.note = `wait refusal ${event.id} is for no waiting wait_for attempt`;
          break;
        }
        this.failAttempt(found[0], event.error, false);
        break;
      }
    }
  }

  private findAttempt(requestId: string): [string, StepState] | undefined {
    for (const entry of Object.entries(this.run.steps)) if (entry[1].attempt_id === requestId) return entry;
    return undefined;
  }

  /** An answer for a step that is no longer waiting for it: recorded when the step was cancelled, else dropped. */
  private late(
    key: string,
    state: StepState,
    id: string,
    by: string,
    ok: boolean,
    usage?: AnswerEvent['usage'],
  ): void {
    if (state.status !== 'cancelled') {
      this.note = `answer ${id} is for step "${key}", which is ${state.status}: ignored`;
      return;
    }
    const late = state.late_answers ?? [];
    if (late.some((l) => l.id === id)) return;
    countUsage(this.run, usage);
    this.run.steps[key] = {
      ...state,
      late_answers: [...late, { id, by, at: this.nowIso, ok }].slice(-MAX_LATE_ANSWERS_KEPT),
    };
  }

  private answer(event: AnswerEvent): void {
    const found = this.findAttempt(event.request_id);
    if (found === undefined) {
      this.note = `answer ${event.id} is for no current step attempt (request ${event.request_id}): ignored`;
      return;
    }
    const [key, state] = found;
    if (state.answer_id === event.id) return;
    const endedBy = stepKindOf(state.kind).endedBy;
    if (state.status !== 'running' || endedBy === 'person' || endedBy === 'timer') {
      this.late(key, state, event.id, event.by, event.ok, event.usage);
      return;
    }
    const answered = { ...state, answer_id: event.id, by: event.by };
    countUsage(this.run, event.usage);
    const stop = event.budget_stop;
    if (!event.ok && stop !== undefined && stop.budget.startsWith('limits.')) {
      // The agent stopped before a call its share of the run's budget would not cover: the step is not failed; it
      // starts again (a new attempt, with a new request) once a person has raised the limit and resumed the run.
      const { budget: _share, timeout_at: _t, ...rest } = answered;
      this.run.steps[key] = { ...rest, status: 'pending' };
      // The run's own figures (the agent's are of its share).
      const unit = stop.unit === 'usd' ? 'cost_nusd' : stop.unit;
      this.stopByBudget({
        budget: stop.budget.replace(/ of run .*$/, ''),
        limit: runLimits(this.definition, this.run)[unit] ?? stop.limit,
        used: usedOf(this.run)[unit],
        unit: stop.unit,
        step: key,
        at: this.nowIso,
      });
      return;
    }
    if (event.ok) {
      this.run.steps[key] = this.ended(answered, 'succeeded', { output: event.output ?? null });
    } else {
      this.run.steps[key] = answered;
      this.failAttempt(key, event.error ?? 'the step failed');
    }
  }

  private async human(event: HumanEvent): Promise<void> {
    const found = this.findAttempt(event.request_id);
    if (found === undefined || stepKindOf(found[1].kind).endedBy !== 'person') {
      this.note = `human response ${event.id} answers no human step of this run (request ${event.request_id})`;
      return;
    }
    const [key, state] = found;
    if (state.answer_id === event.id) return;
    // Only people approve (authority.ts): anything else is answered with why, and the step keeps waiting.
    const refused = humanResponseRefusal(this.run, event);
    if (refused !== undefined) {
      this.note = `human response ${event.id} refused: ${refused}`;
      this.refuse(event.id, event.by, `human response (${event.decision}) to ${key}`, refused);
      this.answerResponse(event, key, refused);
      return;
    }
    const by = actingPrincipal(event);
    if (state.status !== 'waiting') {
      this.late(key, state, event.id, by, event.decision === 'approve');
      return;
    }
    const answered = {
      ...state,
      answer_id: event.id,
      by,
      decision: event.decision,
      ...(event.comment !== undefined ? { comment: event.comment } : {}),
      answered_at: this.nowIso,
    };
    if (event.decision === 'reject') {
      const reason = `rejected by ${by}${event.comment ? `: ${event.comment}` : ''}`;
      this.run.steps[key] = this.ended(answered, 'failed', { error: reason });
      return;
    }
    const problem = await humanInputProblem(this.definition, key, event.input, this.checks?.validate);
    if (problem !== undefined) {
      this.note = `human response ${event.id}: ${problem}`;
      this.answerResponse(event, key, problem);
      return;
    }
    this.run.steps[key] = this.ended(answered, 'succeeded', { output: event.input ?? null });
  }

  /**
   * A write matched a wait_for attempt: the first that matches its own definition's selector and correlation
   * ends it (succeeded, with the breadcrumb's context view and id); a duplicate, a second write, or one for an
   * attempt no longer waiting changes nothing.
   */
  private matched(event: MatchEvent): void {
    const found = this.findAttempt(event.request_id);
    if (found === undefined || found[1].kind !== 'wait_for') {
      this.note = `match ${event.id} is for no wait_for step attempt of this run (${event.request_id})`;
      return;
    }
    const [key, state] = found;
    if (state.answer_id === event.id) return;
    if (state.status !== 'waiting' || state.wake_at === undefined || state.retry_at !== undefined) {
      this.note = `match ${event.id} is for step "${key}", which is ${state.status}: ignored`;
      return;
    }
    const step = stepAt(this.graph, key);
    if (step === undefined || !matchesWait(step, state, event.breadcrumb)) {
      this.note = `match ${event.id} does not match what step "${key}" waits for: ignored`;
      return;
    }
    const { breadcrumb } = event;
    this.run.steps[key] = this.ended(
      { ...state, answer_id: event.id, by: breadcrumb.created_by, answered_at: this.nowIso },
      'succeeded',
      {
        output: {
          id: breadcrumb.id,
          version: breadcrumb.version,
          schema_name: breadcrumb.schema_name,
          tags: [...breadcrumb.tags],
          context: breadcrumb.context,
        },
      },
    );
  }

  private timer(event: TimerEvent): void {
    for (const [key, state] of Object.entries(this.run.steps)) {
      if (state.attempt_id === undefined) continue;
      const own = stepKindOf(state.kind).timer;
      if (
        own !== undefined &&
        state.status === 'waiting' &&
        timerIdFor(state.attempt_id, 'wait') === event.id
      ) {
        const step = stepAt(this.graph, key);
        const outcome =
          own.outcome !== undefined && step !== undefined
            ? own.outcome(step, state)
            : { output: own.fired(state) };
        if ('error' in outcome) this.failAttempt(key, outcome.error);
        else this.run.steps[key] = this.ended(state, 'succeeded', { output: outcome.output });
        return;
      }
      if (
        isActive(state) &&
        state.timeout_at !== undefined &&
        timerIdFor(state.attempt_id, 'timeout') === event.id
      ) {
        const step = stepAt(this.graph, key);
        this.cancelDescendants(key);
        this.orphan(key, state);
        this.failAttempt(key, `timed out after ${step?.timeout_seconds ?? '?'} s`);
        return;
      }
      if (
        state.retry_at !== undefined &&
        state.status === 'waiting' &&
        timerIdFor(state.attempt_id, 'retry') === event.id
      ) {
        const { retry_at: _, ...rest } = state;
        this.run.steps[key] = { ...rest, status: 'pending' };
        return;
      }
    }
    this.note = `timer ${event.id} matches nothing waiting for it`;
  }

  private control(event: ControlEvent): void {
    if (this.run.controls.includes(event.id)) return;
    const forbidden = controlRefusal(this.run, event);
    if (forbidden !== undefined) {
      this.note = `control ${event.id} (${event.action}) refused: ${forbidden}`;
      this.refuse(event.id, event.by, `control ${event.action}`, forbidden);
      return;
    }
    const refused = this.applyControl(event);
    if (refused !== undefined) {
      this.note = `control ${event.id} (${event.action}) refused: ${refused}`;
      return;
    }
    this.run.controls = [...this.run.controls, event.id].slice(-MAX_CONTROLS_KEPT);
  }

  /** Tells the person why a human response was not taken (a `human.error.v1` answering it). */
  private answerResponse(event: HumanEvent, key: string, error: string): void {
    this.extra.push({
      type: 'response_error',
      id: responseErrorIdFor(event.id),
      request_id: event.request_id,
      response_id: event.id,
      step: key,
      error,
    });
  }

  /** Records a refusal on the run once (a redelivery finds it there and changes nothing). */
  private refuse(id: string, by: string, what: string, reason: string): void {
    const refused = this.run.refused ?? [];
    if (refused.some((r) => r.id === id)) return;
    this.run.refused = [...refused, { id, by, what, reason, at: this.nowIso }].slice(-MAX_REFUSED_KEPT);
  }

  /** Applies a control; undefined when applied, else why it cannot be (the run is unchanged). */
  private applyControl(event: ControlEvent): string | undefined {
    const status = this.run.status;
    switch (event.action) {
      case 'pause':
        if (status !== 'running' && status !== 'waiting') return `the run is ${status}`;
        this.run.status = 'paused';
        this.run.paused_by = actingPrincipal(event);
        return undefined;
      case 'resume':
        if (status !== 'paused') return `the run is ${status}, not paused`;
        if (event.limits !== undefined && Object.keys(event.limits).length > 0) {
          const { by: _by, at: _at, ...before } = this.run.raised_limits ?? {};
          this.run.raised_limits = {
            ...before,
            ...event.limits,
            by: actingPrincipal(event),
            at: this.nowIso,
          };
        }
        this.run.status = 'running';
        delete this.run.paused_by;
        delete this.run.stopped_by;
        return undefined;
      case 'cancel':
        if (isTerminal(status)) return `the run has already ended (${status})`;
        for (const [key, state] of Object.entries(this.run.steps)) {
          if (isActive(state) || state.status === 'pending') {
            this.run.steps[key] = this.ended(state, 'cancelled', {});
          }
        }
        this.finish('cancelled', { error: `cancelled by ${actingPrincipal(event)}` });
        return undefined;
      case 'retry':
        return this.retryFrom(event.from_step);
    }
  }

  /** Resets a top-level step and every step after it; undefined when done, else why not. */
  private retryFrom(fromStep: string | undefined): string | undefined {
    const steps = this.definition.steps;
    const index =
      fromStep === undefined
        ? steps.findIndex((s) => {
            const status = this.run.steps[s.id]?.status;
            return status !== 'succeeded' && status !== 'skipped';
          })
        : steps.findIndex((s) => s.id === fromStep);
    if (index < 0) {
      if (fromStep === undefined) return 'every step succeeded; name the step to rerun from';
      return stepAt(this.graph, fromStep) === undefined
        ? `the workflow has no step "${fromStep}"`
        : `"${fromStep}" is inside a parallel or map step; retry from that step instead`;
    }
    const blocker = steps.slice(0, index).find((s) => {
      const state = this.run.steps[s.id];
      return state?.status === 'cancelled' || (state?.status === 'failed' && s.on_error !== 'continue');
    });
    if (blocker !== undefined) {
      return `step "${blocker.id}" before "${steps[index]?.id}" did not succeed (${this.run.steps[blocker.id]?.status}); retry from "${blocker.id}"`;
    }
    for (const step of steps.slice(index)) {
      const state = this.run.steps[step.id];
      for (const key of descendantKeys(step, step.id, '', Object.keys(this.run.steps))) {
        const nested = this.run.steps[key];
        if (nested !== undefined) this.orphan(key, nested);
        delete this.run.steps[key];
      }
      if (state === undefined) continue;
      this.orphan(step.id, state);
      this.run.steps[step.id] = { kind: state.kind, status: 'pending', attempts: state.attempts };
    }
    this.run.status = 'running';
    delete this.run.output;
    delete this.run.error;
    delete this.run.failed_step;
    delete this.run.ended_at;
    delete this.run.paused_by;
    return undefined;
  }

  /**
   * An attempt the run stops waiting for without an answer and without cancelling its step (a timeout, a retry
   * resetting it) is given up (its kind's `abandon`: a sub-run is cancelled); a cancelled step's is in `effectsOf`.
   */
  private orphan(key: string, state: StepState): void {
    if (!isActive(state) || state.attempt_id === undefined) return;
    const cancel = abandonOf(this.definition, key, state, state.attempt_id);
    if (cancel !== undefined) this.extra.push(cancel);
  }

  // -------------------------------------------------------------------------------------------------------------
  // State changes

  /** The state, ended with `status` now: deadlines cleared. */
  ended(state: StepState, status: EndedStatus, result: { output?: unknown; error?: string }): StepState {
    const { timeout_at: _t, wake_at: _w, retry_at: _r, output: _o, error: _e, ...rest } = state;
    return { ...rest, ...result, status, ended_at: this.nowIso };
  }

  /** The current attempt of `key` failed: retry it (after its back-off) or fail the step. */
  failAttempt(key: string, error: string, retriable = true): void {
    const state = this.run.steps[key];
    if (state === undefined) return;
    const retry = stepAt(this.graph, key)?.retry;
    if (retriable && retry !== undefined && state.attempts < retry.max_attempts) {
      const { timeout_at: _t, wake_at: _w, ...rest } = state;
      const delay = retry.backoff_seconds * 2 ** (state.attempts - 1);
      this.run.steps[key] =
        delay > 0
          ? { ...rest, status: 'waiting', error, retry_at: addSeconds(this.now, delay) }
          : { ...rest, status: 'pending', error };
      return;
    }
    this.run.steps[key] = this.ended(state, 'failed', { error });
  }

  cancelDescendants(key: string): void {
    const step = stepAt(this.graph, key);
    if (step === undefined) return;
    const prefix = key.endsWith(']') ? itemPrefix(key) : key.slice(0, key.length - step.id.length);
    for (const nested of descendantKeys(step, key, prefix, Object.keys(this.run.steps))) {
      const state = this.run.steps[nested];
      if (state === undefined) continue;
      if (isActive(state) || state.status === 'pending') {
        this.run.steps[nested] = this.ended(state, 'cancelled', {});
      }
    }
  }

  /** A run budget is used up: the run pauses, saying which, until a person raises it and resumes. */
  stopByBudget(stop: NonNullable<Run['stopped_by']>): void {
    this.run.status = 'paused';
    this.run.stopped_by = stop;
  }

  private finish(
    status: 'succeeded' | 'failed' | 'cancelled',
    result: { output?: unknown; error?: string; step?: string },
  ): void {
    this.run.status = status;
    this.run.ended_at = this.nowIso;
    this.run.completions += 1;
    delete this.run.paused_by;
    delete this.run.stopped_by;
    if (status === 'succeeded') this.run.output = result.output ?? null;
    if (result.error !== undefined) this.run.error = result.error;
    if (result.step !== undefined) this.run.failed_step = result.step;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Reconcile

  async reconcile(): Promise<void> {
    if (isTerminal(this.run.status)) return;
    let outcome: Drive;
    try {
      outcome = await this.driveSequence();
    } catch (error) {
      if (!(error instanceof RunFailure)) throw error;
      this.failRun(error.message, error.step);
      return;
    }
    if (outcome === 'failed') {
      const failed = this.definition.steps.find((s) => this.run.steps[s.id]?.status === 'failed');
      const state = failed === undefined ? undefined : this.run.steps[failed.id];
      this.failRun(`step "${failed?.id}" failed: ${state?.error ?? 'unknown error'}`, failed?.id);
      return;
    }
    if (this.run.status === 'paused') return;
    if (outcome === 'done') {
      await this.complete();
      return;
    }
    const status = this.inFlight();
    if (status === undefined) {
      // Reconcile starts whatever is ready, so a run that is neither done nor failed has something out. Should a
      // shape of run ever reach here with nothing out, it ends with the reason instead of waiting for nothing.
      this.failRun(
        'the run has nothing in flight and nothing it can start (an engine defect; retry to rerun it)',
      );
      return;
    }
    this.run.status = status;
  }

  failRun(error: string, step?: string): void {
    for (const [key, state] of Object.entries(this.run.steps)) {
      if (isActive(state) || state.status === 'pending') {
        this.run.steps[key] = this.ended(state, 'cancelled', {});
      }
    }
    this.finish('failed', { error, ...(step !== undefined ? { step } : {}) });
  }

  /**
   * What the run has out: `running` while a request or a timer is (a leaf step running, a wait, a retry back-off),
   * `waiting` when only people are, undefined when nothing is. Pending steps do not count: after reconcile a
   * pending step is one that waits for an earlier step (a step after a human checkpoint, once a retry reset it).
   */
  private inFlight(): 'running' | 'waiting' | undefined {
    let humanWaiting = false;
    for (const state of Object.values(this.run.steps)) {
      const endedBy = stepKindOf(state.kind).endedBy;
      if (endedBy === 'children') continue;
      if (state.status === 'running') return 'running';
      if (state.status !== 'waiting') continue;
      if (endedBy !== 'person' || state.retry_at !== undefined) return 'running';
      humanWaiting = true;
    }
    return humanWaiting ? 'waiting' : undefined;
  }

  private async complete(): Promise<void> {
    let output: unknown;
    if (this.definition.output === undefined) {
      // No output expression: the last step that ran.
      const last = [...this.definition.steps]
        .reverse()
        .find((s) => this.run.steps[s.id]?.status === 'succeeded');
      output = last === undefined ? null : (this.run.steps[last.id]?.output ?? null);
    } else {
      try {
        output = await this.evaluator.resolve(
          this.definition.output,
          scopeOf(this.run, TOP_FRAME, this.context),
        );
      } catch (error) {
        const message = expressionFailure(error);
        if (message === undefined) throw error;
        this.failRun(`output: ${message}`);
        return;
      }
    }
    this.finish('succeeded', { output });
  }

  private canStart(): boolean {
    return this.run.status === 'running' || this.run.status === 'waiting';
  }

  private async driveSequence(): Promise<Drive> {
    for (const step of this.definition.steps) {
      const outcome = await this.driveStep(step, step.id, step.id, [], TOP_FRAME);
      if (outcome !== 'done') return outcome;
    }
    return 'done';
  }

  async driveStep(
    step: StepDefinition,
    key: string,
    segment: string,
    chain: AttemptChain,
    frame: Frame,
  ): Promise<Drive> {
    // A composite that failed with retries left (back-off 0) starts again in the same transition: bounded by
    // max_attempts.
    for (let pass = 0; pass <= (step.retry?.max_attempts ?? 1); pass++) {
      let state = this.run.steps[key];
      if (state === undefined || state.status === 'pending') {
        if (!this.canStart()) return 'blocked';
        await this.start(step, key, segment, chain, frame);
        state = this.run.steps[key];
        if (state === undefined) return 'blocked';
      }
      switch (state.status) {
        case 'succeeded':
        case 'skipped':
          return 'done';
        case 'failed':
          return step.on_error === 'continue' ? 'done' : 'failed';
        case 'cancelled':
        case 'waiting':
          return 'blocked';
        case 'pending':
          continue;
        case 'running': {
          const kind = kindOfStep(step);
          if (kind.drive === undefined) return 'blocked';
          const here: AttemptChain = [...chain, [segment, state.attempts]];
          await kind.drive(this, step, key, here, frame);
          if (this.run.steps[key]?.status === 'pending') continue;
          return this.run.steps[key]?.status === 'succeeded'
            ? 'done'
            : this.run.steps[key]?.status === 'failed'
              ? step.on_error === 'continue'
                ? 'done'
                : 'failed'
              : 'blocked';
        }
      }
    }
    return 'blocked';
  }

  /** Starts an attempt of the step at `key` (its state is absent or pending). */
  private async start(step: StepDefinition, key: string, segment: string, chain: AttemptChain, frame: Frame) {
    const kind = kindOfStep(step);
    const previous = this.run.steps[key] ?? { kind: kind.kind, status: 'pending' as const, attempts: 0 };
    const scope = () => scopeOf(this.run, frame, this.context);
    const fail = (error: string) => {
      this.run.steps[key] = this.ended(
        { ...previous, attempts: previous.attempts + 1, started_at: this.nowIso },
        'failed',
        { error },
      );
    };
    try {
      if (step.when !== undefined && !truthy(await this.evaluator.expression(step.when, scope()))) {
        this.run.steps[key] = this.ended(
          { kind: kind.kind, status: 'pending', attempts: previous.attempts },
          'skipped',
          {},
        );
        return;
      }
    } catch (error) {
      const message = expressionFailure(error);
      if (message === undefined) throw error;
      return fail(`when: ${message}`);
    }
    try {
      countStart(this.definition, this.run, kind, key);
    } catch (error) {
      if (error instanceof LimitExceededError) throw new RunFailure(error.message, key);
      if (error instanceof BudgetReached) {
        this.stopByBudget({ ...error.stop, at: this.nowIso });
        return;
      }
      throw error;
    }
    const attempts = previous.attempts + 1;
    // Descendants of an earlier attempt (a rerun parallel or map) go: their ids carry this attempt's number.
    for (const nested of descendantKeys(step, key, frame.prefix, Object.keys(this.run.steps))) {
      delete this.run.steps[nested];
    }
    const base: StepState = {
      kind: kind.kind,
      status: 'running',
      attempts,
      attempt_id: attemptIdFor(this.run.run_id, [...chain, [segment, attempts]]),
      started_at: this.nowIso,
      ...(step.timeout_seconds !== undefined
        ? { timeout_at: addSeconds(this.now, step.timeout_seconds) }
        : {}),
      // A retried step keeps the error of the attempt that failed until this one ends.
      ...(previous.error !== undefined ? { error: previous.error } : {}),
    };
    try {
      const started = await kind.start({
        step,
        base,
        now: this.now,
        evaluator: this.evaluator,
        scope,
        ended: (state, status, result) => this.ended(state, status, result),
      });
      if ('fail' in started) return fail(started.fail);
      this.run.steps[key] = started;
    } catch (error) {
      const message = expressionFailure(error);
      if (message === undefined) throw error;
      fail(message);
    }
  }
}

function newRun(definition: WorkflowDefinition, event: StartEvent, now: Date): Run {
  return {
    run_id: event.run_id,
    workflow: definition.workflow_id,
    definition_id: event.definition_id,
    workflow_version: event.workflow_version,
    status: 'running',
    input: event.input,
    steps: {},
    request_id: event.request_id,
    depth: event.depth,
    ...(event.parent !== undefined ? { parent: event.parent } : {}),
    reply_tags: [...event.reply_tags],
    trigger: { id: event.trigger.id, schema_name: event.trigger.schema_name, context: event.trigger.context },
    started_at: now.toISOString(),
    counters: { steps: 0, llm_calls: 0 },
    completions: 0,
    controls: [],
    ...(event.driver !== undefined ? { driver: event.driver } : {}),
    ...(event.definition !== undefined ? { definition: event.definition } : {}),
  };
}

/** Effects by id, first kept: one id is one write. */
function unique(effects: Effect[]): Effect[] {
  const seen = new Set<string>();
  return effects.filter((e) => {
    if (seen.has(e.id)) return false;
    seen.add(e.id);
    return true;
  });
}

/**
 * Why the run cannot be stored (its breadcrumb's context over the size limit), naming the step that holds the
 * most; undefined when it fits. A map over payloads grows the run by every item and output: such a run fails
 * with this reason instead of a write that would be refused and leave the run where it was.
 */
function sizeProblem(run: Run): { error: string; step?: string } | undefined {
  const bytes = jsonBytes(run);
  if (bytes <= LIMITS.maxContextBytes) return undefined;
  let step: string | undefined;
  let largest = 0;
  for (const [key, state] of Object.entries(run.steps)) {
    const size = jsonBytes(state);
    if (size > largest) [step, largest] = [key, size];
  }
  const kb = (n: number) => Math.ceil(n / 1024);
  const where =
    step === undefined
      ? 'its input'
      : `step "${step}" holds ${kb(largest)} KB; map over references to the data, not the data itself`;
  return {
    error: `the run would hold ${kb(bytes)} KB, over the ${kb(LIMITS.maxContextBytes)} KB a run can hold (${where})`,
    ...(step !== undefined ? { step } : {}),
  };
}

export async function advance(input: AdvanceInput): Promise<AdvanceResult> {
  const { definition, event, now } = input;
  const context = input.context ?? {};
  if (event.type === 'start') {
    if (input.run !== undefined) {
      return {
        run: input.run,
        changed: false,
        effects: effectsOf(definition, input.run),
        note: 'run already started',
      };
    }
    const run = newRun(definition, event, now);
    const transition = new Transition(definition, run, now, context, input.checks);
    const problem = await inputProblem(definition, event.input, input.checks?.validate);
    try {
      if (problem !== undefined) throw new RunFailure(problem);
      checkDepth(definition, event.depth, 'this run');
    } catch (error) {
      if (error instanceof RunFailure || error instanceof LimitExceededError) {
        transition.failRun(error.message);
        return { run, changed: true, effects: unique(effectsOf(definition, run)) };
      }
      throw error;
    }
    await transition.reconcile();
    reserveBudgets(definition, run);
    const tooLarge = sizeProblem(run);
    if (tooLarge !== undefined) {
      const failed = newRun(definition, event, now);
      // The request's context is copied into `trigger`; when that alone is too much, the input is kept once.
      if (jsonBytes(failed) > LIMITS.maxContextBytes) failed.trigger = { ...failed.trigger, context: null };
      new Transition(definition, failed, now, context, input.checks).failRun(tooLarge.error, tooLarge.step);
      return { run: failed, changed: true, effects: unique(effectsOf(definition, failed)) };
    }
    return { run, changed: true, effects: unique([...effectsOf(definition, run), ...transition.extra]) };
  }
  if (input.run === undefined) return { run: undefined, changed: false, effects: [], note: 'no such run' };
  const before = input.run;
  let run = structuredClone(before);
  let transition = new Transition(definition, run, now, context, input.checks);
  await transition.apply(event);
  await transition.reconcile();
  reserveBudgets(definition, run);
  const tooLarge = sizeProblem(run);
  if (tooLarge !== undefined) {
    // The run as it would be cannot be stored: the run as it was ends instead, saying why.
    run = structuredClone(before);
    transition = new Transition(definition, run, now, context, input.checks);
    transition.failRun(tooLarge.error, tooLarge.step);
  }
  const beforeEffects = effectsOf(definition, before);
  const afterEffects = effectsOf(definition, run);
  const changed = JSON.stringify(run) !== JSON.stringify(before);
  const note = transition.note === undefined ? {} : { note: transition.note };
  if (!changed)
    return { run: before, changed, effects: unique([...afterEffects, ...transition.extra]), ...note };
  const fired = event.type === 'timer' ? event.id : undefined;
  return {
    run,
    changed,
    effects: [...freshEffects(beforeEffects, afterEffects, fired), ...transition.extra],
    ...note,
  };
}
