import { describe, expect, it } from 'vitest';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { calculate } from '#shared/tools/calculator.ts';

/** The error `calculate` throws; fails the test if it throws something else or nothing. */
function errorOf(expression: string): NonRetriableError {
  try {
    calculate(expression);
  } catch (error) {
    if (error instanceof NonRetriableError) return error;
    throw error;
  }
  throw new Error(`${JSON.stringify(expression)} evaluated without an error`);
}

// Every expected value below is what the mathjs version of the calculator (mathjs 15, number build) returned.
describe('calculate', () => {
  it.each([
    ['2 + 3 * 4', 14],
    ['(2 + 3) * 4', 20],
    ['10 - 4 - 3', 3],
    ['64 / 4 / 2', 8],
    ['1/2/2', 0.25],
    ['-2^2', -4],
    ['- 2 ^ 2', -4],
    ['-(2)^2', -4],
    ['(-2)^2', 4],
    ['2^3^2', 512],
    ['2^-2', 0.25],
    ['2^-3^2', 0.001953125],
    ['2^-2^-1', 0.7071067811865475],
    ['7 % 3', 1],
    ['-7 % 3', 2],
    ['7 % -3', -2],
    ['-3 % 2', 1],
    ['5.5 % 2', 1.5],
    ['5 % 0', 5],
    ['-7 mod 3', 2],
    ['10 mod 4', 2],
    ['5 % 2 % 3', 1],
    ['2*3%4', 2],
    ['3 % 2 ^ 2', 3],
    ['10 % 3 + 1', 2],
    ['--2', 2],
    ['+-+2', -2],
    ['2--3', 5],
    ['3 - - - 2', 1],
    ['2 * -3', -6],
    ['0.1+0.2', 0.30000000000000004],
    ['2^0.5', Math.SQRT2],
    ['1/(1/0)', 0],
  ])('evaluates %s to %d with mathjs precedence and associativity', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it.each([
    ['50%', 0.5],
    ['(10)%', 0.1],
    ['-10%', -0.1],
    ['80 * 15%', 12],
    ['15% * 80', 12],
    ['10%*2', 0.2],
    ['2^10%', 10.24],
    ['sqrt(25)%', 0.05],
    ['100 + 10%', 110],
    ['100 - 10%', 90],
    ['100 + -10%', 90],
    ['2*100 + 10%', 220],
    ['100 + 10%*2', 100.2],
    ['100 + (10%)', 100.1],
    // A `%` followed by something that can start an operand is modulo, in mathjs as here.
    ['10%(2)', 0],
    ['10% + 1', 0],
    ['50 % (2)', 0],
  ])('reads %s as a percentage or modulo as mathjs does: %d', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it.each([
    ['17', 17],
    ['007', 7],
    ['1.5', 1.5],
    ['.5', 0.5],
    ['5.', 5],
    ['1e3', 1000],
    ['1E3', 1000],
    ['1e+3', 1000],
    ['1e-3', 0.001],
    ['1.e3', 1000],
    ['2.5e-1', 0.25],
  ])('reads the number literal %s as %d', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it.each([
    ['abs(-3)', 3],
    ['cbrt(-27)', -3],
    ['ceil(1.2)', 2],
    ['floor(-1.2)', -2],
    // Within rounding error of a whole number counts as that number: 4.35 * 100 is 434.99999999999994.
    ['floor(4.35 * 100)', 435],
    ['ceil(1.1 * 3 - 0.3)', 3],
    ['floor(-2.5e-23)', -0],
    ['floor(434.9999)', 434],
    ['cos(0)', 1],
    ['sin(pi)', 1.2246467991473532e-16],
    ['tan(pi/4)', 0.9999999999999999],
    ['exp(1)', Math.E],
    ['sqrt(16)', 4],
    ['log(e)', 1],
    ['log(8, 2)', 3],
    ['log(100, 10)', 2],
    ['max(1)', 1],
    ['max(1, 5, 3)', 5],
    ['min(4, -2, 3)', -2],
    ['min(1/0, 2)', 2],
    ['max(1,2)*3', 6],
    ['cos(pi)^2', 1],
  ])('evaluates the function call %s to %d', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it.each([
    ['round(2.5)', 3],
    ['round(-2.5)', -3],
    ['round(0.5)', 1],
    ['round(-0.5)', -1],
    ['round(-0.4)', -0],
    ['round(0.49999999999999994)', 0],
    ['round(1.5, 0)', 2],
    ['round(1.005, 2)', 1.01],
    ['round(-1.005, 2)', -1.01],
    ['round(1.45, 1)', 1.5],
    ['round(99.995, 2)', 100],
    ['round(2, 15)', 2],
    ['round(0.1+0.2, 15)', 0.3],
    ['round(123456789.123456789, 5)', 123456789.12346],
    ['round(45035996273704.965, 2)', 45035996273704.97],
    ['round(1.23e-7, 8)', 1.2e-7],
    ['round(-1e-7, 7)', -1e-7],
    ['round(-1e-7, 3)', -0],
    ['round(1e-20, 15)', 0],
    ['round(1e21)', 1e21],
    ['round(1e15+0.5)', 1000000000000001],
  ])('rounds %s half away from zero on the printed digits, as mathjs does: %d', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it.each([
    ['pi', Math.PI],
    ['e', Math.E],
    ['2*pi', 6.283185307179586],
    ['e^2', 7.3890560989306495],
  ])('knows the constant in %s', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it.each([
    ['  1 +  2\t* 3  ', 7],
    ['sqrt (16)', 4],
    ['max( 1 ,2 )', 2],
    ['(1\n+2)', 3],
    ['1\r\n+ 2', 3],
  ])('ignores whitespace, including newlines, in %j', (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
  });

  it('accepts an expression of exactly 1000 characters', () => {
    const expression = `${'1+'.repeat(499)}11`;
    expect(expression).toHaveLength(1000);
    expect(calculate(expression)).toBe(510);
  });

  it('evaluates the base of a percentage change once, so nested percentages stay fast', () => {
    // Sixty levels of `(… + 10%)`. Evaluating the base twice per level would take 2^60 steps.
    const expression = `${'('.repeat(60)}100${' + 10%)'.repeat(60)}`;
    let expected = 100;
    for (let i = 0; i < 60; i += 1) expected += expected * 0.1;
    expect(calculate(expression)).toBe(expected);
  });

  it('nests 100 levels deep', () => {
    expect(calculate(`${'('.repeat(100)}1${')'.repeat(100)}`)).toBe(1);
  });
});

describe('calculate refusals', () => {
  it.each([
    [
      '17*',
      'cannot parse "17*": at position 4 expected a number, a constant, a function call or "(", found the end of the expression',
    ],
    [
      '(1+2',
      'cannot parse "(1+2": at position 5 expected an operator or ")" to close the "(" from position 1, found the end of the expression',
    ],
    [
      '1+(2*3',
      'cannot parse "1+(2*3": at position 7 expected an operator or ")" to close the "(" from position 3, found the end of the expression',
    ],
    [
      'max(1, 2',
      'cannot parse "max(1, 2": at position 9 expected an operator, "," or ")" to close "max(" from position 1, found the end of the expression',
    ],
    [
      '1 2',
      'cannot parse "1 2": at position 3 expected an operator or the end of the expression, found "2" (implicit multiplication is not supported: write *)',
    ],
    [
      '2pi',
      'cannot parse "2pi": at position 2 expected an operator or the end of the expression, found "pi" (implicit multiplication is not supported: write *)',
    ],
    [
      '2(3+4)',
      'cannot parse "2(3+4)": at position 2 expected an operator or the end of the expression, found "(" (implicit multiplication is not supported: write *)',
    ],
    [
      '2**3',
      'cannot parse "2**3": at position 3 expected a number, a constant, a function call or "(", found "*" (write ^ for a power)',
    ],
    [
      '0x1F',
      'cannot parse "0x1F": at position 2 expected an operator or the end of the expression, found "x1F" (only decimal numbers are supported)',
    ],
    [
      '1+2)',
      'cannot parse "1+2)": at position 4 expected an operator or the end of the expression, found ")"',
    ],
    [
      'max(1,)',
      'cannot parse "max(1,)": at position 7 expected a number, a constant, a function call or "(", found ")"',
    ],
    [
      '1.2.3',
      'cannot parse "1.2.3": at position 4 expected an operator or the end of the expression, found ".3"',
    ],
    [
      '1 == 1',
      'cannot parse "1 == 1": at position 3 expected an operator or the end of the expression, found "=="',
    ],
    [
      '10%^2',
      'cannot parse "10%^2": at position 4 expected an operator or the end of the expression, found "^"',
    ],
    [
      '',
      'cannot parse "": at position 1 expected a number, a constant, a function call or "(", found the end of the expression',
    ],
  ])('says where %j stops parsing and what was expected', (expression, message) => {
    expect(errorOf(expression).message).toBe(message);
  });

  it.each([
    ['x = 3', 3],
    ['pi = 3', 4],
    ['sqrt(4) = 2', 9],
  ])('refuses the assignment %s', (expression, position) => {
    expect(errorOf(expression).message).toBe(
      `assignment is not allowed in a calculation ("=" at position ${position}); give only the expression`,
    );
  });

  it.each(['import({})', 'ln(2)', 'pi()', 'constructor(1)', '__proto__(1)', 'toString(1)'])(
    'refuses the unknown function in %s and lists the supported ones',
    (expression) => {
      const name = expression.slice(0, expression.indexOf('('));
      expect(errorOf(expression).message).toBe(
        `unknown function "${name}"; supported: abs, cbrt, ceil, cos, exp, floor, log, max, min, round, sin, sqrt, tan`,
      );
    },
  );

  it.each(['process', 'x', 'PI', 'E', 'Infinity', 'NaN', 'constructor', '__proto__'])(
    'refuses the unknown symbol %s and lists the constants',
    (expression) => {
      expect(errorOf(expression).message).toBe(`unknown symbol "${expression}"; supported constants: pi, e`);
    },
  );

  it('says how to call a function named without parentheses', () => {
    expect(errorOf('sqrt 16').message).toBe(
      'unknown symbol "sqrt"; supported constants: pi, e; sqrt is a function, write sqrt(…)',
    );
  });

  it.each([
    ['sqrt(1, 2)', 'sqrt() takes 1 argument, got 2'],
    ['sin()', 'sin() takes 1 argument, got 0'],
    ['floor(1.55, 1)', 'floor() takes 1 argument, got 2'],
    ['log()', 'log() takes 1 or 2 arguments, got 0'],
    ['log(1, 2, 3)', 'log() takes 1 or 2 arguments, got 3'],
    ['round(1, 2, 3)', 'round() takes 1 or 2 arguments, got 3'],
    ['max()', 'max() takes at least 1 argument, got 0'],
    ['min()', 'min() takes at least 1 argument, got 0'],
  ])('checks the argument count of %s', (expression, message) => {
    expect(errorOf(expression).message).toBe(message);
  });

  it.each([
    ['round(1.5, 16)', '16'],
    ['round(1.5, -1)', '-1'],
    ['round(1.5, 1.5)', '1.5'],
    ['round(1.5, 0/0)', 'NaN'],
  ])('refuses the decimals in %s', (expression, digits) => {
    expect(errorOf(expression).message).toBe(
      `cannot evaluate ${JSON.stringify(expression)}: round(x, n) needs n to be a whole number from 0 to 15, got ${digits}`,
    );
  });

  it.each([
    '1/0',
    '-1/0',
    '0/0',
    'sqrt(-1)',
    'log(0)',
    'log(-8)',
    'log(8, 1)',
    'log(8, 0)',
    'log(8, 0/0)',
    'exp(1000)',
    '1e400',
    'max(sqrt(-1), 1)',
  ])('refuses %s, which has no finite result', (expression) => {
    expect(errorOf(expression).message).toBe(`${JSON.stringify(expression)} has no finite numeric result`);
  });

  it('refuses expressions longer than 1000 characters', () => {
    expect(errorOf(`${'1+'.repeat(500)}1`).message).toBe('expression is longer than 1000 characters');
  });

  it.each([
    ['101 nested parentheses', `${'('.repeat(101)}1${')'.repeat(101)}`],
    ['101 nested function calls', `${'sqrt('.repeat(101)}1${')'.repeat(101)}`],
    ['101 signs', `${'-'.repeat(101)}1`],
    ['a tower of 101 powers', `${'2^'.repeat(101)}2`],
    ['999 open parentheses', `${'('.repeat(999)}1`],
  ])('refuses %s instead of exhausting the stack', (_, expression) => {
    expect(errorOf(expression).message).toBe('expression nests deeper than 100 levels');
  });

  it.each([
    ['−1', '−', 1],
    ['２', '２', 1],
    ['π', 'π', 1],
    ['2 × 3', '×', 3],
    ['6 ÷ 3', '÷', 3],
    ['1+😀', '😀', 3],
    ['$x', '$', 1],
    ['1 # note', '#', 3],
    ['1; 2', ';', 2],
    ['3!', '!', 2],
    ["2'", "'", 2],
    ['[1]', '[', 1],
    ['"a"', '"', 1],
    ['1 < 2', '<', 3],
    ['.', '.', 1],
    ['1\u00002', '\u0000', 2],
  ])('refuses %j, which holds a character outside arithmetic', (expression, character, position) => {
    expect(errorOf(expression).message).toBe(
      `cannot parse ${JSON.stringify(expression)}: unexpected character ${JSON.stringify(character)} at position ${position}`,
    );
  });

  it('reads a dotted name as a symbol and refuses it', () => {
    expect(errorOf('process.exit').message).toBe('unknown symbol "process"; supported constants: pi, e');
  });

  it('throws errors that a retry cannot fix', () => {
    expect(errorOf('17*').retriable).toBe(false);
  });
});
