import { describe, expect, it } from 'vitest';
import { InvalidJsonSchemaError, NonRetriableError } from '#shared/domain/errors.ts';
import {
  compileJsonSchema,
  formatIssues,
  type JsonSchemaDocument,
  MAX_COMPILED_SCHEMAS,
} from '#shared/domain/lang/json-schema.ts';

let keys = 0;
/** A fresh cache key per call, so no test sees another's compiled schema. */
function compileFresh(schema: JsonSchemaDocument, what = 'the test schema') {
  keys += 1;
  return compileJsonSchema(`json-schema-test:${keys}`, schema, what);
}

/** The issues of `value` as one line, the way the executors report them (`input.n: must be integer; ...`). */
function check(schema: JsonSchemaDocument, value: unknown, root = 'input'): string {
  return formatIssues(compileFresh(schema).validate(value, root));
}

function invalidSchema(schema: unknown, what = "the echo tool's input schema"): InvalidJsonSchemaError {
  try {
    compileFresh(schema as JsonSchemaDocument, what);
  } catch (error) {
    if (error instanceof InvalidJsonSchemaError) return error;
    throw error;
  }
  throw new Error('expected the schema to be refused');
}

describe('compileJsonSchema', () => {
  it('accepts a conforming value with no issues', () => {
    const schema = {
      type: 'object',
      required: ['n'],
      properties: { n: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
    };
    expect(compileFresh(schema).validate({ n: 3, tags: ['a'] }, 'input')).toEqual([]);
    expect(compileFresh(true).validate('anything')).toEqual([]);
  });

  it('names the type a value must have', () => {
    expect(check({ type: 'object', properties: { n: { type: 'integer' } } }, { n: 1.5 })).toBe(
      'input.n: must be integer',
    );
    expect(check({ properties: { expression: { type: 'string' } } }, { expression: 42 })).toBe(
      'input.expression: must be string',
    );
    expect(check({ type: ['string', 'null'] }, 1)).toBe('input: must be string,null');
    expect(check({ type: 'object' }, [])).toBe('input: must be object');
  });

  it('names each missing required property', () => {
    expect(check({ type: 'object', required: ['n', 'm'] }, { m: 1 })).toBe(
      "input: must have required property 'n'",
    );
    expect(check({ type: 'object', required: ['tripled'] }, {}, 'output')).toBe(
      "output: must have required property 'tripled'",
    );
  });

  it('names every additional property when additionalProperties is false', () => {
    const schema = { type: 'object', properties: { a: {} }, additionalProperties: false };
    expect(check(schema, { a: 1, x: 2, 'y/z': 3 })).toBe(
      'input: must NOT have additional properties ("x"); input: must NOT have additional properties ("y/z")',
    );
    expect(check({ additionalProperties: { type: 'string' } }, { x: 1 })).toBe('input.x: must be string');
  });

  it('lists the allowed values of enum and const', () => {
    expect(check({ enum: ['low', 'high'] }, 'mid')).toBe(
      'input: must be equal to one of the allowed values (["low","high"])',
    );
    expect(check({ const: 'v1' }, 'v2')).toBe('input: must be equal to constant ("v1")');
    expect(check({ enum: [{ a: 1 }] }, { a: 1 })).toBe('');
  });

  it('reports string lengths, patterns and number bounds', () => {
    expect(check({ type: 'string', minLength: 3 }, 'ab')).toBe(
      'input: must NOT have fewer than 3 characters',
    );
    expect(check({ type: 'string', maxLength: 1 }, 'ab')).toBe('input: must NOT have more than 1 characters');
    expect(check({ type: 'string', pattern: '^[a-z]+$' }, 'A1')).toBe('input: must match pattern "^[a-z]+$"');
    expect(check({ minimum: 3, maximum: 5 }, 1)).toBe('input: must be >= 3');
    expect(check({ minimum: 3, maximum: 5 }, 6)).toBe('input: must be <= 5');
    expect(check({ exclusiveMinimum: 0 }, 0)).toBe('input: must be > 0');
    expect(check({ exclusiveMaximum: 10 }, 10)).toBe('input: must be < 10');
    expect(check({ multipleOf: 0.5 }, 0.75)).toBe('input: must be multiple of 0.5');
  });

  it('reports array and object sizes and duplicate items', () => {
    expect(check({ minItems: 2 }, [1])).toBe('input: must NOT have fewer than 2 items');
    expect(check({ maxItems: 1 }, [1, 2])).toBe('input: must NOT have more than 1 items');
    expect(check({ uniqueItems: true }, [1, 2, 1])).toBe(
      'input: must NOT have duplicate items (items 0 and 2 are identical)',
    );
    expect(check({ minProperties: 1 }, {})).toBe('input: must NOT have fewer than 1 properties');
    expect(check({ maxProperties: 1 }, { a: 1, b: 2 })).toBe('input: must NOT have more than 1 properties');
  });

  it('checks the date-time, email and uri formats', () => {
    const schema = {
      type: 'object',
      properties: {
        at: { type: 'string', format: 'date-time' },
        email: { type: 'string', format: 'email' },
        site: { type: 'string', format: 'uri' },
      },
    };
    expect(
      check(schema, { at: '2025-01-31T10:00:00Z', email: 'a@example.com', site: 'https://x.io/a' }),
    ).toBe('');
    expect(check(schema, { at: '2025-02-30T10:00:00Z', email: 'not an email', site: 'relative/path' })).toBe(
      'input.at: must match format "date-time"; input.email: must match format "email"; ' +
        'input.site: must match format "uri"',
    );
  });

  it('renders nested paths with [index] for arrays and .name for properties', () => {
    const schema = {
      type: 'object',
      properties: {
        items: {
          type: 'array',
          items: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
      },
    };
    expect(check(schema, { items: [{ name: 'a' }, { name: 'b' }, { name: 3 }, {}] })).toBe(
      "input.items[2].name: must be string; input.items[3]: must have required property 'name'",
    );
    // A numeric key of an object is a property, not an index; JSON Pointer escapes are undone.
    const keyed = {
      properties: {
        '2': { type: 'string' },
        'a/b~c': { type: 'string' },
        'per%cent': { type: 'string' },
      },
    };
    expect(check(keyed, { '2': 1, 'a/b~c': 1, 'per%cent': 1 })).toBe(
      'input.2: must be string; input.a/b~c: must be string; input.per%cent: must be string',
    );
  });

  it('starts paths at the top level when the root is empty', () => {
    const validator = compileFresh({ type: 'object', properties: { response_text: { type: 'string' } } });
    expect(validator.validate({ response_text: 1 })).toEqual([
      { path: 'response_text', message: 'must be string' },
    ]);
    expect(formatIssues(validator.validate('text'))).toBe('(root): must be object');
    expect(formatIssues(compileFresh({ type: 'array', items: { type: 'string' } }).validate([1]))).toBe(
      '[0]: must be string',
    );
  });

  it('keeps anyOf and oneOf failures with each branch’s errors', () => {
    const nullable = { properties: { x: { anyOf: [{ type: 'string' }, { type: 'null' }] } } };
    expect(check(nullable, { x: 3 })).toBe(
      'input.x: must match a schema in anyOf; input.x: must be string; input.x: must be null',
    );
    expect(check(nullable, { x: null })).toBe('');
    expect(check({ oneOf: [{ type: 'string' }, { type: 'boolean' }] }, 3)).toBe(
      'input: must match exactly one schema in oneOf; input: must be string; input: must be boolean',
    );
    expect(check({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 3)).toBe(
      'input: must match exactly one schema in oneOf (it matches 2)',
    );
  });

  it('reports only the leaf errors of allOf, not, if/then, contains and dependencies', () => {
    expect(check({ allOf: [{ required: ['a'] }, { properties: { b: { type: 'string' } } }] }, { b: 1 })).toBe(
      "input: must have required property 'a'; input.b: must be string",
    );
    expect(check({ not: { type: 'string' } }, 'x')).toBe('input: must NOT be valid');
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, never awaited.
    const conditional = { if: { properties: { a: { const: 1 } } }, then: { required: ['b'] } };
    expect(check(conditional, { a: 1 })).toBe("input: must have required property 'b'");
    expect(check({ contains: { type: 'string' } }, [1, 2])).toBe(
      'input: must contain at least 1 valid item(s)',
    );
    expect(check({ contains: { type: 'string' }, minContains: 2 }, [1, 'a'])).toBe(
      'input: must contain at least 2 valid item(s)',
    );
    expect(check({ dependentRequired: { card: ['billing'] } }, { card: 1 })).toBe(
      "input: must have property 'billing' when property 'card' is present",
    );
    expect(check({ propertyNames: { pattern: '^[a-z]+$' } }, { Bad: 1, ok: 2 })).toBe(
      'input: property name "Bad" must match pattern "^[a-z]+$"',
    );
  });

  it('caps tuples with items: false after prefixItems', () => {
    const pair = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false };
    expect(check(pair, ['a', 1, true, null])).toBe('input: must NOT have more than 2 items');
  });

  it('follows $ref into $defs, applying keywords beside it (2020-12)', () => {
    const schema = {
      $defs: { positive: { type: 'integer', minimum: 1 } },
      type: 'object',
      properties: {
        count: { $ref: '#/$defs/positive' },
        limit: { $ref: '#/$defs/positive', maximum: 10 },
      },
    };
    expect(check(schema, { count: 0, limit: 11 })).toBe(
      'input.count: must be >= 1; input.limit: must be <= 10',
    );
  });

  it('follows a recursive $ref to the root', () => {
    const tree = {
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } },
    };
    expect(check(tree, { name: 'a', children: [{ name: 'b', children: [{ name: 3 }] }] })).toBe(
      'input.children[0].children[0].name: must be string',
    );
  });

  it('honours a draft-07 $schema with definitions (and ignores keywords beside $ref, as draft 7 says)', () => {
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      $id: 'https://example.com/order.json',
      definitions: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' } },
      type: 'object',
      properties: { sku: { $ref: '#/definitions/sku', minLength: 100 } },
    };
    expect(check(schema, { sku: 'ABC-1' })).toBe('');
    expect(check(schema, { sku: 'abc' })).toBe('input.sku: must match pattern "^[A-Z]{3}-\\\\d+$"');
  });

  it('honours a draft-04 $schema with boolean exclusiveMinimum', () => {
    const schema = { $schema: 'http://json-schema.org/draft-04/schema#', minimum: 0, exclusiveMinimum: true };
    expect(check(schema, 0)).toBe('input: must be > 0');
    expect(check(schema, 1)).toBe('');
  });

  it('lets definitions reuse the same $id without colliding', () => {
    const a = compileFresh({ $id: 'https://example.com/shared.json', type: 'string' });
    const b = compileFresh({ $id: 'https://example.com/shared.json', type: 'number' });
    expect(formatIssues(a.validate(1, 'input'))).toBe('input: must be string');
    expect(formatIssues(b.validate(1, 'input'))).toBe('');
  });

  it('validates the JSON a value would be stored as', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' }, at: { type: 'string' } } };
    expect(check(schema, { a: undefined, at: new Date(0) })).toBe('');
    expect(check({ type: 'object' }, undefined, 'output')).toBe('output: must be object');
    expect(check({}, { n: 1n })).toMatch(/^input: must be JSON \(/);
  });

  it('refuses a schema that is not an object or boolean, naming whose schema it is', () => {
    const error = invalidSchema([]);
    expect(error).toBeInstanceOf(NonRetriableError);
    expect(error.retriable).toBe(false);
    expect(error.message).toBe(
      "the echo tool's input schema is not a valid JSON Schema: a schema must be an object or a boolean, not an array",
    );
    expect(error.problem).toBe('a schema must be an object or a boolean, not an array');
  });

  it('refuses wrong type names and mis-shaped required, properties and items', () => {
    expect(invalidSchema({ properties: { n: { type: 'int' } } }).message).toBe(
      'the echo tool\'s input schema is not a valid JSON Schema: #/properties/n/type: "int" is not a JSON type ' +
        '(array, boolean, integer, null, number, object, string)',
    );
    expect(invalidSchema({ required: true }).problem).toBe(
      '#/required: must be an array of property names, not boolean true',
    );
    expect(invalidSchema({ properties: [] }).problem).toBe(
      '#/properties: must be an object of schemas, not an array',
    );
    expect(invalidSchema({ properties: { a: 'string' } }).problem).toBe(
      '#/properties/a: a schema must be an object or a boolean, not string "string"',
    );
    expect(invalidSchema({ items: { type: ['string', 'text'] } }).problem).toMatch(/^#\/items\/type: "text"/);
    expect(invalidSchema({ anyOf: [] }).problem).toBe('#/anyOf: must list at least one schema');
    // The 2020-12 meta-schema's schemaArray needs one schema, prefixItems too (found by the Ajv comparison).
    expect(invalidSchema({ type: 'array', prefixItems: [] }).problem).toBe(
      '#/prefixItems: must list at least one schema',
    );
    expect(invalidSchema({ minLength: -1 }).problem).toBe(
      '#/minLength: must be a non-negative integer, not number -1',
    );
    expect(invalidSchema({ exclusiveMinimum: true }).problem).toBe(
      '#/exclusiveMinimum: must be a number in this draft, not boolean true',
    );
  });

  it('refuses patterns that are not valid regular expressions', () => {
    expect(invalidSchema({ pattern: '[' }).problem).toMatch(
      /^#\/pattern: "\[" is not a valid regular expression/,
    );
    expect(invalidSchema({ patternProperties: { '(': {} } }).problem).toMatch(
      /^#\/patternProperties: "\(" is not a valid regular expression/,
    );
  });

  it('refuses a $ref that does not resolve, and a $ref loop when it is compiled', () => {
    expect(invalidSchema({ properties: { a: { $ref: '#/$defs/missing' } } }).problem).toBe(
      '#/properties/a: $ref "#/$defs/missing" does not resolve to a schema in this document ' +
        '(other documents are not fetched)',
    );
    expect(invalidSchema({ $ref: 'https://example.com/remote.json' }).problem).toMatch(/does not resolve/);
    expect(() => compileFresh({ $ref: '#' }, 'response_schema')).toThrow(
      /^response_schema is not a valid JSON Schema: #: this subschema applies itself to the same value again/,
    );
  });

  it('refuses two subschemas with the same $id', () => {
    const schema = { $defs: { a: { $id: 'thing', type: 'string' }, b: { $id: 'thing', type: 'number' } } };
    expect(invalidSchema(schema).problem).toMatch(/^two subschemas have the same \$id/);
  });

  it('compiles once per cache key and leaves the caller’s schema untouched', () => {
    const schema = Object.freeze({ type: 'object', properties: Object.freeze({ n: { type: 'integer' } }) });
    const first = compileJsonSchema('json-schema-test:cached', schema, 'the test schema');
    expect(compileJsonSchema('json-schema-test:cached', { type: 'string' }, 'the test schema')).toBe(first);
    expect(formatIssues(first.validate({ n: 'x' }, 'input'))).toBe('input.n: must be integer');
    expect(schema).toEqual({ type: 'object', properties: { n: { type: 'integer' } } });
  });

  it('forgets the least recently used schema beyond the cache bound', () => {
    const kept = compileJsonSchema('json-schema-test:lru-kept', { type: 'string' }, 'kept');
    const dropped = compileJsonSchema('json-schema-test:lru-dropped', { type: 'string' }, 'dropped');
    expect(compileJsonSchema('json-schema-test:lru-kept', { type: 'string' }, 'kept')).toBe(kept);
    for (let i = 0; i < MAX_COMPILED_SCHEMAS - 1; i++) compileFresh({ type: 'number' });
    expect(compileJsonSchema('json-schema-test:lru-kept', { type: 'string' }, 'kept')).toBe(kept);
    expect(compileJsonSchema('json-schema-test:lru-dropped', { type: 'string' }, 'dropped')).not.toBe(
      dropped,
    );
  });
});
