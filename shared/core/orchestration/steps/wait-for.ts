/**
 * Engine half of `wait_for` steps: the attempt evaluates its correlation value and waits (`waiting`, `wake_at` =
 * its deadline, `waiting_for` = what it waits for). While it waits it has an entry in the wait index (`effects.ts`
 * `wait_entry`), through which a matching write finds it (`workflow-kind.ts`) and resumes it with a `matched`
 * event (`advance.ts`): the step succeeds with the matching breadcrumb (its context view) and its id. At the
 * deadline its timer fires: the step fails saying what it waited for, or succeeds with `on_timeout.output`.
 */
import { getPath } from '#shared/domain/selector.ts';
import { waitForStepSchema } from '#shared/domain/steps/wait-for.ts';
import type { StepDefinition } from '#shared/domain/workflow-definition.ts';
import { matchesSelector } from '#shared/routing/compiler.ts';
import type { MatchedBreadcrumb } from '../events.ts';
import type { StepState } from '../run.ts';
import type { StepKind } from './step-kind.ts';

/** A correlation value is a key of the wait index: a scalar, and a short one. */
const MAX_CORRELATION_CHARS = 1024;

export type CorrelationValue = string | number | boolean;

export function isCorrelationValue(value: unknown): value is CorrelationValue {
  return (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** What the step waits for, in words (its timeout error). */
function awaited(state: StepState, seconds: number): string {
  const correlation = state.waiting_for?.correlation;
  const where =
    correlation === undefined ? '' : ` with ${correlation.field} = ${JSON.stringify(correlation.value)}`;
  return `no breadcrumb matching the wait_for selector${where} was written within ${seconds} s`;
}

/**
 * Whether `breadcrumb` ends the wait of `state` (a step of `step`): it matches the selector of the run's own
 * definition version and carries the correlation value at the correlation field.
 */
export function matchesWait(step: StepDefinition, state: StepState, breadcrumb: MatchedBreadcrumb): boolean {
  const spec = step.wait_for;
  if (spec === undefined || state.waiting_for === undefined) return false;
  if (!matchesSelector(spec.selector, breadcrumb)) return false;
  const correlation = state.waiting_for.correlation;
  return correlation === undefined || getPath(breadcrumb.context, correlation.field) === correlation.value;
}

export const waitForStep: StepKind<'wait_for'> = {
  kind: 'wait_for',
  schema: waitForStepSchema,
  endedBy: 'timer',
  counts: { step: true },
  start: async ({ step, base, now, evaluator, scope }) => {
    const spec = step.wait_for;
    if (spec === undefined) return { fail: 'not a wait_for step' };
    let correlation: { field: string; value: CorrelationValue } | undefined;
    if (spec.correlate !== undefined) {
      const value = await evaluator.expression(spec.correlate.equals, scope());
      if (!isCorrelationValue(value)) {
        return {
          fail: `wait_for.correlate.equals gave ${describe(value)}; expected a string, number or boolean to wait for`,
        };
      }
      if (typeof value === 'string' && value.length > MAX_CORRELATION_CHARS) {
        return {
          fail: `wait_for.correlate.equals gave ${value.length} characters; at most ${MAX_CORRELATION_CHARS}`,
        };
      }
      correlation = { field: spec.correlate.field, value };
    }
    const until = new Date(now.getTime() + spec.timeout_seconds * 1000).toISOString();
    return {
      ...base,
      status: 'waiting',
      wake_at: until,
      waiting_for: { selector: spec.selector, ...(correlation !== undefined ? { correlation } : {}), until },
    };
  },
  timer: {
    at: (state) => state.wake_at,
    fired: () => null,
    outcome: (step, state) => {
      const spec = step.wait_for;
      if (spec?.on_timeout !== undefined) return { output: spec.on_timeout.output ?? null };
      return { error: awaited(state, spec?.timeout_seconds ?? 0) };
    },
  },
};
