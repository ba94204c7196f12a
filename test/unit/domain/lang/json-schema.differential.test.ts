/**
 * crumbs' JSON Schema validator (`shared/domain/lang/json-schema.ts`, on @cfworker/json-schema) against Ajv 8 (draft
 * 2020-12), the validator it replaced: on generated schemas and generated JSON values, both must agree whether the
 * value conforms. Ajv runs `pattern` on crumbs' linear engine (its `code.regExp` option; re2js under `linear-regex.ts`),
 * the one crumbs uses for patterns from data, so a pattern means the same to both.
 *
 * Generated schemas use the keywords definitions write (type, properties, required, additionalProperties, items,
 * prefixItems, enum, const, numeric and length bounds, pattern, anyOf, oneOf, allOf, not, $defs with $ref). Formats
 * are left out: Ajv validates none without ajv-formats, and crumbs annotates them only, as 2020-12 says.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileJsonSchema } from '#shared/domain/lang/json-schema.ts';
import { LinearRegExp } from '#shared/domain/lang/linear-regex.ts';
import { assertDifferential } from '../../../support/differential.ts';

/**
 * Ajv's RegExp engine option backed by crumbs' linear engine (`LinearRegExp`, re2js with JavaScript's meaning of
 * the pattern). Ajv keys compiled patterns by `toString()`, as RegExp prints.
 */
const re2Engine = Object.assign(
  (pattern: string, flags: string) => {
    const compiled = new LinearRegExp(pattern, flags);
    return { test: (s: string) => compiled.test(s), toString: () => `/${pattern}/${flags}` };
  },
  { code: 're2js' },
);

const ajv = new Ajv2020({
  strict: false,
  allErrors: true,
  code: { regExp: re2Engine },
  validateFormats: false,
});

type Schema = Record<string, unknown> | boolean;

const names = fc.constantFrom('a', 'b', 'c', 'id', 'n');
const patterns = fc.constantFrom('^a', 'b$', '^[a-c]+$', '\\d', '^x?y{1,3}$', '(ab|cd)', '^$', '[^a]');

const leafSchema: fc.Arbitrary<Schema> = fc.oneof(
  fc.boolean(),
  fc.record(
    { type: fc.constantFrom('string', 'number', 'integer', 'boolean', 'null', 'array', 'object') },
    { requiredKeys: ['type'] },
  ),
  fc.record(
    { type: fc.constant('string'), minLength: fc.nat(3), maxLength: fc.nat(5), pattern: patterns },
    {
      requiredKeys: ['type'],
    },
  ),
  fc.record(
    {
      type: fc.constantFrom('number', 'integer'),
      minimum: fc.integer({ min: -5, max: 5 }),
      maximum: fc.integer({ min: -5, max: 10 }),
      exclusiveMinimum: fc.integer({ min: -5, max: 5 }),
      multipleOf: fc.constantFrom(1, 2, 0.5),
    },
    { requiredKeys: [] },
  ),
  fc.record({ enum: fc.array(fc.jsonValue({ maxDepth: 1 }), { minLength: 1, maxLength: 3 }) }),
  fc.record({ const: fc.jsonValue({ maxDepth: 1 }) }),
);

/** Generated schemas; with `ref`, a subschema may be `{ $ref: '#/$defs/inner' }`, defined at the root. */
function schemas(ref: boolean): fc.Arbitrary<Schema> {
  return fc.letrec<{ schema: Schema }>((tie) => ({
    schema: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leafSchema,
      ...(ref ? [fc.constant({ $ref: '#/$defs/inner' })] : []),
      fc.record(
        {
          type: fc.constant('object'),
          properties: fc.dictionary(names, tie('schema'), { maxKeys: 3 }),
          required: fc.uniqueArray(names, { maxLength: 2 }),
          additionalProperties: fc.oneof(fc.boolean(), tie('schema')),
          minProperties: fc.nat(2),
        },
        { requiredKeys: ['type'] },
      ),
      fc.record(
        {
          type: fc.constant('array'),
          items: tie('schema'),
          prefixItems: fc.array(tie('schema'), { maxLength: 2 }),
          minItems: fc.nat(2),
          maxItems: fc.nat(4),
          uniqueItems: fc.boolean(),
        },
        { requiredKeys: ['type'] },
      ),
      fc.record({ anyOf: fc.array(tie('schema'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ oneOf: fc.array(tie('schema'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ allOf: fc.array(tie('schema'), { minLength: 1, maxLength: 2 }) }),
      fc.record({ not: tie('schema') }),
    ),
  })).schema;
}

const schema: fc.Arbitrary<Schema> = fc
  .record({ body: schemas(true), inner: schemas(false) })
  .map(({ body, inner }) => ({ allOf: [body], $defs: { inner } }));

const value = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom('a', 'ab', 'b', 'cd', 'x', 'xyy', '', '7', 'abc'),
    fc.integer({ min: -6, max: 12 }),
    fc.constantFrom(0.5, 1.5, -2.5),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(names, tie('value'), { maxKeys: 4 }),
  ),
})).value;

let key = 0;

describe('the JSON Schema validator against Ajv 8 (draft 2020-12, patterns on re2js)', () => {
  it('agrees whether a schema is usable, and then whether a value conforms, on generated schemas and values', () => {
    assertDifferential(
      fc.property(schema, fc.array(value, { minLength: 1, maxLength: 5 }), (s, values) => {
        const ajvAccepts = ajv.validateSchema(s) === true;
        let ours: ReturnType<typeof compileJsonSchema> | undefined;
        let refusal: unknown;
        try {
          ours = compileJsonSchema(`differential-${key++}`, s, 'a generated schema');
        } catch (error) {
          refusal = error;
        }
        expect(
          ours !== undefined,
          `${JSON.stringify(s)}: ours ${refusal ? String(refusal) : 'accepts'}, Ajv ${JSON.stringify(ajv.errors)}`,
        ).toBe(ajvAccepts);
        if (!ours) return;
        const theirs = ajv.compile(structuredClone(s));
        // As JSON arrives: plain objects (fast-check's dictionaries have no prototype, which Ajv's equality sees).
        for (const v of values.map((raw) => JSON.parse(JSON.stringify(raw)) as unknown)) {
          const ourIssues = ours.validate(v);
          expect(
            ourIssues.length === 0,
            `${JSON.stringify(s)} on ${JSON.stringify(v)}: ours ${JSON.stringify(ourIssues)}, Ajv ${JSON.stringify(theirs.errors)}`,
          ).toBe(theirs(v));
        }
      }),
      1_000,
    );
  }, 60_000);
});
