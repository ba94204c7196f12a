import { describe, expect, it } from 'vitest';
import { CreateBreadcrumbSchema, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { applyLlmHints, type LlmHints, LlmHintsSchema, mergeHints } from '#shared/domain/llm-hints.ts';

const context = {
  name: 'Ada',
  address: { city: 'London', street: 'Main St' },
  tags: ['math', 'engines'],
  secret: 's3cr3t',
};

function hints(value: unknown): LlmHints {
  return LlmHintsSchema.parse(value);
}

function issues(value: unknown): { path: string; message: string }[] {
  const result = LlmHintsSchema.safeParse(value);
  if (result.success) throw new Error('expected the hints to be refused');
  return result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

describe('applyLlmHints', () => {
  it('answers the stored context when there are no hints', () => {
    expect(applyLlmHints(context, undefined)).toBe(context);
  });

  it('selects paths with include, keeping their nesting and skipping missing ones', () => {
    expect(applyLlmHints(context, hints({ include: ['name', '$.address.city', 'missing.path'] }))).toEqual({
      name: 'Ada',
      address: { city: 'London' },
    });
  });

  it('drops paths with exclude without touching the stored context', () => {
    expect(applyLlmHints(context, hints({ exclude: ['secret', 'address.street'] }))).toEqual({
      name: 'Ada',
      address: { city: 'London' },
      tags: ['math', 'engines'],
    });
    expect(context.address.street).toBe('Main St');
  });

  it('applies include before exclude', () => {
    expect(
      applyLlmHints(context, hints({ include: ['name', 'address'], exclude: ['address.street'] })),
    ).toEqual({
      name: 'Ada',
      address: { city: 'London' },
    });
  });

  it('renders a template rule with the stored context as root', () => {
    const view = applyLlmHints(
      context,
      hints({
        transform: {
          summary: { type: 'template', template: '{{name}} lives in {{address.city}}' },
          topics: { type: 'template', template: '{{#each tags}}- {{this}}\n{{/each}}' },
        },
      }),
    );
    expect(view).toEqual({ summary: 'Ada lives in London', topics: '- math\n- engines\n' });
  });

  it.each([
    ['one match as the value', '$.address.city', 'London'],
    ['several matches as an array', '$.tags[*]', ['math', 'engines']],
    ['no match as null', '$.nothing', null],
  ])('answers an extract rule with %s', (_name, value, expected) => {
    expect(applyLlmHints(context, hints({ transform: { x: { type: 'extract', value } } }))).toEqual({
      x: expected,
    });
  });

  it('answers an extract rule with an RFC 9535 filter', () => {
    const order = {
      items: [
        { name: 'pen', price: 2 },
        { name: 'lamp', price: 40 },
        { name: 'ink', price: 8 },
      ],
    };
    const view = applyLlmHints(
      order,
      hints({
        transform: {
          cheap: { type: 'extract', value: '$.items[?@.price < 10].name' },
          dearest: { type: 'extract', value: '$.items[?(@.price > 10)].name' },
          matching: { type: 'extract', value: "$.items[?match(@.name, 'p.*')].price" },
        },
      }),
    );
    expect(view).toEqual({ cheap: ['pen', 'ink'], dearest: 'lamp', matching: 2 });
  });

  it('answers { error } for an extract rule that exceeds a work limit', () => {
    const items = Array.from({ length: 2_000 }, (_, i) => ({ i }));
    const view = applyLlmHints(
      { items },
      hints({ transform: { n: { type: 'extract', value: '$.items[?count($..*) > 0]' } } }),
    );
    expect(view).toEqual({
      n: {
        error:
          'extract rule failed: JSONPath query needs more than 1000000 steps (nodes visited, values compared)',
      },
    });
  });

  it('fills {path} placeholders in a format rule, objects as JSON and missing values as empty', () => {
    const view = applyLlmHints(
      context,
      hints({
        transform: { line: { type: 'format', format: '{name} ({address.city}) {tags} [{missing}]' } },
      }),
    );
    expect(view).toEqual({ line: 'Ada (London) ["math","engines"] []' });
  });

  it('answers a literal rule with its value', () => {
    expect(
      applyLlmHints(context, hints({ transform: { kind: { type: 'literal', literal: { v: [1] } } } })),
    ).toEqual({ kind: { v: [1] } });
  });

  it('answers only the transformed keys in replace mode, the default', () => {
    const transform = { who: { type: 'literal', literal: 'someone' } };
    expect(applyLlmHints(context, hints({ transform }))).toEqual({ who: 'someone' });
    expect(applyLlmHints(context, hints({ transform, mode: 'replace' }))).toEqual({ who: 'someone' });
  });

  it('puts the transformed keys on top of the selection in merge mode', () => {
    const view = applyLlmHints(
      context,
      hints({
        include: ['name', 'secret'],
        transform: {
          secret: { type: 'literal', literal: '[hidden]' },
          city: { type: 'template', template: '{{address.city}}' },
        },
        mode: 'merge',
      }),
    );
    expect(view).toEqual({ name: 'Ada', secret: '[hidden]', city: 'London' });
  });

  it('computes transforms from the stored context, not from the selection', () => {
    const view = applyLlmHints(
      context,
      hints({
        exclude: ['address'],
        transform: { where: { type: 'template', template: '{{address.city}}' } },
        mode: 'merge',
      }),
    );
    expect(view).toEqual({ name: 'Ada', tags: ['math', 'engines'], secret: 's3cr3t', where: 'London' });
  });

  it('answers { error } for a template that fails at read time and still answers the other keys', () => {
    // Written around the API: validation would have refused it.
    const stored = {
      transform: {
        bad: { type: 'template', template: '{{#each}}{{/each}}' },
        good: { type: 'template', template: '{{name}}' },
      },
    } as LlmHints;
    expect(applyLlmHints(context, stored)).toEqual({
      bad: { error: 'template rule failed: 1:4: #each expects 1 argument, got 0' },
      good: 'Ada',
    });
  });

  it('answers { error } for a template whose output exceeds the render limit', () => {
    const big = { text: 'x'.repeat(600_000) };
    const view = applyLlmHints(
      big,
      hints({ transform: { twice: { type: 'template', template: '{{text}}{{text}}' } } }),
    );
    expect(view).toEqual({
      twice: { error: 'template rule failed: template output exceeds 1048576 characters' },
    });
  });
});

describe('mergeHints', () => {
  const defaults = hints({
    include: ['name'],
    exclude: ['secret'],
    transform: {
      a: { type: 'literal', literal: 'schema a' },
      b: { type: 'literal', literal: 'schema b' },
    },
    mode: 'merge',
  });

  it('answers whichever side exists when the other is missing', () => {
    expect(mergeHints(undefined, undefined)).toBeUndefined();
    expect(mergeHints(defaults, undefined)).toBe(defaults);
    const instance = hints({ include: ['tags'] });
    expect(mergeHints(undefined, instance)).toBe(instance);
  });

  it('lets instance hints win field by field and merges transform rules key by key', () => {
    const instance = hints({
      include: ['tags'],
      transform: {
        b: { type: 'literal', literal: 'instance b' },
        c: { type: 'literal', literal: 'instance c' },
      },
    });
    expect(mergeHints(defaults, instance)).toEqual({
      include: ['tags'],
      exclude: ['secret'],
      transform: {
        a: { type: 'literal', literal: 'schema a' },
        b: { type: 'literal', literal: 'instance b' },
        c: { type: 'literal', literal: 'instance c' },
      },
      mode: 'merge',
    });
  });

  it('applies merged schema defaults and instance hints together', () => {
    const instance = hints({
      transform: { summary: { type: 'template', template: '{{name}} in {{address.city}}' } },
    });
    expect(applyLlmHints(context, mergeHints(defaults, instance))).toEqual({
      name: 'Ada',
      a: 'schema a',
      b: 'schema b',
      summary: 'Ada in London',
    });
  });
});

describe('LlmHintsSchema', () => {
  it('accepts a valid template', () => {
    expect(() =>
      hints({
        transform: { s: { type: 'template', template: '{{#each tags as |t|}}{{t}}{{else}}none{{/each}}' } },
      }),
    ).not.toThrow();
  });

  it('refuses a bad template with the field path, the position and what was expected', () => {
    expect(
      issues({ transform: { summary: { type: 'template', template: 'Hi {{name}}\n{{#each tags}}' } } }),
    ).toEqual([
      {
        path: 'transform.summary.template',
        message:
          'invalid template: 2:15: expected {{/each}} to close {{#each}} opened at 2:4, got end of template',
      },
    ]);
  });

  it('refuses unsupported Handlebars features when written', () => {
    const [issue] = issues({ transform: { s: { type: 'template', template: '{{> footer}}' } } });
    expect(issue?.message).toBe('invalid template: 1:1: partials ({{> name}}) are not supported');
  });

  it('names the breadcrumb field when a create request carries a bad template', () => {
    let error: unknown;
    try {
      parseOrThrow(CreateBreadcrumbSchema, {
        schema_name: 'a.b.v1',
        context: {},
        llm_hints: { transform: { x: { type: 'template', template: '{{shout name}}' } } },
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([
      {
        path: 'llm_hints.transform.x.template',
        message: expect.stringMatching(/^invalid template: 1:3: unknown helper "shout"/),
      },
    ]);
  });

  it('refuses a bad JSONPath with the field path, the position and what was expected', () => {
    expect(issues({ transform: { city: { type: 'extract', value: "$.address['city'" } } })).toEqual([
      {
        path: 'transform.city.value',
        message: 'invalid JSONPath: 17: expected "]" to close "[" at 10, got end of path',
      },
    ]);
    const [missingRoot] = issues({ transform: { city: { type: 'extract', value: 'address.city' } } });
    expect(missingRoot?.message).toBe('invalid JSONPath: 1: expected "$" at the start, got "a"');
  });

  it('refuses jsonpath-plus extensions and JavaScript in filters when written', () => {
    const [parent] = issues({ transform: { x: { type: 'extract', value: '$..city^' } } });
    expect(parent?.message).toBe(
      'invalid JSONPath: 8: the parent operator ^ is a jsonpath-plus extension, not JSONPath (RFC 9535)',
    );
    const [script] = issues({ transform: { x: { type: 'extract', value: '$.tags[?(@ === "math")]' } } });
    expect(script?.message).toBe('invalid JSONPath: 12: === is JavaScript; JSONPath compares with ==');
  });

  it('names the breadcrumb field when a create request carries a bad JSONPath', () => {
    let error: unknown;
    try {
      parseOrThrow(CreateBreadcrumbSchema, {
        schema_name: 'a.b.v1',
        context: {},
        llm_hints: { transform: { x: { type: 'extract', value: '$.tags[(@.length-1)]' } } },
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([
      {
        path: 'llm_hints.transform.x.value',
        message: expect.stringMatching(
          /^invalid JSONPath: 8: a script expression \[\(\.\.\.\)\] is a jsonpath-plus/,
        ),
      },
    ]);
  });

  it('refuses an unknown rule type', () => {
    const [issue] = issues({ transform: { x: { type: 'eval' } } });
    expect(issue?.path).toBe('transform.x.type');
  });
});
