/**
 * Drives the pure engine (shared/core/orchestration/advance.ts) the way the workflow executor does, without a store:
 * it keeps the run, a clock, and every effect ever asked for, and builds the events a tool, a person, a timer or a
 * control would send.
 */

import { type AdvanceResult, advance } from '#shared/core/orchestration/advance.ts';
import type { Effect, RequestEffect, TimerEffect } from '#shared/core/orchestration/effects.ts';
import { effectsOf } from '#shared/core/orchestration/effects.ts';
import type { ControlAction, RunEvent, StartEvent } from '#shared/core/orchestration/events.ts';
import { runIdFor } from '#shared/core/orchestration/ids.ts';
import type { Run, StepState } from '#shared/core/orchestration/run.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import type { WorkflowDefinition } from '#shared/domain/workflow-definition.ts';

export function workflow(context: Record<string, unknown>): WorkflowDefinition {
  const parsed = validateDefinition('workflow.def.v1', { workflow_id: 'wf', ...context });
  if (parsed.kind !== 'workflow') throw new Error('expected a workflow');
  return parsed.definition;
}

export function startEvent(input: unknown, overrides: Partial<StartEvent> = {}): StartEvent {
  return {
    type: 'start',
    run_id: runIdFor('req1'),
    request_id: 'req1',
    definition_id: 'wf-def',
    workflow_version: 1,
    input,
    depth: 0,
    reply_tags: [],
    trigger: { id: 'req1', schema_name: 'workflow.request.v1', context: { workflow: 'wf', input } },
    ...overrides,
  };
}

let answers = 0;

export class RunHarness {
  run: Run | undefined;
  now = new Date('2026-01-01T00:00:00.000Z');
  /** Every effect any transition returned, in order. */
  readonly written: Effect[] = [];
  readonly results: AdvanceResult[] = [];

  constructor(readonly definition: WorkflowDefinition) {}

  async send(event: RunEvent): Promise<AdvanceResult> {
    const result = await advance({ definition: this.definition, run: this.run, event, now: this.now });
    this.run = result.run;
    this.written.push(...result.effects);
    this.results.push(result);
    return result;
  }

  start(input: unknown = {}, overrides: Partial<StartEvent> = {}): Promise<AdvanceResult> {
    return this.send(startEvent(input, overrides));
  }

  tick(seconds: number): void {
    this.now = new Date(this.now.getTime() + seconds * 1000);
  }

  get current(): Run {
    if (this.run === undefined) throw new Error('no run');
    return this.run;
  }

  state(key: string): StepState {
    const state = this.current.steps[key];
    if (state === undefined) throw new Error(`no step ${key}: ${Object.keys(this.current.steps).join(', ')}`);
    return state;
  }

  /** The requests the run has out now (derived from its state). */
  openRequests(): RequestEffect[] {
    return effectsOf(this.definition, this.current).filter((e): e is RequestEffect => e.type === 'request');
  }

  openTimers(): TimerEffect[] {
    return effectsOf(this.definition, this.current).filter((e): e is TimerEffect => e.type === 'timer');
  }

  request(step: string): RequestEffect {
    const found = this.openRequests().find((r) => r.step === step);
    if (found === undefined) {
      throw new Error(
        `no open request for ${step}; open: ${this.openRequests()
          .map((r) => r.step)
          .join(', ')}`,
      );
    }
    return found;
  }

  answerEvent(step: string, output: unknown, ok = true, id = `ans-${++answers}`): RunEvent {
    const request = this.request(step);
    return {
      type: 'answer',
      id,
      request_id: request.id,
      ok,
      ...(ok ? { output } : { error: String(output) }),
      by: `tool:${request.target ?? 'x'}`,
    };
  }

  answer(step: string, output: unknown = { ok: step }): Promise<AdvanceResult> {
    return this.send(this.answerEvent(step, output));
  }

  fail(step: string, error = 'boom'): Promise<AdvanceResult> {
    return this.send(this.answerEvent(step, error, false));
  }

  human(
    step: string,
    decision: 'approve' | 'reject',
    input?: unknown,
    extra: { comment?: string; by?: string; id?: string } = {},
  ): Promise<AdvanceResult> {
    return this.send({
      type: 'human',
      id: extra.id ?? `resp-${++answers}`,
      request_id: this.request(step).id,
      decision,
      ...(input !== undefined ? { input } : {}),
      ...(extra.comment !== undefined ? { comment: extra.comment } : {}),
      by: extra.by ?? 'user:ann',
    });
  }

  fire(step: string, purpose: TimerEffect['purpose']): Promise<AdvanceResult> {
    const timer = this.openTimers().find((t) => t.step === step && t.purpose === purpose);
    if (timer === undefined) throw new Error(`no ${purpose} timer for ${step}`);
    return this.send({ type: 'timer', id: timer.id });
  }

  control(action: ControlAction, fromStep?: string, id = `ctl-${++answers}`): Promise<AdvanceResult> {
    return this.send({
      type: 'control',
      id,
      action,
      ...(fromStep !== undefined ? { from_step: fromStep } : {}),
      by: 'user:ann',
    });
  }
}
