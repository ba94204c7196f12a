/**
 * `calculator`: evaluates an arithmetic expression with a small parser of its own (recursive descent over the
 * grammar in `calculator.md`), never `eval` or `new Function`; mathjs, the library made for this, costs about
 * 150 KB in every bundle that registers the built-in tools. Results follow mathjs's number build (compared on
 * generated expressions by test/unit/tools/calculator.differential.test.ts): `-2^2` is -4, `%` is modulo with the
 * divisor's sign or, with no operand after it, a percentage. What it refuses or answers otherwise than mathjs, each
 * refusal an error an agent can act on, is listed in `calculator.md` beside this file.
 */
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { Tool } from './tool.ts';

const MAX_EXPRESSION_LENGTH = 1000;
/** Far deeper than any real calculation, and far too shallow to exhaust the stack (a few frames per level). */
const MAX_DEPTH = 100;

interface MathFunction {
  /** Fewest and most arguments. `max` and `min` take any number from one up. */
  readonly arity: readonly [min: number, max: number];
  readonly apply: (...args: number[]) => number;
}

const oneArgument = (apply: (x: number) => number): MathFunction => ({ arity: [1, 1], apply });

// Maps, not object literals: a name like `constructor` or `__proto__` must not find anything on a prototype.
const FUNCTIONS = new Map<string, MathFunction>([
  ['abs', oneArgument(Math.abs)],
  ['cbrt', oneArgument(Math.cbrt)],
  ['ceil', oneArgument(toNearInteger(Math.ceil))],
  ['cos', oneArgument(Math.cos)],
  ['exp', oneArgument(Math.exp)],
  ['floor', oneArgument(toNearInteger(Math.floor))],
  ['log', { arity: [1, 2], apply: logarithm }],
  ['max', { arity: [1, Number.POSITIVE_INFINITY], apply: Math.max }],
  ['min', { arity: [1, Number.POSITIVE_INFINITY], apply: Math.min }],
  ['round', { arity: [1, 2], apply: roundDecimals }],
  ['sin', oneArgument(Math.sin)],
  ['sqrt', oneArgument(Math.sqrt)],
  ['tan', oneArgument(Math.tan)],
]);
const CONSTANTS = new Map<string, number>([
  ['pi', Math.PI],
  ['e', Math.E],
]);

type BinaryOperator = '+' | '-' | '*' | '/' | '^' | 'mod';

const BINARY: Readonly<Record<BinaryOperator, (x: number, y: number) => number>> = {
  '+': (x, y) => x + y,
  '-': (x, y) => x - y,
  '*': (x, y) => x * y,
  '/': (x, y) => x / y,
  '^': Math.pow,
  // mathjs's modulo: the result has the sign of the divisor, unlike JavaScript's `%`. A zero divisor gives x.
  mod: (x, y) => (y === 0 ? x : x - y * Math.floor(x / y)),
};
const PRODUCT_OPERATORS = new Map<string, BinaryOperator>([
  ['*', '*'],
  ['/', '/'],
  ['%', 'mod'],
  ['mod', 'mod'],
]);

type Node =
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'negate'; readonly operand: Node }
  | { readonly kind: 'binary'; readonly operator: BinaryOperator; readonly left: Node; readonly right: Node }
  /** `x%`, which is x / 100. */
  | { readonly kind: 'percent'; readonly operand: Node }
  /**
   * `a + b%` or `a - b%`, which is a ± a * (b / 100). This is a node of its own so that `a` is evaluated once.
   * A parse tree that refers to `a` twice would take exponential time on `((100 + 1%) + 1%) + …`.
   */
  | {
      readonly kind: 'percent-change';
      readonly operator: '+' | '-';
      readonly base: Node;
      readonly percent: Node;
    }
  | { readonly kind: 'call'; readonly fn: MathFunction; readonly args: readonly Node[] };

interface Token {
  readonly type: 'number' | 'name' | 'symbol' | 'invalid' | 'end';
  readonly text: string;
  /** Index of the first character. Messages give it 1-based, as a position. */
  readonly at: number;
}

const WHITESPACE = /[ \t\r\n]+/y;
const TOKEN_PATTERNS: readonly (readonly [Token['type'], RegExp])[] = [
  // Number() reads every form this matches: `12`, `1.5`, `.5`, `5.`, `1e3`, `1.e-3`.
  ['number', /(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y],
  ['name', /[A-Za-z_][A-Za-z0-9_]*/y],
  ['symbol', /==|[-+*/^%(),=]/y],
];

export interface CalculatorInput {
  expression: string;
}

export function calculate(expression: string): number {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new NonRetriableError(`expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  const tree = new Parser(expression, tokenize(expression)).parse();
  let result: number;
  try {
    result = evaluate(tree);
  } catch (error) {
    // Only `round` throws here, a RangeError for decimals out of range. Anything else would be a bug: let it out.
    if (!(error instanceof RangeError)) throw error;
    throw new NonRetriableError(`cannot evaluate ${JSON.stringify(expression)}: ${error.message}`, {
      cause: error,
    });
  }
  if (!Number.isFinite(result)) {
    throw new NonRetriableError(`${JSON.stringify(expression)} has no finite numeric result`);
  }
  return result;
}

export const calculatorTool: Tool<CalculatorInput, { result: number }> = {
  name: 'calculator',
  description:
    'Evaluates an arithmetic expression: + - * / ^ % and parentheses, abs, sqrt, round, min, max, log, pi, e.',
  inputSchema: {
    type: 'object',
    properties: { expression: { type: 'string', minLength: 1, description: 'for example "17*23"' } },
    required: ['expression'],
  },
  async run(input) {
    return { result: calculate(input.expression) };
  },
};

/**
 * Splits the expression into tokens. A character outside the grammar becomes an `invalid` token that ends the list,
 * so the parser reports problems in reading order: `import({})` is an unknown function, not a stray `{`.
 */
function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < expression.length) {
    WHITESPACE.lastIndex = at;
    if (WHITESPACE.test(expression)) {
      at = WHITESPACE.lastIndex;
      continue;
    }
    const token = tokenAt(expression, at);
    tokens.push(token);
    if (token.type === 'invalid') break;
    at += token.text.length;
  }
  tokens.push({ type: 'end', text: '', at: expression.length });
  return tokens;
}

function tokenAt(expression: string, at: number): Token {
  for (const [type, pattern] of TOKEN_PATTERNS) {
    pattern.lastIndex = at;
    const text = pattern.exec(expression)?.[0];
    if (text !== undefined) return { type, text, at };
  }
  return { type: 'invalid', text: String.fromCodePoint(expression.codePointAt(at) ?? 0), at };
}

/** Recursive descent over the grammar at the top of this file. Names are checked as they are read. */
class Parser {
  private index = 0;
  private depth = 0;

  constructor(
    private readonly expression: string,
    private readonly tokens: readonly Token[],
  ) {}

  parse(): Node {
    const tree = this.sum();
    if (this.peek().type !== 'end') this.failAfterOperand('an operator or the end of the expression');
    return tree;
  }

  private sum(): Node {
    let left = this.product();
    while (this.isSymbol('+') || this.isSymbol('-')) {
      const operator = this.next().text === '+' ? '+' : '-';
      const right = this.product();
      left =
        right.kind === 'percent'
          ? { kind: 'percent-change', operator, base: left, percent: right }
          : { kind: 'binary', operator, left, right };
    }
    return left;
  }

  private product(): Node {
    let left = this.percent();
    for (let operator = this.productOperator(); operator; operator = this.productOperator()) {
      this.next();
      left = { kind: 'binary', operator, left, right: this.percent() };
    }
    return left;
  }

  private productOperator(): BinaryOperator | undefined {
    const token = this.peek();
    return token.type === 'symbol' || token.type === 'name' ? PRODUCT_OPERATORS.get(token.text) : undefined;
  }

  private percent(): Node {
    const operand = this.unary();
    // As in mathjs: `%` followed by something that can start an operand is modulo, left for `product`.
    if (this.isSymbol('%') && !startsOperand(this.peek(1))) {
      this.next();
      return { kind: 'percent', operand };
    }
    return operand;
  }

  private unary(): Node {
    // Every recursion (parentheses, arguments, signs, exponents) passes through here, so counting the unary calls
    // still open bounds the stack. The top level is depth 0, so 100 nested parentheses are allowed and 101 are not.
    if (this.depth > MAX_DEPTH) {
      throw new NonRetriableError(`expression nests deeper than ${MAX_DEPTH} levels`);
    }
    this.depth += 1;
    let node: Node;
    if (this.isSymbol('-')) {
      this.next();
      node = { kind: 'negate', operand: this.unary() };
    } else if (this.isSymbol('+')) {
      // Unary plus leaves a number as it is.
      this.next();
      node = this.unary();
    } else {
      node = this.power();
    }
    this.depth -= 1;
    return node;
  }

  private power(): Node {
    const base = this.primary();
    if (!this.isSymbol('^')) return base;
    this.next();
    // The exponent is a unary, so `2^-1` works and `2^3^2` is 2^(3^2).
    return { kind: 'binary', operator: '^', left: base, right: this.unary() };
  }

  private primary(): Node {
    const token = this.peek();
    if (token.type === 'number') {
      this.next();
      return { kind: 'number', value: Number(token.text) };
    }
    if (token.type === 'name') {
      this.next();
      return this.isSymbol('(') ? this.call(token) : this.constant(token);
    }
    if (this.isSymbol('(')) {
      this.next();
      const inner = this.sum();
      this.expect(')', `an operator or ")" to close the "(" from position ${token.at + 1}`);
      // A percentage in parentheses is a plain number. mathjs takes `a + b%` as a share of `a` only for a bare `b%`.
      return inner.kind === 'percent'
        ? { kind: 'binary', operator: '/', left: inner.operand, right: { kind: 'number', value: 100 } }
        : inner;
    }
    const hint =
      token.text === '*' && this.tokens[this.index - 1]?.text === '*' ? ' (write ^ for a power)' : '';
    throw this.syntaxError('a number, a constant, a function call or "("', token, hint);
  }

  private call(name: Token): Node {
    const fn = FUNCTIONS.get(name.text);
    if (fn === undefined) {
      throw new NonRetriableError(
        `unknown function ${JSON.stringify(name.text)}; supported: ${[...FUNCTIONS.keys()].join(', ')}`,
      );
    }
    this.next();
    const args: Node[] = [];
    if (!this.isSymbol(')')) {
      do args.push(this.sum());
      while (this.accept(','));
    }
    this.expect(')', `an operator, "," or ")" to close "${name.text}(" from position ${name.at + 1}`);
    const [min, max] = fn.arity;
    if (args.length < min || args.length > max) {
      throw new NonRetriableError(`${name.text}() takes ${describeArity(fn)}, got ${args.length}`);
    }
    return { kind: 'call', fn, args };
  }

  private constant(name: Token): Node {
    if (this.isSymbol('=')) this.failAssignment();
    const value = CONSTANTS.get(name.text);
    if (value === undefined) {
      const hint = FUNCTIONS.has(name.text) ? `; ${name.text} is a function, write ${name.text}(…)` : '';
      throw new NonRetriableError(
        `unknown symbol ${JSON.stringify(name.text)}; supported constants: ${[...CONSTANTS.keys()].join(', ')}${hint}`,
      );
    }
    return { kind: 'number', value };
  }

  private expect(symbol: string, expected: string): void {
    if (!this.accept(symbol)) this.failAfterOperand(expected);
  }

  /** Where an operand ended and the next token is not one the grammar allows there. */
  private failAfterOperand(expected: string): never {
    const token = this.peek();
    if (token.type === 'symbol' && token.text === '=') this.failAssignment();
    const previous = this.tokens[this.index - 1];
    const glued = previous !== undefined && previous.at + previous.text.length === token.at;
    let hint = '';
    if (glued && previous.text === '0' && token.type === 'name' && /^[box]/i.test(token.text)) {
      hint = ' (only decimal numbers are supported)';
    } else if (
      token.type === 'name' ||
      token.text === '(' ||
      (token.type === 'number' && !token.text.startsWith('.'))
    ) {
      hint = ' (implicit multiplication is not supported: write *)';
    }
    throw this.syntaxError(expected, token, hint);
  }

  private failAssignment(): never {
    throw new NonRetriableError(
      `assignment is not allowed in a calculation ("=" at position ${this.peek().at + 1}); give only the expression`,
    );
  }

  private syntaxError(expected: string, token: Token, hint: string): NonRetriableError {
    const source = JSON.stringify(this.expression);
    if (token.type === 'invalid') {
      return new NonRetriableError(
        `cannot parse ${source}: unexpected character ${JSON.stringify(token.text)} at position ${token.at + 1}`,
      );
    }
    const found = token.type === 'end' ? 'the end of the expression' : JSON.stringify(token.text);
    return new NonRetriableError(
      `cannot parse ${source}: at position ${token.at + 1} expected ${expected}, found ${found}${hint}`,
    );
  }

  private peek(ahead = 0): Token {
    // The last token is always `end`, so reading past it keeps answering `end`.
    return this.tokens[Math.min(this.index + ahead, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.index += 1;
    return token;
  }

  private isSymbol(symbol: string): boolean {
    const token = this.peek();
    return token.type === 'symbol' && token.text === symbol;
  }

  private accept(symbol: string): boolean {
    if (!this.isSymbol(symbol)) return false;
    this.next();
    return true;
  }
}

function startsOperand(token: Token): boolean {
  return (
    token.type === 'number' ||
    token.type === 'name' ||
    (token.type === 'symbol' && (token.text === '(' || token.text === '+' || token.text === '-'))
  );
}

function describeArity({ arity: [min, max] }: MathFunction): string {
  const noun = (n: number) => (n === 1 ? 'argument' : 'arguments');
  if (max === Number.POSITIVE_INFINITY) return `at least ${min} ${noun(min)}`;
  return min === max ? `${min} ${noun(min)}` : `${min} or ${max} ${noun(max)}`;
}

function evaluate(node: Node): number {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'negate':
      return -evaluate(node.operand);
    case 'binary':
      return BINARY[node.operator](evaluate(node.left), evaluate(node.right));
    case 'percent':
      return evaluate(node.operand) / 100;
    case 'percent-change': {
      const base = evaluate(node.base);
      const change = base * evaluate(node.percent);
      return node.operator === '+' ? base + change : base - change;
    }
    case 'call':
      return node.fn.apply(...node.args.map(evaluate));
  }
}

function logarithm(x: number, base?: number): number {
  if (base === undefined) return Math.log(x);
  // ln(x) / ln(0) would come out as ±0, a finite answer where no logarithm exists.
  return base === 0 ? Number.NaN : Math.log(x) / Math.log(base);
}

/** mathjs's default tolerances for taking two numbers as equal (its `relTol` and `absTol`). */
const RELATIVE_TOLERANCE = 1e-12;
const ABSOLUTE_TOLERANCE = 1e-15;

function nearlyEqual(a: number, b: number): boolean {
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  const largest = Math.max(Math.abs(a), Math.abs(b));
  return Math.abs(a - b) <= Math.max(RELATIVE_TOLERANCE * largest, ABSOLUTE_TOLERANCE);
}

/**
 * `floor` or `ceil` as mathjs computes them: when `value` is within rounding error of the nearest whole number and
 * not of the one `direction` gives, that nearest number. Decimal arithmetic in binary floating point lands just
 * beside whole numbers (4.35 * 100 is 434.99999999999994), and a calculator asked for floor(4.35 * 100) should say
 * 435, as the mathjs version did.
 */
function toNearInteger(direction: (value: number) => number): (value: number) => number {
  return (value) => {
    const toward = direction(value);
    const nearest = roundDecimals(value);
    if (toward === nearest) return toward;
    return nearlyEqual(value, nearest) && !nearlyEqual(value, toward) ? nearest : toward;
  };
}

/**
 * Rounds half away from zero at `digits` decimals of the shortest decimal form of `value`, which is what
 * `String(value)` prints. mathjs rounds this way, so `round(1.005, 2)` is 1.01, while
 * `Math.round(1.005 * 100) / 100` gives 1 because the double nearest to 1.005 lies just below it.
 */
function roundDecimals(value: number, digits = 0): number {
  if (!Number.isInteger(digits) || digits < 0 || digits > 15) {
    throw new RangeError(`round(x, n) needs n to be a whole number from 0 to 15, got ${digits}`);
  }
  if (!Number.isFinite(value)) return value;
  const [mantissa = '', exponent = '0'] = String(Math.abs(value)).split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const allDigits = whole + fraction;
  // Index in allDigits of the first digit that rounding drops.
  const cut = whole.length + Number(exponent) + digits;
  if (cut >= allDigits.length) return value;
  // BigInt because the kept digits can reach 16, beyond the integers a double holds exactly.
  const kept = BigInt(allDigits.slice(0, Math.max(cut, 0)) || '0');
  const rounded = (allDigits[cut] ?? '0') >= '5' ? kept + 1n : kept;
  // Math.sign keeps mathjs's -0 for negative values that round to zero.
  return Math.sign(value) * Number(`${rounded}e-${digits}`);
}
