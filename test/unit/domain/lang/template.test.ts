import { describe, expect, it } from 'vitest';
import { TemplateRenderError, TemplateSyntaxError, ValidationError } from '#shared/domain/errors.ts';
import { parseTemplate, renderTemplate, TEMPLATE_LIMITS } from '#shared/domain/lang/template.ts';

const person = {
  name: 'Ada',
  address: { city: 'London', 'post code': 'N1' },
  tags: ['math', 'engines'],
  items: [{ name: 'first' }, { name: 'second' }],
  empty: [],
  count: 0,
};

function syntaxError(template: string): TemplateSyntaxError {
  try {
    parseTemplate(template);
  } catch (error) {
    if (error instanceof TemplateSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(template)} to be refused`);
}

function renderError(run: () => unknown): TemplateRenderError {
  try {
    run();
  } catch (error) {
    if (error instanceof TemplateRenderError) return error;
    throw error;
  }
  throw new Error('expected rendering to fail');
}

// Each expected value below is what handlebars 4.7 renders with { noEscape: true }; the deliberate
// differences have their own table.
describe('renderTemplate', () => {
  describe('paths', () => {
    it.each([
      ['nested fields', '{{name}} lives in {{address.city}}', person, 'Ada lives in London'],
      ['slash separators', '{{address/city}}', person, 'London'],
      [
        'this, . and ./',
        '{{this.name}}|{{./name}}|{{#each tags}}{{.}}+{{this}};{{/each}}',
        person,
        'Ada|Ada|math+math;engines+engines;',
      ],
      [
        'bracket segments',
        '{{[weird key]}}|{{address.[post code]}}',
        { 'weird key': 'W', ...person },
        'W|N1',
      ],
      [
        'array index segments',
        '{{items.[0].name}}|{{items.1.name}}|{{tags.[1]}}',
        person,
        'first|second|engines',
      ],
      ['own length of strings and arrays', '{{name.length}}|{{tags.length}}|{{name.[0]}}', person, '3|2|A'],
      ['missing values as empty', '[{{missing}}|{{missing.deep.path}}|{{address.missing}}]', person, '[||]'],
      ['a quoted name as a field', '{{"weird key"}}', { 'weird key': 'W' }, 'W'],
      [
        'names with - $ and :',
        '{{first-name}} {{$id}} {{ns:key}}',
        { 'first-name': 'A', $id: 'B', 'ns:key': 'C' },
        'A B C',
      ],
      ['spaces inside the mustache', '{{  name  }}', person, 'Ada'],
      ['a string root', '{{this}}!', 'hello', 'hello!'],
      [
        '@root from inside blocks',
        '{{#each items}}{{@root.name}}/{{name}};{{/each}}',
        person,
        'Ada/first;Ada/second;',
      ],
      // Handlebars walks data paths with &&, context paths with != null.
      [
        'a falsy value on the way of a data path as the result',
        '[{{@root.count.x}}|{{count.x}}|{{@root.off.x}}|{{@root.none.x}}]',
        { count: 0, off: false, none: null },
        '[0||false|]',
      ],
    ])('reads %s', (_name, template, data, expected) => {
      expect(renderTemplate(template, data)).toBe(expected);
    });

    it('walks up parent scopes with ../ only where a block changed the context', () => {
      const data = {
        team: 'T',
        people: [
          { name: 'a', tags: ['x'] },
          { name: 'b', tags: [] },
        ],
      };
      expect(
        renderTemplate(
          '{{#each people}}{{#if name}}{{name}}@{{../team}}{{#each tags}}[{{this}}<{{../name}}<{{../../team}}]{{/each}}{{/if}};{{/each}}',
          data,
        ),
      ).toBe('a@T[x<a<T];b@T;');
      expect(
        renderTemplate('{{#with a}}{{#with b}}{{c}}{{../m}}{{../../top}}{{/with}}{{/with}}', {
          top: 'T',
          a: { m: 'M', b: { c: 'C' } },
        }),
      ).toBe('CMT');
      expect(renderTemplate('{{../x}}', { x: 1 })).toBe('');
    });
  });

  describe('values', () => {
    it.each([
      ['scalars', '{{t}} {{f}} {{z}} {{n}}|{{u}}', { t: true, f: false, z: 0, n: null }, 'true false 0 |'],
      [
        'arrays comma-joined, nested flattened, null empty',
        '{{tags}}|{{nested}}',
        { tags: ['a', 'b'], nested: [[1, 2], [3], null] },
        'a,b|1,2,3,',
      ],
      [
        'raw mustaches exactly as plain ones',
        '{{{html}}} {{&html}} {{html}}',
        { html: '<b>&amp;</b>' },
        '<b>&amp;</b> <b>&amp;</b> <b>&amp;</b>',
      ],
      [
        'literal arguments',
        '{{lookup m "k"}}{{lookup m 1}}{{lookup m true}}{{lookup m null}}',
        { m: { k: 'K', 1: 'one', true: 'T' } },
        'KoneT',
      ],
    ])('prints %s', (_name, template, data, expected) => {
      expect(renderTemplate(template, data)).toBe(expected);
    });
  });

  describe('#if, #unless and else chains', () => {
    it.each([
      [false, 'F'],
      [undefined, 'F'],
      [null, 'F'],
      ['', 'F'],
      [0, 'F'],
      [[], 'F'],
      [true, 'T'],
      ['x', 'T'],
      [1, 'T'],
      [[0], 'T'],
      [{}, 'T'],
    ])('treats %j as Handlebars does', (value, expected) => {
      expect(renderTemplate('{{#if v}}T{{else}}F{{/if}}', { v: value })).toBe(expected);
      expect(renderTemplate('{{#unless v}}F{{else}}T{{/unless}}', { v: value })).toBe(expected);
    });

    it('counts zero as present with includeZero=true', () => {
      expect(renderTemplate('{{#if count includeZero=true}}has {{count}}{{/if}}', person)).toBe('has 0');
      expect(renderTemplate('{{#unless count includeZero=true}}none{{else}}some{{/unless}}', person)).toBe(
        'some',
      );
    });

    it.each([
      [{ a: 1 }, 'A'],
      [{ b: 1 }, 'B'],
      [{ c: 1 }, 'C'],
      [{}, 'D'],
    ])('takes the first true branch of an else-if chain for %j', (data, expected) => {
      expect(renderTemplate('{{#if a}}A{{else if b}}B{{else if c}}C{{else}}D{{/if}}', data)).toBe(expected);
      expect(renderTemplate('{{#if a}}A{{^}}{{#if b}}B{{else if c}}C{{else}}D{{/if}}{{/if}}', data)).toBe(
        expected,
      );
    });

    it('chains other helpers with else', () => {
      expect(renderTemplate('{{#if no}}x{{else each tags}}{{this}} {{else}}none{{/if}}', person)).toBe(
        'math engines ',
      );
      expect(renderTemplate('{{#if no}}x{{else with address}}{{city}}{{/if}}', person)).toBe('London');
    });
  });

  describe('#each', () => {
    it('iterates arrays with @index, @key, @first and @last', () => {
      expect(
        renderTemplate(
          '{{#each tags}}{{@index}}/{{@key}}:{{this}}{{#if @first}}<{{/if}}{{#if @last}}>{{/if}} {{/each}}',
          person,
        ),
      ).toBe('0/0:math< 1/1:engines> ');
    });

    it('iterates objects in JavaScript key order with @key', () => {
      expect(
        renderTemplate(
          '{{#each o}}{{@index}}{{@key}}={{this}}{{#if @first}}<{{/if}}{{#if @last}}>{{/if}};{{/each}}',
          {
            o: { b: 1, a: 2, 10: 3, 2: 4 },
          },
        ),
      ).toBe('02=4<;110=3;2b=1;3a=2>;');
    });

    it.each([
      ['an empty array', []],
      ['an empty object', {}],
      ['a missing value', undefined],
      ['a string', 'abc'],
      ['a number', 7],
    ])('renders the else part for %s', (_name, value) => {
      expect(renderTemplate('{{#each v}}item{{else}}nothing{{/each}}', { v: value })).toBe('nothing');
    });

    it('names items and keys with block parameters, visible in nested blocks', () => {
      expect(renderTemplate('{{#each items as |item i|}}{{i}}={{item.name}} {{/each}}', person)).toBe(
        '0=first 1=second ',
      );
      expect(renderTemplate('{{#each o as |v k|}}{{k}}:{{v}} {{/each}}', { o: { x: 1, y: 2 } })).toBe(
        'x:1 y:2 ',
      );
      expect(
        renderTemplate('{{#each rows as |row|}}{{#each ../cols as |col|}}{{row}}{{col}},{{/each}}{{/each}}', {
          rows: [1, 2],
          cols: ['a', 'b'],
        }),
      ).toBe('1a,1b,2a,2b,');
    });

    it('nests with ../ and reaches the outer loop with @../index', () => {
      expect(
        renderTemplate(
          '{{#each groups}}{{#each members}}{{../label}}{{@../index}}.{{@index}}={{this}} {{/each}}{{/each}}',
          {
            groups: [
              { label: 'A', members: ['x', 'y'] },
              { label: 'B', members: ['z'] },
            ],
          },
        ),
      ).toBe('A0.0=x A0.1=y B1.0=z ');
    });
  });

  describe('#with and sections', () => {
    it('switches the context and falls back to else for empty values', () => {
      expect(renderTemplate('{{#with address}}{{city}} ({{../name}}){{/with}}', person)).toBe('London (Ada)');
      expect(renderTemplate('{{#with address as |a|}}{{a.city}}{{/with}}', person)).toBe('London');
      expect(renderTemplate('{{#with missing}}x{{else}}no address{{/with}}', person)).toBe('no address');
      expect(renderTemplate('{{#with count}}[{{this}}]{{/with}}', person)).toBe('[0]');
    });

    it('renders Mustache-style sections as Handlebars does', () => {
      expect(renderTemplate('{{#address}}{{city}}{{/address}}', person)).toBe('London');
      expect(renderTemplate('{{#items}}{{@index}}:{{name}} {{/items}}', person)).toBe('0:first 1:second ');
      expect(
        renderTemplate('{{#flag}}on{{/flag}}{{#off}}x{{else}}off{{/off}}', { flag: true, off: false }),
      ).toBe('onoff');
      expect(renderTemplate('{{#empty}}x{{else}}none{{/empty}}', person)).toBe('none');
      expect(renderTemplate('{{^empty}}none{{/empty}}{{^name}}x{{else}}some{{/name}}', person)).toBe(
        'nonesome',
      );
      expect(renderTemplate('{{#count}}[{{this}}]{{/count}}', person)).toBe('[0]');
    });
  });

  describe('helpers', () => {
    it('looks up dynamic keys and indexes with lookup', () => {
      const data = {
        labels: { open: 'Open', done: 'Done' },
        status: 'done',
        ids: [7, 8],
        names: ['seven', 'eight'],
      };
      expect(renderTemplate('{{lookup labels status}}', data)).toBe('Done');
      expect(renderTemplate('{{#each ids}}{{this}}={{lookup ../names @index}} {{/each}}', data)).toBe(
        '7=seven 8=eight ',
      );
      expect(renderTemplate('{{lookup missing "x"}}|{{lookup labels missing}}', data)).toBe('|');
    });

    it('takes a lookup key that is an array or null by the name JavaScript makes of it, as Handlebars', () => {
      const data = {
        m: { done: 'D', 'a,b': 'AB', null: 'N', '[object Object]': 'O' },
        keys: ['done'],
        pair: ['a', 'b'],
      };
      expect(renderTemplate('{{lookup m keys}}|{{lookup m pair}}|{{lookup m (lookup keys 5)}}', data)).toBe(
        'D|AB|',
      );
      expect(renderTemplate('{{lookup m null}}|{{lookup m m}}', data)).toBe('N|O');
    });

    it('accepts sub-expressions as arguments', () => {
      const data = { groups: { red: ['r1', 'r2'], blue: ['b1'] }, kind: 'red', o: { a: { b: 'deep' } } };
      expect(renderTemplate('{{#each (lookup groups kind)}}{{this}} {{/each}}', data)).toBe('r1 r2 ');
      expect(renderTemplate('{{lookup (lookup o "a") "b"}}', data)).toBe('deep');
      expect(renderTemplate('{{#if (lookup groups "green")}}g{{else}}no green{{/if}}', data)).toBe(
        'no green',
      );
    });

    it('prints JSON with json (a crumbs addition)', () => {
      expect(renderTemplate('{{json address}}', person)).toBe('{"city":"London","post code":"N1"}');
      expect(renderTemplate('{{json name}} {{json tags}} {{json count}} [{{json missing}}]', person)).toBe(
        '"Ada" ["math","engines"] 0 []',
      );
    });

    it('joins arrays with a separator with join (a crumbs addition)', () => {
      expect(renderTemplate('{{join tags ", "}}', person)).toBe('math, engines');
      expect(renderTemplate('{{join items " | "}}', person)).toBe('{"name":"first"} | {"name":"second"}');
      expect(renderTemplate('[{{join missing ", "}}] {{join name ", "}}', person)).toBe('[] Ada');
    });
  });

  describe('comments, escapes and whitespace', () => {
    it.each([
      ['comments', 'a{{! one }}b{{!-- two }} {{x}} --}}c{{!--}}d', {}, 'abcd'],
      ['an escaped mustache', '\\{{name}} is {{name}}', person, '{{name}} is Ada'],
      ['escaped mustaches in a row', '\\{{a}}\\{{b}}{{name}}', person, '{{a}}{{b}}Ada'],
      ['an escaped backslash before a live mustache', 'C:\\\\{{name}}', person, 'C:\\Ada'],
      ['~ on both sides', 'a  {{~name~}}  \n b', person, 'aAdab'],
      ['~ on blocks and else', '[ {{~#if no~}} A {{~else~}} B {{~/if~}} ]', {}, '[B]'],
      ['~ on else-if links', '{{#if a}} A {{~else if b}} B {{else if c~}} C {{~/if}}|', { c: 1 }, 'C|'],
      ['~ on comments', 'a {{~! x ~}} b', {}, 'ab'],
      [
        'standalone block lines',
        '<ul>\n  {{#each tags}}\n  <li>{{this}}</li>\n  {{/each}}\n</ul>',
        person,
        '<ul>\n  <li>math</li>\n  <li>engines</li>\n</ul>',
      ],
      [
        'standalone else-if lines',
        '{{#if a}}\n  A\n{{else if b}}\n  B\n{{else}}\n  C\n{{/if}}\n',
        { b: 1 },
        '  B\n',
      ],
      ['standalone comment lines', '  {{! note }}\nX\n  {{!-- more --}}  \r\nY', {}, 'X\nY'],
      ['inline blocks keep their line', 'a {{#if t}}T{{/if}} b\n', { t: 1 }, 'a T b\n'],
      ['mustaches are never standalone', '{{name}}\n{{name}}\n', person, 'Ada\nAda\n'],
    ])('handles %s', (_name, template, data, expected) => {
      expect(renderTemplate(template, data)).toBe(expected);
    });
  });

  describe('deliberate differences from Handlebars', () => {
    it.each([
      [
        'objects print as JSON, not [object Object]',
        '{{address}}',
        person,
        '{"city":"London","post code":"N1"}',
      ],
      ['objects inside arrays print as JSON', '{{items}}', person, '{"name":"first"},{"name":"second"}'],
      [
        'this as an object prints as JSON',
        '{{#each items}}{{this}};{{/each}}',
        person,
        '{"name":"first"};{"name":"second"};',
      ],
      // Handlebars with noEscape adds adjacent numbers: {{a}}{{b}} with 1 and 2 printed "3".
      ['adjacent numbers are concatenated', '{{a}}{{b}}', { a: 1, b: 2 }, '12'],
      // Handlebars would call the helper with no arguments.
      [
        'a helper name without arguments reads the field',
        '{{json}} {{join}} {{lookup}}',
        { json: 'j', join: 'o', lookup: 'l' },
        'j o l',
      ],
      // Handlebars refuses a trailing numeric segment without brackets.
      ['a trailing numeric segment is an index', '{{tags.0}}|{{tags.1}}', person, 'math|engines'],
    ])('%s', (_name, template, data, expected) => {
      expect(renderTemplate(template, data)).toBe(expected);
    });
  });

  it('renders a parsed template many times with different data', () => {
    const template = parseTemplate('{{#each xs}}\n- {{this}}\n{{/each}}');
    expect(renderTemplate(template, { xs: [1, 2] })).toBe('- 1\n- 2\n');
    expect(renderTemplate(template, { xs: ['a'] })).toBe('- a\n');
    expect(renderTemplate(template, { xs: [1, 2] })).toBe('- 1\n- 2\n');
  });
});

describe('parseTemplate', () => {
  it.each([
    ['an unclosed mustache', 'Hi {{name', 1, 10, 'expected "}}", got end of template'],
    ['an unclosed triple mustache', '{{{name}}', 1, 8, 'expected "}}}", got "}}"'],
    ['an empty mustache', 'a {{ }}', 1, 6, 'expected a name, a path or a literal, got "}}"'],
    [
      'an unclosed block',
      '{{#if a}}\n  yes',
      2,
      6,
      'expected {{/if}} to close {{#if}} opened at 1:4, got end of template',
    ],
    ['a mismatched close', '{{#if a}}x{{/each}}', 1, 11, '{{/each}} does not match {{#if}}'],
    ['a close without an open', 'x {{/if}}', 1, 3, '{{/if}} closes a block that was never opened'],
    ['an else outside a block', 'a\n{{else}}', 2, 1, '{{else}} outside of a block'],
    [
      'a second else',
      '{{#if a}}1{{else}}2{{else}}3{{/if}}',
      1,
      20,
      'expected {{/if}} to close {{#if}} opened at 1:4, got "{{else}}"',
    ],
    ['a partial', 'x{{> footer}}', 1, 2, 'partials ({{> name}}) are not supported'],
    ['a partial block', '{{#> layout}}x{{/layout}}', 1, 1, 'partial blocks ({{#> name}}) are not supported'],
    ['a decorator', '{{* deco}}', 1, 1, 'decorators ({{* name}}) are not supported'],
    ['an inline partial', '{{#*inline "p"}}x{{/inline}}', 1, 1, 'decorators ({{* name}}) are not supported'],
    ['a raw block', '{{{{raw}}}}x{{{{/raw}}}}', 1, 1, 'raw blocks ({{{{raw}}}}) are not supported'],
    ['an unknown helper', '{{shout name}}', 1, 3, 'unknown helper "shout"'],
    ['an unknown helper with key=value', '{{shout name loud=true}}', 1, 3, 'unknown helper "shout"'],
    ['an unknown helper in a sub-expression', '{{#if (shout a)}}x{{/if}}', 1, 8, 'unknown helper "shout"'],
    ['an unknown block helper', '{{#shout name}}x{{/shout}}', 1, 4, 'unknown block helper "shout"'],
    ['a block helper used inline', '{{if a}}', 1, 3, '"if" is a block helper: write {{#if …}}…{{/if}}'],
    [
      'an inline helper used as a block',
      '{{#lookup a "b"}}x{{/lookup}}',
      1,
      4,
      '"lookup" is not a block helper',
    ],
    ['too few arguments', '{{lookup a}}', 1, 3, 'lookup expects 2 arguments, got 1'],
    ['too many arguments', '{{json a b}}', 1, 3, 'json expects 1 argument, got 2'],
    ['#each without a list', 'x\n  {{#each}}{{/each}}', 2, 6, '#each expects 1 argument, got 0'],
    ['an unsupported key=value', '{{#each items sort=true}}{{/each}}', 1, 4, '#each does not take sort=…'],
    [
      'key=value on an inline helper',
      '{{json a pretty=true}}',
      1,
      3,
      'json does not take key=value arguments',
    ],
    [
      'block parameters on #if',
      '{{#if a as |x|}}{{/if}}',
      1,
      9,
      'block parameters (as |…|) are only supported on #each and #with',
    ],
    [
      'too many block parameters',
      '{{#each a as |x y z|}}{{/each}}',
      1,
      11,
      '#each has 2 block parameters, got 3',
    ],
    [
      'a sub-expression as the name',
      '{{(lookup a "b")}}',
      1,
      3,
      'expected a name, a path or a literal, got "("',
    ],
    [
      '.. inside a path',
      '{{a/../b}}',
      1,
      3,
      'invalid path "a/..": "this", "." and ".." may only start a path',
    ],
    ['an unknown data variable', '{{@foo}}', 1, 4, 'unknown data variable "@foo"'],
    ['an unclosed long comment', 'a {{!-- never', 1, 3, 'comment is never closed: expected "--}}"'],
    ['an unclosed comment', 'a {{! never', 1, 3, 'comment is never closed: expected "}}"'],
    ['a stray character', '{{name!}}', 1, 7, 'unexpected "!" inside a mustache'],
  ])('refuses %s with its position', (_name, template, line, column, message) => {
    const error = syntaxError(template);
    expect({ line: error.line, column: error.column }).toEqual({ line, column });
    expect(error.message).toContain(`${line}:${column}: ${message}`);
  });

  it('throws a ValidationError that says where and what', () => {
    const error = syntaxError('{{#each items}}');
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.name).toBe('TemplateSyntaxError');
    expect(error.retriable).toBe(false);
    expect(error.message).toBe(
      '1:16: expected {{/each}} to close {{#each}} opened at 1:4, got end of template',
    );
  });
});

describe('template safety', () => {
  it('reads own properties only', () => {
    expect(
      renderTemplate(
        '[{{toString}}|{{name.toString}}|{{tags.map}}|{{hasOwnProperty}}|{{count.toFixed}}]',
        person,
      ),
    ).toBe('[||||]');
    expect(renderTemplate('[{{lookup this "toString"}}|{{lookup tags "push"}}]', person)).toBe('[|]');
  });

  it.each([
    '{{constructor}}',
    '{{name.constructor.constructor}}',
    '{{__proto__}}',
    '{{a.[__proto__].x}}',
    '{{prototype}}',
    '{{@root.constructor}}',
    '{{#with constructor}}x{{/with}}',
  ])('refuses %s when written', (template) => {
    expect(syntaxError(template).detail).toMatch(/cannot be read by a template/);
  });

  it('never resolves __proto__ or constructor keys, even own ones from JSON', () => {
    const data: unknown = JSON.parse('{"__proto__": {"x": "polluted"}, "constructor": "c", "a": 1}');
    expect(renderTemplate('{{#each this}}{{@key}}={{this}};{{/each}}', data)).toBe('a=1;');
    expect(renderTemplate('[{{lookup this "__proto__"}}|{{lookup this "constructor"}}]', data)).toBe('[|]');
    expect(renderTemplate('[{{#each this as |v k|}}{{lookup ../this k}}{{/each}}]', data)).toBe('[1]');
  });

  it('caps the output length', () => {
    const big = 'x'.repeat(600_000);
    expect(renderTemplate('{{big}}', { big })).toHaveLength(600_000);
    expect(renderError(() => renderTemplate('{{big}}{{big}}', { big })).message).toBe(
      `template output exceeds ${TEMPLATE_LIMITS.maxOutputLength} characters`,
    );
    expect(
      renderError(() =>
        renderTemplate('{{#each xs}}{{this}}{{/each}}', { xs: ['abc', 'def'] }, { maxOutputLength: 5 }),
      ).message,
    ).toBe('template output exceeds 5 characters');
  });

  it('caps the work of loops that print nothing', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i);
    const template = '{{#each xs}}{{#each ../xs}}{{#each ../../xs}}{{/each}}{{/each}}{{/each}}';
    const error = renderError(() => renderTemplate(template, { xs }, { maxSteps: 10_000 }));
    expect(error.message).toBe('template rendering exceeds 10000 steps');
    expect(error.retriable).toBe(false);
  });

  it('caps nesting depth when written', () => {
    const nested = (depth: number) => `${'{{#if a}}'.repeat(depth)}x${'{{/if}}'.repeat(depth)}`;
    expect(renderTemplate(nested(TEMPLATE_LIMITS.maxNesting), { a: true })).toBe('x');
    const error = syntaxError(nested(TEMPLATE_LIMITS.maxNesting + 1));
    expect(error.detail).toBe(
      `blocks and sub-expressions nest deeper than ${TEMPLATE_LIMITS.maxNesting} levels`,
    );
    expect(error.column).toBe(9 * TEMPLATE_LIMITS.maxNesting + 1);
    expect(syntaxError(`{{json ${'(json '.repeat(101)}a${')'.repeat(101)}}}`).detail).toMatch(/nest deeper/);
  });

  it('treats template text as data, never as code', () => {
    const data = { x: '{{name}}', name: 'Ada' };
    expect(renderTemplate('{{x}} is not {{name}}', data)).toBe('{{name}} is not Ada');
    expect(syntaxError('{{lookup this "a") + process.exit(1)}}').detail).toBe('expected "}}", got ")"');
  });
});
