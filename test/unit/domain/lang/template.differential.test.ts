/**
 * The template renderer against handlebars 4.7 (the library it replaced, a devDependency only, compiled with
 * `noEscape` as crumbs used it): on generated templates of the supported syntax and generated JSON data, the same
 * output byte for byte. The deliberate differences listed in `shared/domain/lang/template/README.md` are kept out of the
 * generated cases and asserted one by one below, with what each side renders:
 * - Objects print as JSON: the data handed to Handlebars gives each object a (non-enumerable) `toString` that
 *   returns its JSON, which is what our renderer prints, so everything else about printing is still compared.
 * - Adjacent numbers: Handlebars with noEscape adds them when a program (the template, a block body, an else)
 *   starts with them, so every generated program starts with text.
 * - Helper names without arguments, `items.0` and everything refused when written are never generated.
 * - `json` and `join` are crumbs helpers; Handlebars gets the same two, written here from their documentation.
 */
import fc from 'fast-check';
import Handlebars from 'handlebars';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '#shared/domain/lang/template.ts';
import { assertDifferential } from '../../../support/differential.ts';

const handlebars = Handlebars.create();
handlebars.registerHelper('json', (value: unknown) => JSON.stringify(value) ?? '');
handlebars.registerHelper('join', (list: unknown, separator: unknown) => {
  const text = (value: unknown): string => (value === null || value === undefined ? '' : String(value));
  return Array.isArray(list) ? list.map(text).join(text(separator)) : text(list);
});

function renderWithHandlebars(template: string, data: unknown): string {
  return String(handlebars.compile(template, { noEscape: true })(printedAsJson(data)));
}

/** A copy of `data` in which every object prints as its JSON, as our renderer prints objects. */
function printedAsJson(data: unknown): unknown {
  if (Array.isArray(data)) return data.map(printedAsJson);
  if (data === null || typeof data !== 'object') return data;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) copy[key] = printedAsJson(value);
  Object.defineProperty(copy, 'toString', { value: () => JSON.stringify(data), enumerable: false });
  return copy;
}

// ---------------------------------------------------------------------------------------------------------------
// Data: JSON over a small vocabulary of keys, so that generated paths find something most of the time. No null:
// an #each over a null item is a documented difference (asserted below); missing values and the null literal in
// templates still exercise how nothing prints and tests.

const KEYS = ['a', 'b', 'c', 'name', 'items', 'x', '0', '1', 'weird key', 'length'] as const;
const leaf = fc.oneof(
  fc.constantFrom('', 'hi', 'a b', 'x\ny', '0', 'false', ' '),
  fc.integer({ min: -3, max: 12 }),
  fc.constantFrom(0, 1, -1, 2.5, -0.5, 1e21),
  fc.boolean(),
);
const { json } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    leaf,
    leaf,
    fc.array(tie('json'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('json'), { maxKeys: 4, noNullPrototype: true }),
  ),
}));
const data = fc.dictionary(fc.constantFrom(...KEYS), json, { maxKeys: 6, noNullPrototype: true });

// ---------------------------------------------------------------------------------------------------------------
// Templates

/** Names a path may start with: data keys, block parameter names (`x` is both) and a key no data has. */
const HEADS = ['a', 'b', 'c', 'name', 'items', 'x', 'it', 'k', 'missing', '0', 'weird key', 'length'];
const segment = (name: string): string => (/^[a-z]+$/.test(name) ? name : `[${name}]`);

const plainPath = fc
  .tuple(
    fc.constantFrom(...HEADS),
    fc.array(fc.tuple(fc.constantFrom('.', '.', '/'), fc.constantFrom(...KEYS)), { maxLength: 2 }),
  )
  .map(([head, rest]) => segment(head) + rest.map(([sep, name]) => sep + segment(name)).join(''));
const path = fc.oneof(
  plainPath,
  plainPath,
  fc
    .tuple(fc.constantFrom('this.', './', '../', '../../', '@root.', '../this.'), plainPath)
    .map(([p, x]) => p + x),
  fc.constantFrom('this', '.', '..', '@root', '@index', '@key', '@first', '@last', '@../index', '@../key'),
);
const literal = fc.constantFrom('"a"', "'name'", '"weird key"', '"s t"', '0', '1', '12', '-1.5');
const keyword = fc.constantFrom('true', 'false', 'null', 'undefined');

const { expression } = fc.letrec<{ expression: string; subexpression: string }>((tie) => ({
  expression: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    path,
    path,
    literal,
    keyword,
    tie('subexpression'),
  ),
  subexpression: fc.oneof(
    fc.tuple(tie('expression'), tie('expression')).map(([o, k]) => `(lookup ${o} ${k})`),
    tie('expression').map((x) => `(json ${x})`),
    fc.tuple(tie('expression'), tie('expression')).map(([l, s]) => `(join ${l} ${s})`),
  ),
}));

const tilde = fc.constantFrom('', '', '~');
const pad = fc.constantFrom('', '', ' ');
/** Text between tags: letters, punctuation, blanks and line breaks, but never `{`, `}` or `\`. */
const text = fc
  .array(fc.constantFrom('x', 'y', 'z', ' ', ' ', '  ', '\n', '\n', '\t', '-', ':', '.', '\r\n'), {
    maxLength: 6,
  })
  .map((parts) => parts.join(''));
/** Text that starts a program: a visible character, possibly on a line of its own (standalone tags). */
const leadingText = fc
  .tuple(fc.constantFrom('', '\n', '\n  ', ' '), fc.constantFrom('x', 'y', '-', '>'), text)
  .map((parts) => parts.join(''));

/** What a mustache prints: a value (a path or a literal, never a bare sub-expression) or a helper call. */
const inline = fc.oneof(
  path,
  path,
  literal,
  keyword,
  fc.tuple(expression, expression).map(([o, k]) => `lookup ${o} ${k}`),
  expression.map((x) => `json ${x}`),
  fc.tuple(expression, expression).map(([l, s]) => `join ${l} ${s}`),
);
const mustache = fc
  .tuple(fc.constantFrom('{{', '{{', '{{{', '{{&'), tilde, pad, inline, pad, tilde)
  .map(([open, left, before, body, after, right]) =>
    open === '{{{'
      ? `{{${left}{${before}${body}${after}}${right}}}`
      : `${open === '{{&' ? `{{${left}&` : `{{${left}`}${before}${body}${after}${right}}}`,
  );
const comment = fc
  .tuple(tilde, fc.constantFrom('! note ', '!', '!-- a }} b --', '!--x--'), tilde)
  .map(([left, body, right]) => `{{${left}${body}${right}}}`);
/** `\{{x}}` prints the mustache as text; `\\{{x}}` prints a backslash, then the value. */
const escaped = fc.constantFrom('\\{{a}}', '\\{{#if}} ', '\\\\{{a}}', '\\\\{{name}}');

const tag = (body: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(tilde, body, tilde).map(([left, inner, right]) => `{{${left}${inner}${right}}}`);
const elseTag = tag(fc.constantFrom('else', ' else ', '^'));
const blockParams = (max: number): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constant(''),
    fc
      .uniqueArray(fc.constantFrom('x', 'it', 'k', 'y'), { minLength: 1, maxLength: max })
      .map((names) => ` as |${names.join(' ')}|`),
  );

/** Blocks nest at most this deep in a generated template. */
const TEMPLATE_DEPTH = 3;

/** A program (template or block body) with blocks nested at most `depth` deep. */
function programOf(depth: number): fc.Arbitrary<string> {
  const statements: fc.Arbitrary<string>[] = [mustache, mustache, mustache, comment, escaped];
  if (depth > 0) {
    const body = programOf(depth - 1);
    const inverse = fc.oneof(
      fc.constant(''),
      fc.tuple(elseTag, body).map(([open, program]) => open + program),
    );
    const conditional = (name: 'if' | 'unless'): fc.Arbitrary<string> => {
      const condition = fc.tuple(
        expression,
        fc.constantFrom('', '', ' includeZero=true', ' includeZero=false'),
      );
      const elseIf = fc
        .tuple(tilde, fc.constantFrom('if', 'unless'), condition, tilde, body, inverse)
        .map(
          ([l, helper, [x, zero], r, program, rest]) =>
            `{{${l}else ${helper} ${x}${zero}${r}}}${program}${rest}`,
        );
      return fc
        .tuple(tag(condition.map(([x, zero]) => `#${name} ${x}${zero}`)), body, fc.oneof(inverse, elseIf))
        .chain(([open, program, rest]) =>
          tag(fc.constant(`/${name}`)).map((close) => open + program + rest + close),
        );
    };
    const withBlock = (name: 'each' | 'with', params: number): fc.Arbitrary<string> =>
      fc
        .tuple(
          tag(fc.tuple(expression, blockParams(params)).map(([x, p]) => `#${name} ${x}${p}`)),
          body,
          inverse,
        )
        .chain(([open, program, rest]) =>
          tag(fc.constant(`/${name}`)).map((close) => open + program + rest + close),
        );
    const section = fc
      .tuple(fc.constantFrom('#', '^'), plainPath, body, inverse)
      .chain(([kind, name, program, rest]) =>
        fc
          .tuple(tag(fc.constant(kind + name)), tag(fc.constant(`/${name}`)))
          .map(([open, close]) => open + program + rest + close),
      );
    statements.push(
      conditional('if'),
      conditional('unless'),
      withBlock('each', 2),
      withBlock('each', 2),
      withBlock('with', 1),
      section,
    );
  }
  return fc
    .tuple(
      leadingText,
      // Few statements per body: nested bodies multiply, and Handlebars compiles each template to JavaScript.
      fc.array(fc.tuple(fc.oneof(...statements), fc.oneof(fc.constant(''), text)), {
        maxLength: depth === TEMPLATE_DEPTH ? 3 : 2,
      }),
    )
    .map(([lead, rest]) => lead + rest.map(([statement, after]) => statement + after).join(''));
}

const template = programOf(TEMPLATE_DEPTH);

describe('templates against handlebars', () => {
  it('render byte for byte as Handlebars on generated templates and data', () => {
    assertDifferential(
      fc.property(template, data, (source, input) => {
        const expected = renderWithHandlebars(source, input);
        expect(renderTemplate(source, input), `${JSON.stringify(source)} on ${JSON.stringify(input)}`).toBe(
          expected,
        );
      }),
      2000,
    );
  }, 120_000);

  // The deliberate differences listed in the renderer's header: each as both render it.
  it.each([
    [
      'objects print as JSON',
      '{{o}}|{{list}}',
      { o: { a: 1 }, list: [{ a: 1 }, 2] },
      '{"a":1}|{"a":1},2',
      '[object Object]|[object Object],2',
    ],
    ['adjacent numbers are concatenated', '{{a}}{{b}}', { a: 1, b: 2 }, '12', '3'],
    [
      'a null item stays null inside the blocks in its body',
      '{{#each list}}[{{#if true}}{{#if this}}yes{{else}}no{{/if}}{{/if}}]{{/each}}',
      { list: [null, 1] },
      '[no][yes]',
      '[yes][yes]',
    ],
  ])('%s: %j', (_what, source, input, ours, theirs) => {
    expect(renderTemplate(source, input)).toBe(ours);
    expect(String(handlebars.compile(source, { noEscape: true })(input))).toBe(theirs);
  });

  it('reads a field for a helper name alone, where Handlebars called the helper', () => {
    expect(renderTemplate('{{json}}', { json: 'j' })).toBe('j');
    expect(String(handlebars.compile('{{json}}', { noEscape: true })({ json: 'j' }))).toMatch(
      /^\{"name":"json"/,
    );
  });

  it('reads items.0 as an index, which Handlebars refuses', () => {
    expect(renderTemplate('{{items.0}}', { items: ['first'] })).toBe('first');
    expect(() => handlebars.compile('{{items.0}}', { noEscape: true })({})).toThrow(/Parse error/);
  });
});
