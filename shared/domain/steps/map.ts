/**
 * `map` steps, `{ map: { items: "=<JSONata>", step, max_concurrency? } }`: one `step` per item, at most
 * `max_concurrency` in flight; the output is the items' outputs in item order.
 */
import { wholeNumber } from '../definition-fields.ts';
import * as z from '../zod.ts';
import type { StepDefinition } from './kinds.ts';
import { bare, ExpressionSchema, type StepKindSchema } from './step-schema.ts';

/** Items of one map in flight at once when `max_concurrency` is absent: answers to one run serialize on it. */
export const DEFAULT_MAP_CONCURRENCY = 10;

export interface MapStepFields {
  map?: {
    /** JSONata giving the array of items. A leading "=" is accepted. */
    items: string;
    step: StepDefinition;
    max_concurrency?: number | undefined;
  };
}

export const mapStepSchema: StepKindSchema<'map', MapStepFields> = {
  kind: 'map',
  fields: (step) => ({
    get map() {
      return z.optional(
        z.object(
          {
            items: ExpressionSchema,
            get step() {
              return step();
            },
            max_concurrency: z.optional(wholeNumber(1, 100)),
          },
          { error: 'expected { items, step, max_concurrency? }' },
        ),
      );
    },
  }),
  nested: (step) => (step.map === undefined ? [] : [[step.map.step, ['map', 'step']] as const]),
  check: (step, checks, issue) => {
    if (step.map === undefined || checks.expression === undefined) return;
    const message = checks.expression(bare(step.map.items));
    if (message !== undefined) issue(['map', 'items'], message);
  },
};
