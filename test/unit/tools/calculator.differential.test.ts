/**
 * The calculator against mathjs (number build), the library it replaced: on generated expressions of the grammar
 * both accept, the same number or the same refusal. The differences listed in `shared/tools/calculator.ts` are
 * left out of the generator and asserted one by one below, with what each side answers.
 */
import fc from 'fast-check';
import { evaluate as mathjsEvaluate } from 'mathjs/number';
import { describe, expect, it } from 'vitest';
import { calculate } from '#shared/tools/calculator.ts';
import { assertDifferential } from '../../support/differential.ts';

type Outcome = { readonly value: number } | { readonly refused: string };

function ours(expression: string): Outcome {
  try {
    return { value: calculate(expression) };
  } catch (error) {
    return { refused: (error as Error).message };
  }
}

/** What the mathjs calculator answered: a finite number, or a refusal (an error, or no finite number). */
function mathjs(expression: string): Outcome {
  try {
    const value: unknown = mathjsEvaluate(expression);
    if (typeof value === 'number' && Number.isFinite(value)) return { value };
    return { refused: `mathjs answered ${String(value)}` };
  } catch (error) {
    return { refused: (error as Error).message };
  }
}

/**
 * The same answer: both refuse, or both give the same number. mathjs's `max` and `min` take arguments within
 * 1e-12 relative (1e-15 absolute) as equal and keep the first; ours use Math.max and Math.min (a documented
 * difference), so there the two may pick different arguments of that near-tie.
 */
function agree(expression: string, a: Outcome, b: Outcome): boolean {
  if ('refused' in a || 'refused' in b) return 'refused' in a && 'refused' in b;
  if (a.value === b.value) return true;
  const nearTie =
    Math.abs(a.value - b.value) <= Math.max(1e-12 * Math.max(Math.abs(a.value), Math.abs(b.value)), 1e-15);
  return nearTie && /\b(max|min)\(/.test(expression);
}

const space = fc.constantFrom('', '', ' ', '  ', '\t');
const number = fc.oneof(
  fc.integer({ min: 0, max: 1000 }).map(String),
  fc
    .tuple(fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 999 }))
    .map(([whole, fraction]) => `${whole}.${fraction}`),
  fc.constantFrom('0', '1', '2', '10', '100', '0.1', '0.2', '0.3', '.5', '.25', '1.005', '2.675', '1e3'),
  fc.constantFrom('2.5e-3', '1E2', '1e-7', '1e+2', '123456789', '9007199254740993', '1e20', '1.5e300'),
);
const constant = fc.constantFrom('pi', 'e');
const oneArgument = fc.constantFrom('abs', 'cbrt', 'ceil', 'cos', 'exp', 'floor', 'sin', 'sqrt', 'tan');

const { expression } = fc.letrec<{
  expression: string;
  operand: string;
  binary: string;
  unary: string;
  percent: string;
  call: string;
  group: string;
}>((tie) => ({
  expression: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    tie('operand'),
    tie('binary'),
    tie('binary'),
    tie('unary'),
    tie('percent'),
  ),
  operand: fc.oneof({ depthSize: 'small' }, number, number, constant, tie('call'), tie('group')),
  binary: fc
    .tuple(
      tie('expression'),
      space,
      fc.constantFrom('+', '-', '*', '/', '^', '%', ' mod '),
      space,
      tie('expression'),
    )
    .map((parts) => parts.join('')),
  unary: fc.tuple(fc.constantFrom('-', '+', '- '), tie('expression')).map(([sign, x]) => sign + x),
  // `x%` is a percentage when no operand follows; the generator also puts one after an operator (modulo).
  percent: tie('operand').map((x) => `${x}%`),
  group: tie('expression').map((x) => `(${x})`),
  call: fc.oneof(
    fc.tuple(oneArgument, tie('expression')).map(([name, x]) => `${name}(${x})`),
    tie('expression').map((x) => `log(${x})`),
    // A zero or NaN base is a documented difference, so generated bases are positive numbers.
    fc
      .tuple(
        tie('expression'),
        fc.oneof(
          fc.constantFrom('10', '0.5', 'e'),
          number.map((b) => `${b} + 1`),
        ),
      )
      .map(([x, base]) => `log(${x}, ${base})`),
    fc
      .tuple(fc.constantFrom('max', 'min'), fc.array(tie('expression'), { minLength: 1, maxLength: 4 }))
      .map(([name, args]) => `${name}(${args.join(', ')})`),
    tie('expression').map((x) => `round(${x})`),
    fc
      .tuple(tie('expression'), fc.oneof(fc.integer({ min: 0, max: 16 }).map(String), tie('expression')))
      .map(([x, digits]) => `round(${x}, ${digits})`),
  ),
}));

describe('calculator against mathjs', () => {
  it('gives the same number or the same refusal on generated arithmetic', () => {
    let answered = 0;
    let runs = 0;
    assertDifferential(
      fc.property(expression, (source) => {
        runs++;
        const a = ours(source);
        const b = mathjs(source);
        if ('value' in a) answered++;
        expect(agree(source, a, b), `${source}: ours ${JSON.stringify(a)}, mathjs ${JSON.stringify(b)}`).toBe(
          true,
        );
      }),
      4000,
    );
    // Most cases must be numbers, not refusals both agree on: otherwise the generator tests nothing.
    expect(answered / runs).toBeGreaterThan(0.6);
  });

  // The differences documented in the calculator's header, each as both sides answer it.
  it.each([
    ['2pi', 'implicit multiplication is refused', /write \*/],
    ['2(3+4)', 'implicit multiplication is refused', /write \*/],
    ['0x10', 'hexadecimal literals are refused', /only decimal numbers/],
    ['1 + 2 # three', '# comments are refused', /unexpected character "#"/],
    ['floor(1.5, 1)', 'floor takes one argument', /floor\(\) takes 1 argument/],
    ['log(8, 0)', 'a zero base has no logarithm', /no finite numeric result/],
    ['log(8, 0/0)', 'nor has a base that is not a number', /no finite numeric result/],
  ])('refuses %s where mathjs answered (%s)', (source, _why, message) => {
    expect(mathjs(source)).toHaveProperty('value');
    expect(ours(source)).toEqual({ refused: expect.stringMatching(message) });
  });

  it('refuses ; between statements, where mathjs answered a result set', () => {
    expect(String(mathjsEvaluate('1; 2'))).toBe('[2]');
    expect(ours('1; 2')).toEqual({ refused: expect.stringMatching(/unexpected character ";"/) });
  });

  it.each([
    ['1\n+2', 3, 'a newline is whitespace; mathjs read two statements'],
    ['5.*2', 10, 'a number may end in a dot; mathjs read element-wise .*'],
  ])('answers %j where mathjs refused: %d (%s)', (source, value) => {
    expect(mathjs(source)).toHaveProperty('refused');
    expect(ours(source)).toEqual({ value });
  });

  it('takes min and max exactly where mathjs took near-ties as equal', () => {
    expect(mathjs('min(1e-16, 0)')).toEqual({ value: 1e-16 });
    expect(ours('min(1e-16, 0)')).toEqual({ value: 0 });
    expect(mathjs('max(0.1 + 0.2, 0.3)')).toEqual({ value: 0.30000000000000004 });
    expect(ours('max(0.1 + 0.2, 0.3)')).toEqual({ value: 0.30000000000000004 });
    expect(mathjs('max(0.3, 0.1 + 0.2)')).toEqual({ value: 0.3 });
    expect(ours('max(0.3, 0.1 + 0.2)')).toEqual({ value: 0.30000000000000004 });
  });
});
