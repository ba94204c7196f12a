/**
 * `wait_for` steps, `{ wait_for: { selector, correlate?, timeout_seconds, on_timeout? } }`: the step waits until a
 * breadcrumb matching `selector` (the subscription selector language) is written in the workspace, optionally one
 * whose context field `correlate.field` equals the value of `correlate.equals` (a JSONata expression over the run's
 * scope, evaluated when the step starts). At `timeout_seconds` the step fails, or succeeds with `on_timeout.output`.
 *
 * The selectors join the workflow's rule when the definition is written (`definitions.ts`), so a workflow has at
 * most MAX_WAIT_FOR_STEPS of them: the rule's pattern is bounded like any subscription's (size, complexity).
 * An orchestrating agent's plan has none (agent functions have no timers and no wait index).
 */
import { ContextPathSchema, type Selector, SelectorSchema } from '../selector.ts';
import * as z from '../zod.ts';
import { bare, ExpressionSchema, MAX_TIMER_SECONDS, type StepKindSchema } from './step-schema.ts';

/** wait_for steps per workflow (nested included): each adds its selector to the workflow's one rule. */
export const MAX_WAIT_FOR_STEPS = 10;

export interface WaitForStepFields {
  wait_for?: {
    selector: Selector;
    /** `field`: a path into the matching breadcrumb's context (`$.order_id`); `equals`: JSONata over the run. */
    correlate?: { field: string; equals: string } | undefined;
    timeout_seconds: number;
    /** Absent: the step fails at the timeout. Present: it succeeds with this output (a literal JSON value). */
    on_timeout?: { output: unknown } | undefined;
  };
}

export const waitForStepSchema: StepKindSchema<'wait_for', WaitForStepFields> = {
  kind: 'wait_for',
  fields: () => ({
    wait_for: z.optional(
      z.object(
        {
          selector: SelectorSchema,
          correlate: z.optional(
            z.object(
              { field: ContextPathSchema, equals: ExpressionSchema },
              {
                error:
                  'expected { field: "$.path" in the awaited breadcrumb\'s context, equals: JSONata over the run }',
              },
            ),
          ),
          timeout_seconds: z
            .number({ error: 'expected a whole number of seconds' })
            .check(
              z.int('expected a whole number of seconds'),
              z.minimum(1, 'at least 1'),
              z.maximum(MAX_TIMER_SECONDS, `at most ${MAX_TIMER_SECONDS}`),
            ),
          on_timeout: z.optional(
            z.object(
              { output: z.unknown() },
              { error: 'expected { output } (the step output at the timeout)' },
            ),
          ),
        },
        { error: 'expected { selector, correlate?, timeout_seconds, on_timeout? }' },
      ),
    ),
  }),
  check: (step, checks, issue) => {
    const waitFor = step.wait_for;
    if (waitFor === undefined) return;
    if (waitFor.selector.role === 'context') {
      issue(['wait_for', 'selector', 'role'], 'a wait_for selector waits for a write: its role is "trigger"');
    }
    if (waitFor.selector.fetch !== undefined) {
      issue(
        ['wait_for', 'selector', 'fetch'],
        'a wait_for selector fetches nothing: the matching write is the output',
      );
    }
    if (waitFor.correlate !== undefined && checks.expression !== undefined) {
      const message = checks.expression(bare(waitFor.correlate.equals));
      if (message !== undefined) issue(['wait_for', 'correlate', 'equals'], message);
    }
  },
  orchestrationIssues: (step) =>
    step.wait_for === undefined
      ? []
      : [
          {
            path: ['wait_for'],
            message: 'an orchestration has no wait_for steps (they need a timer and a rule)',
          },
        ],
};
