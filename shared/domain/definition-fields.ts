/**
 * Fields every definition schema shares (names, hop limit, subscriptions, JSON Schema objects), in a module of
 * their own so the per-kind schema modules (`definitions.ts`, `workflow-definition.ts`) can use them without
 * importing each other.
 */
import { SelectorSchema } from './selector.ts';
import * as z from './zod.ts';

export const DEFAULT_HOP_LIMIT = 16;

/** Names become principals (`agent:<name>`) and rule names: no spaces, no `#` or `/`. */
export const NameSchema = z
  .string({ error: 'expected a string' })
  .check(
    z.regex(
      /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
      'expected 1-128 characters: letters, digits, ".", "_", ":" or "-", starting with a letter or digit',
    ),
  );

export const JsonSchemaObject = z.record(z.string(), z.unknown(), { error: 'expected a JSON Schema object' });

export const HopLimitSchema = z._default(
  z
    .number({ error: 'expected a whole number' })
    .check(z.int('expected a whole number'), z.minimum(1, 'at least 1'), z.maximum(256, 'at most 256')),
  DEFAULT_HOP_LIMIT,
);

export const SelectorsSchema = z.array(SelectorSchema, { error: 'expected an array of selectors' });

export const SubscriptionsSchema = z.object(
  { selectors: SelectorsSchema },
  { error: 'expected { selectors: [...] }' },
);

/** A whole number in [min, max], with messages that say so. */
export function wholeNumber(min: number, max: number) {
  return z
    .number({ error: 'expected a whole number' })
    .check(
      z.int('expected a whole number'),
      z.minimum(min, `at least ${min}`),
      z.maximum(max, `at most ${max}`),
    );
}
