/**
 * Keys objects inherit (`constructor`, `prototype`, `toString`, …) are data wherever a context flows: the DynamoDB
 * marshalling, `llm_hints` views, selectors' compiled patterns and the matcher. And paths naming `__proto__` or
 * `constructor.prototype` never reach `Object` or its prototype.
 */
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { storable } from '#shared/adapters/dynamodb/items.ts';
import { applyLlmHints, LlmHintsSchema } from '#shared/domain/llm-hints.ts';
import { SelectorSchema } from '#shared/domain/selector.ts';
import { compileSelector, matchesSelector } from '#shared/routing/compiler.ts';

const FOOLING = {
  constructor: { name: 'String' },
  a: { constructor: { name: 'Set' }, size: 1 },
  b: [{ constructor: { name: 'Map' } }, { constructor: { name: 'Buffer' } }],
  c: { constructor: { name: 'Number' } },
  d: { constructor: { name: 'Boolean' } },
  prototype: { constructor: 1 },
  toString: 'x',
};

const probe = Object as unknown as Record<string, unknown>;
afterEach(() => {
  expect(typeof Object.prototype.toString).toBe('function');
  expect(({} as Record<string, unknown>).x).toBeUndefined();
  expect(probe.foo).toBeUndefined();
});

describe('storable (DynamoDB marshalling)', () => {
  it('marshals values whose constructor key would fool the SDK type check, and reads them back unchanged', () => {
    const options = { removeUndefinedValues: true };
    // The SDK alone fails or corrupts: a 5xx before, or "[object Object]" stored as a string.
    expect(() => marshall({ context: FOOLING } as never, options)).toThrow();
    const item = marshall({ context: storable(FOOLING) } as never, options);
    expect(unmarshall(item)).toEqual({ context: FOOLING });
  });

  it('leaves what is not a plain object as it is', () => {
    const tags = new Set(['a']);
    const bytes = new Uint8Array([1]);
    expect(storable(tags)).toBe(tags);
    expect(storable(bytes)).toBe(bytes);
    expect(storable([1, 'x', null])).toEqual([1, 'x', null]);
  });
});

describe('llm_hints on inherited keys', () => {
  it('includes, excludes and formats them as data', () => {
    const context = { ...FOOLING, secret: 's' };
    expect(applyLlmHints(context, { include: ['constructor.name', 'prototype', 'a.size'] })).toEqual({
      constructor: { name: 'String' },
      prototype: { constructor: 1 },
      a: { size: 1 },
    });
    expect(applyLlmHints(context, { exclude: ['constructor', 'secret'] })).not.toHaveProperty('secret');
    expect(
      applyLlmHints(context, {
        transform: { f: { type: 'format', format: '{constructor.name}|{a.constructor.name}' } },
      }),
    ).toEqual({ f: 'String|Set' });
  });

  it('finds nothing a context does not own: no function or prototype is picked up, changed or deleted', () => {
    const include = LlmHintsSchema.parse({
      include: ['constructor', 'constructor.name', 'toString', '__proto__.x'],
    });
    expect(applyLlmHints({ a: 1 }, include)).toEqual({});
    expect(
      applyLlmHints({ a: 1 }, { exclude: ['__proto__.toString', 'constructor.prototype.valueOf'] }),
    ).toEqual({
      a: 1,
    });
    expect(
      applyLlmHints({ a: 1 }, { transform: { f: { type: 'format', format: '{constructor}{toString}.' } } }),
    ).toEqual({ f: '.' });
    // As JSON.parse makes it: an own key named __proto__ (an object literal would set the prototype instead).
    const hints = JSON.parse(
      '{"transform":{"__proto__":{"type":"literal","literal":{"x":1}}},"mode":"merge"}',
    );
    const merged = applyLlmHints({ a: 1 }, hints) as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.hasOwn(merged, '__proto__')).toBe(true);
  });
});

describe('selectors on inherited keys', () => {
  const subject = (context: Record<string, unknown>) => ({ schema_name: 'a.b.v1', tags: [], context });

  it('compiles and matches paths through constructor and prototype as context fields', () => {
    for (const path of ['$.constructor', '$.constructor.name', '$.constructor.foo', '$.prototype.x']) {
      const selector = { schema_name: 'a.b.v1', context_match: [{ path, op: 'eq' as const, value: 'go' }] };
      const context: Record<string, unknown> = {};
      let node = context;
      const steps = path.slice(2).split('.');
      for (const step of steps.slice(0, -1)) {
        node[step] = {};
        node = node[step] as Record<string, unknown>;
      }
      node[steps.at(-1) as string] = 'go';
      expect(compileSelector(selector), path).toBeDefined();
      expect(matchesSelector(selector, subject(context)), path).toBe(true);
      expect(matchesSelector(selector, subject({})), path).toBe(false);
    }
  });

  it('refuses a __proto__ step with an error naming it', () => {
    const parsed = SelectorSchema.safeParse({
      context_match: [{ path: '$.__proto__.x', op: 'exists', value: true }],
    });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error)).toContain('__proto__');
  });
});
