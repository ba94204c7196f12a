/**
 * Every expression language a definition can write ends in bounded time or is refused when written: JSONata,
 * JSON Schema, JSONPath and the regular expressions inside them, on the catastrophic inputs of the tenant-safety
 * review and variations of them. No timings are asserted: each case must simply finish (the per-test timeout is
 * only a hang guard; on V8's backtracking engine several of these ran for minutes).
 */
import { describe, expect, it } from 'vitest';
import { inputProblem } from '#shared/core/orchestration/checks.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { parseDefinition } from '#shared/domain/definitions.ts';
import { InvalidJsonSchemaError, JsonSchemaWorkLimitError, ValidationError } from '#shared/domain/errors.ts';
import { queryJsonPath } from '#shared/domain/lang/json-path.ts';
import { compileJsonSchema, formatIssues, JSON_SCHEMA_LIMITS } from '#shared/domain/lang/json-schema.ts';
import { evaluateJsonata, MAX_STRING } from '#shared/domain/lang/jsonata.ts';
import { LinearRegExp, linearRegexProblem } from '#shared/domain/lang/linear-regex.ts';

const HANG_GUARD = 30_000;
const EVIL_TEXT = `${'a'.repeat(40)}!`;
let fresh = 0;
const compileFresh = (schema: Record<string, unknown>, what = 'input_schema') =>
  compileJsonSchema(`bounded-test:${fresh++}`, schema, what);

/** `$defs` d0..dn where each level's anyOf names the next level twice: 2^n applications if not refused. */
function nestedAnyOfRefs(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) {
    defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  }
  defs[`d${levels}`] = { type: 'string' };
  return { $defs: defs, $ref: '#/$defs/d0' };
}

function refusal(schema: Record<string, unknown>): string {
  try {
    compileFresh(schema);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidJsonSchemaError);
    return (error as InvalidJsonSchemaError).problem;
  }
  throw new Error(`expected ${JSON.stringify(schema)} to be refused`);
}

describe('regular expressions from data', () => {
  it('match nested quantifiers in linear time', { timeout: HANG_GUARD }, () => {
    for (const source of ['(a+)+$', '(a|a)+$', '(a|aa)*b', '^(a*)*$', '(.*a){12}$', '((a+)+)+$']) {
      expect(new LinearRegExp(source).test(EVIL_TEXT)).toBe(false);
      expect(new LinearRegExp(source, 'u').test(`${'a'.repeat(100_000)}!`)).toBe(false);
    }
  });

  it('refuses lookaround, backreferences and huge counts, naming the construct', () => {
    expect(linearRegexProblem('(?=a)a')).toMatch(/lookahead .* not supported/);
    expect(linearRegexProblem('(?<!a)b')).toMatch(/lookbehind .* not supported/);
    expect(linearRegexProblem('(a)\\1')).toMatch(/backreferences \(\\1\) are not supported/);
    expect(linearRegexProblem('(?<x>a)\\k<x>', 'u')).toMatch(/backreferences/);
    expect(linearRegexProblem('a{5000}')).toMatch(/at most \{1000\}/);
    expect(linearRegexProblem('a{2,100000}')).toMatch(/at most \{1000\}/);
    expect(linearRegexProblem('((a{1000}){1000}){1000}')).toBeDefined();
    expect(linearRegexProblem('[')).toBeDefined();
  });

  it('keeps JavaScript meanings RE2 spells differently', () => {
    expect(new LinearRegExp('^\\s$').test('\u00a0')).toBe(true);
    expect(new LinearRegExp('^\\S$').test('\u3000')).toBe(false);
    expect(new LinearRegExp('^.$').test('\r')).toBe(false);
    expect(new LinearRegExp('^.$', 's').test('\n')).toBe(true);
    expect(new LinearRegExp('^\\u00e9\\x41$').test('éA')).toBe(true);
    expect(new LinearRegExp('^\\u{1F600}$', 'u').test('😀')).toBe(true);
    expect(new LinearRegExp('^[^]$').test('\n')).toBe(true);
    expect(new LinearRegExp('[]').test('x')).toBe(false);
    expect(new LinearRegExp('^\\p{Lu}+$', 'u').test('ÉA')).toBe(true);
  });
});

describe('JSONata', () => {
  const refused = async (expression: string) => {
    await expect(evaluateJsonata(expression, {})).rejects.toThrow(/invalid JSONata expression/);
  };

  it('answers the catastrophic $match of the review', { timeout: HANG_GUARD }, async () => {
    expect(await evaluateJsonata('$match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", /(a+)+$/)', {})).toBeNull();
  });

  it('answers $replace, $split and $contains with nested quantifiers', { timeout: HANG_GUARD }, async () => {
    const data = { text: EVIL_TEXT };
    expect(await evaluateJsonata('$replace(text, /(a|aa)+$/, "x")', data)).toBe(EVIL_TEXT);
    expect(await evaluateJsonata('$split(text, /(a*)*b/)', data)).toEqual([EVIL_TEXT]);
    expect(await evaluateJsonata('$contains(text, /^(a+)+$/)', data)).toBe(false);
    expect(await evaluateJsonata('$match(text, /a+!/).match', data)).toBe(EVIL_TEXT);
    expect(await evaluateJsonata('$replace("Hello World", /o/, "0")', {})).toBe('Hell0 W0rld');
    expect(await evaluateJsonata('$split("a1b22c", /[0-9]+/)', {})).toEqual(['a', 'b', 'c']);
  });

  it('stops a regex applied over and over inside one call at the deadline', {
    timeout: HANG_GUARD,
  }, async () => {
    // /a*b|a/ scans to the end of the a's for every match: quadratic in the text even on a linear engine.
    await expect(
      evaluateJsonata('$count($match($join([1..200000].("a")), /a*b|a/))', {}, {}, { timeoutMs: 200 }),
    ).rejects.toThrow(/ran out of time inside a regular expression|timeout/i);
  });

  it('refuses regexes and signatures that cannot run in bounded time', async () => {
    await refused('$match("x", /(?=x)x/)');
    await refused('$replace("xx", /(x)\\1/, "y")');
    await refused('$match("x", /a{2000}/)');
    await refused('($f := function($a, $b)<n+n+>{1}; $f(1, 2))');
    await refused('($f := function($a, $b, $c, $d, $e, $g, $h, $i, $j)<n?n?n?n?n?n?n?n?n?>{1}; $f(1))');
    expect(await evaluateJsonata('($f := function($a)<n+>{$count($a)}; $f(1, 2, 3))', {})).toBe(1);
    // Text parsed at run time by $eval gets the same checks, and its regexes the same engine.
    await expect(evaluateJsonata('$eval("($f := function($a, $b)<n+n+>{1}; $f(1, 2))")', {})).rejects.toThrow(
      /\$eval: function signature <n\+n\+>/,
    );
    expect(await evaluateJsonata('$eval("$match(s, /(a+)+$/)", $)', { s: EVIL_TEXT })).toBeNull();
    expect(await evaluateJsonata('$eval("1 + 2")', {})).toBe(3);
  });

  it('answers $toMillis with a picture of adjacent variable-width parts', {
    timeout: HANG_GUARD,
  }, async () => {
    const picture = '[f]'.repeat(12);
    expect(await evaluateJsonata(`$toMillis("${'1'.repeat(200)}x", "${picture}")`, {})).toBeNull();
    expect(await evaluateJsonata('$toMillis("2024-01-02", "[Y0001]-[M01]-[D01]")', {})).toBe(1704153600000);
  });

  it('refuses strings past the cap instead of letting V8 abort the process', {
    timeout: HANG_GUARD,
  }, async () => {
    await expect(evaluateJsonata('$length($pad("", 5e8, "x"))', {})).rejects.toThrow(/\$pad cannot make/);
    await expect(
      evaluateJsonata(
        '($d := function($s, $n){ $n = 0 ? $s : $d($s & $s, $n - 1)}; $length($d("x", 28)))',
        {},
      ),
    ).rejects.toThrow(new RegExp(`more than ${MAX_STRING} characters`));
    expect(await evaluateJsonata('$pad("7", -3, "0")', {})).toBe('007');
    // Many strings below the cap, made in a loop: charged to the evaluation until it has produced too much. A long
    // timeout, so the cap is what stops it even on a loaded machine.
    await expect(
      evaluateJsonata('$count([1..1000].$pad("", 999999))', {}, {}, { timeoutMs: 30_000 }),
    ).rejects.toThrow(/produced more than \d+ characters and items in all/);
    expect(await evaluateJsonata('$count($split($join([1..100000].("ab")), ""))', {})).toBe(200_000);
  });

  it('keeps $distinct linear and deep-equal as jsonata defines it', { timeout: HANG_GUARD }, async () => {
    expect(await evaluateJsonata('$count($distinct([1..200000]))', {})).toBe(200_000);
    expect(
      await evaluateJsonata('$distinct([1, 2, 1, {"a": 1, "b": 2}, {"b": 2, "a": 1}, "1", [1], [1]])', {}),
    ).toEqual([1, 2, { a: 1, b: 2 }, '1', [1]]);
    expect(await evaluateJsonata('$distinct(items.kind)', { items: [{ kind: 'x' }, { kind: 'x' }] })).toBe(
      'x',
    );
  });

  it('stops huge ranges and loops by its own limits', { timeout: HANG_GUARD }, async () => {
    await expect(evaluateJsonata('[1..5000000]', {})).rejects.toThrow(/sequence/i);
    await expect(evaluateJsonata('($f := function($n){ $f($n + 1) + 1 }; $f(0))', {})).rejects.toThrow(
      /stack/i,
    );
    // A call in tail position loops without growing the stack: the timeout stops it.
    await expect(
      evaluateJsonata('($f := function($n){ $f($n + 1) }; $f(0))', {}, {}, { timeoutMs: 100 }),
    ).rejects.toThrow(/timeout/i);
  });
});

describe('JSON Schema', () => {
  it('validates a nested-quantifier pattern in linear time', { timeout: HANG_GUARD }, () => {
    const v = compileFresh({ type: 'string', pattern: '^(a+)+$' });
    expect(formatIssues(v.validate(EVIL_TEXT, 'input'))).toBe('input: must match pattern "^(a+)+$"');
    expect(v.validate('aaa', 'input')).toEqual([]);
  });

  it('validates patternProperties keys in linear time', { timeout: HANG_GUARD }, () => {
    const v = compileFresh({
      patternProperties: { '^(a|a)+$': { type: 'integer' } },
      additionalProperties: false,
    });
    expect(formatIssues(v.validate({ [EVIL_TEXT]: 1, aaa: 'x' }, 'input'))).toBe(
      `input.aaa: must be integer; input: must NOT have additional properties (${JSON.stringify(EVIL_TEXT)})`,
    );
  });

  it('refuses patterns the linear engine cannot run, with the path', () => {
    expect(refusal({ properties: { a: { pattern: '(?=a)' } } })).toMatch(
      /^#\/properties\/a\/pattern: "\(\?=a\)" is not a valid regular expression \(lookahead/,
    );
    expect(refusal({ patternProperties: { '(a)\\1': {} } })).toMatch(
      /^#\/patternProperties: .*backreferences/,
    );
    expect(refusal({ pattern: 'x{1,5000}' })).toMatch(/at most \{1000\}/);
  });

  it('refuses 24 nested anyOf $refs when compiled, naming where', () => {
    expect(refusal(nestedAnyOfRefs(24))).toMatch(
      new RegExp(
        `^#.*: applying this subschema to one value means more than ${JSON_SCHEMA_LIMITS.maxInPlaceExpansion}`,
      ),
    );
    expect(() => compileFresh(nestedAnyOfRefs(3)).validate('x')).not.toThrow();
  });

  it('refuses $ref loops that never step into the value', () => {
    expect(refusal({ $ref: '#' })).toMatch(
      /^#: this subschema applies itself to the same value again \(# → #\)/,
    );
    expect(refusal({ anyOf: [{ $ref: '#' }] })).toMatch(/^#\/anyOf\/0: .* \(# → #\/anyOf\/0 → #\)/);
    expect(
      refusal({
        $defs: { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { not: { $ref: '#/$defs/a' } } },
        $ref: '#/$defs/a',
      }),
    ).toMatch(/applies itself to the same value again/);
    // Recursion that steps into a property or item ends with the value: a tree schema is fine.
    const tree = compileFresh({
      type: 'object',
      properties: { children: { type: 'array', items: { $ref: '#' } }, name: { type: 'string' } },
    });
    expect(tree.validate({ name: 'a', children: [{ name: 'b', children: [] }] })).toEqual([]);
  });

  it('meters and checks $recursiveRef schemas (draft 2019-09) as $ref ones', () => {
    const draft = 'https://json-schema.org/draft/2019-09/schema';
    const tree = compileFresh({
      $schema: draft,
      $recursiveAnchor: true,
      type: 'object',
      properties: { kids: { type: 'array', items: { $recursiveRef: '#' } } },
    });
    expect(tree.validate({ kids: [{ kids: [] }] })).toEqual([]);
    expect(tree.validate({ kids: [{ kids: 1 }] })).toHaveLength(1);
    expect(refusal({ $schema: draft, $recursiveAnchor: true, anyOf: [{ $recursiveRef: '#' }] })).toMatch(
      /applies itself to the same value again/,
    );
  });

  it('stops a recursive schema whose branches multiply with the depth of the value', {
    timeout: HANG_GUARD,
  }, () => {
    const branch = { type: 'object', properties: { a: { $ref: '#/$defs/t' } } };
    const v = compileFresh({ $defs: { t: { anyOf: [branch, branch, branch] } }, $ref: '#/$defs/t' });
    let value: unknown = {};
    for (let i = 0; i < 40; i++) value = { a: value };
    expect(() => v.validate(value)).toThrow(/takes more than \d+ steps of work .*maxWork/);
    expect(v.validate({ a: { a: {} } })).toEqual([]);
  });

  it('refuses values nested deeper than the limit', () => {
    let deep: unknown = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(formatIssues(compileFresh({ type: 'array' }).validate(deep, 'input'))).toMatch(
      /^input: must NOT be nested deeper than 256 levels/,
    );
  });

  // Deep comparisons are work the validation counts: an enum of objects, a const, and uniqueItems each compare
  // values inside one keyword, where counting subschema applications alone saw nothing (a tool request of 2,000
  // objects against a 9,000-entry enum ran 10 s).
  const stopped = (validate: () => unknown) => {
    try {
      validate();
    } catch (error) {
      expect(error).toBeInstanceOf(JsonSchemaWorkLimitError);
      expect((error as JsonSchemaWorkLimitError).limit).toBe(JSON_SCHEMA_LIMITS.maxWork);
      return (error as Error).message;
    }
    throw new Error('expected the validation to stop at its budget');
  };

  it('counts the entries an enum of objects compares, and stops at the budget', {
    timeout: HANG_GUARD,
  }, () => {
    const entries = Array.from({ length: 9_000 }, (_, i) => ({ kind: 'item', id: i, tags: ['a', 'b'] }));
    const v = compileFresh({ type: 'array', items: { enum: entries } });
    const values = Array.from({ length: 2_000 }, () => ({ kind: 'item', id: 8_999, tags: ['a', 'b'] }));
    expect(stopped(() => v.validate(values))).toMatch(
      /^checking a value against input_schema stopped: .*more than 6400000 steps of work \(JSON_SCHEMA_LIMITS\.maxWork/,
    );
    // A few values against the same enum are checked, matches and mismatches alike.
    expect(v.validate(values.slice(0, 3))).toEqual([]);
    expect(formatIssues(v.validate([{ kind: 'item', id: -1, tags: [] }], 'input'))).toMatch(
      /^input\[0\]: must be equal to one of the allowed values/,
    );
  });

  it('counts what a const compares, each time it is applied', { timeout: HANG_GUARD }, () => {
    const entry = (id: number) => ({ kind: 'item', id, tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] });
    // 300 branches, each a const of 12 values, against each of 2,000 items: 7 million values compared.
    const v = compileFresh({
      type: 'array',
      items: { anyOf: Array.from({ length: 300 }, (_, i) => ({ const: entry(i) })) },
    });
    const values = Array.from({ length: 2_000 }, () => entry(299));
    expect(stopped(() => v.validate(values))).toMatch(/maxWork/);
    expect(v.validate(values.slice(0, 10))).toEqual([]);
    expect(formatIssues(v.validate([entry(300)], 'input'))).toMatch(/must match a schema in anyOf/);
  });

  it('counts the pairs uniqueItems compares', { timeout: HANG_GUARD }, () => {
    const unique = compileFresh({ type: 'array', uniqueItems: true });
    const objects = Array.from({ length: 2_000 }, (_, i) => ({ kind: 'item', id: i, tags: ['a', 'b'] }));
    expect(stopped(() => unique.validate(objects))).toMatch(/maxWork/);
    // Arrays of ordinary length are checked as before, the duplicate named.
    expect(unique.validate(objects.slice(0, 200))).toEqual([]);
    expect(formatIssues(unique.validate([1, 2, 1], 'input'))).toMatch(/must NOT have duplicate items/);
    expect(formatIssues(unique.validate([...objects.slice(0, 100), objects[7]], 'input'))).toMatch(
      /must NOT have duplicate items \(items 7 and 100 are identical\)/,
    );
    // A thousand numbers are a million cheap pairs, within the budget.
    expect(unique.validate(Array.from({ length: 1_000 }, (_, i) => i))).toEqual([]);
  });

  it('stops at a smaller budget when one is given (the slice a caller tries before a worker)', () => {
    const v = compileFresh({ type: 'array', items: { type: 'integer' } });
    const values = Array.from({ length: 1_000 }, (_, i) => i);
    expect(() => v.validate(values, 'input', 1_000)).toThrow(JsonSchemaWorkLimitError);
    expect(v.validate(values, 'input')).toEqual([]);
  });
});

describe('JSONPath', () => {
  it('matches a catastrophic match() / search() filter in linear time', { timeout: HANG_GUARD }, () => {
    const doc = { items: [{ s: EVIL_TEXT }, { s: 'aaa' }] };
    expect(queryJsonPath('$.items[?match(@.s, "(a+)+")].s', doc)).toEqual(['aaa']);
    expect(queryJsonPath('$.items[?search(@.s, "(a|a)+!")].s', doc)).toEqual([EVIL_TEXT]);
  });
});

describe('definitions', () => {
  const issues = (schemaName: string, context: unknown) => {
    try {
      validateDefinition(schemaName, context);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).issues;
    }
    return [];
  };

  it('are invalid with the path when a schema cannot be validated in bounded time', () => {
    const workflow = (input_schema: unknown) => ({
      workflow_id: 'evil',
      input_schema,
      steps: [{ id: 'a', tool: 'echo', input: {} }],
    });
    expect(issues('workflow.def.v1', workflow(nestedAnyOfRefs(24)))).toEqual([
      {
        path: 'input_schema',
        message: expect.stringMatching(/^not a valid JSON Schema: #.*more than 10000/),
      },
    ]);
    expect(issues('workflow.def.v1', workflow({ $ref: '#' }))).toEqual([
      { path: 'input_schema', message: expect.stringMatching(/applies itself to the same value again/) },
    ]);
    expect(
      issues('tool.def.v1', {
        name: 'evil',
        implementation: 'echo',
        input_schema: { anyOf: [{ $ref: '#' }] },
      }),
    ).toEqual([
      { path: 'input_schema', message: expect.stringMatching(/applies itself to the same value again/) },
    ]);
    expect(
      issues('tool.def.v1', { name: 'evil', implementation: 'echo', output_schema: { pattern: '(?!x)' } }),
    ).toEqual([{ path: 'output_schema', message: expect.stringMatching(/lookahead/) }]);
    expect(issues('agent.def.v1', { agent_id: 'evil', response_schema: { $ref: '#' } })).toEqual([
      { path: 'response_schema', message: expect.stringMatching(/applies itself/) },
    ]);
  });

  it("refuse a run's input, never throw, when a stored workflow's schema cannot judge it", async () => {
    // Parsed for structure only, as the API and the engine read a stored definition.
    const parsed = parseDefinition('workflow.def.v1', {
      workflow_id: 'stored-before-the-check',
      input_schema: nestedAnyOfRefs(24),
      steps: [{ id: 'a', tool: 'echo', input: {} }],
    });
    if (parsed.kind !== 'workflow') throw new Error('expected a workflow');
    expect(await inputProblem(parsed.definition, 'x')).toMatch(
      /^workflow "stored-before-the-check"'s input_schema is not a valid JSON Schema: .*more than 10000/,
    );
  });

  it('are invalid with the path when an expression holds a regex the linear engine cannot run', () => {
    const found = issues('workflow.def.v1', {
      workflow_id: 'evil',
      steps: [{ id: 'a', tool: 'echo', input: { x: '=$match(input.s, /(?<=a)b/)' } }],
    });
    expect(found).toEqual([
      {
        path: 'steps[0].input.x',
        message: expect.stringMatching(/^not a usable JSONata expression: regular expression .*lookbehind/),
      },
    ]);
  });
});
