/**
 * `calculator`: evaluates an arithmetic expression with mathjs (numbers only), never `eval`. The mathjs instance
 * is built with `create()` from the few factories arithmetic needs, which keeps the bundle small and leaves out
 * everything that could reach beyond arithmetic (`import`, `createUnit`, matrices, `evaluate` with a shared scope).
 * The parsed tree is checked against an allow-list of node types, functions and constants before it runs.
 */
import {
  absDependencies,
  addDependencies,
  cbrtDependencies,
  cosDependencies,
  create,
  divideDependencies,
  eDependencies,
  expDependencies,
  type FactoryFunctionMap,
  logDependencies,
  type MathNode,
  maxDependencies,
  minDependencies,
  modDependencies,
  multiplyDependencies,
  parseDependencies,
  piDependencies,
  powDependencies,
  roundDependencies,
  sinDependencies,
  sqrtDependencies,
  subtractDependencies,
  tanDependencies,
  unaryMinusDependencies,
  unaryPlusDependencies,
} from 'mathjs/number';
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { Tool } from './tool.ts';

// mathjs types every `*Dependencies` export as possibly undefined; they are all defined in the number build.
const math = create({
  absDependencies,
  addDependencies,
  cbrtDependencies,
  cosDependencies,
  divideDependencies,
  eDependencies,
  expDependencies,
  logDependencies,
  maxDependencies,
  minDependencies,
  modDependencies,
  multiplyDependencies,
  parseDependencies,
  piDependencies,
  powDependencies,
  roundDependencies,
  sinDependencies,
  sqrtDependencies,
  subtractDependencies,
  tanDependencies,
  unaryMinusDependencies,
  unaryPlusDependencies,
} as FactoryFunctionMap);
// mathjs's floor and ceil factories pull in decimal.js (BigNumber support) even in the number build; plain numbers
// need only Math's.
math.import({ floor: Math.floor, ceil: Math.ceil }, { override: false });

const FUNCTIONS = new Set([
  'abs',
  'cbrt',
  'ceil',
  'cos',
  'exp',
  'floor',
  'log',
  'max',
  'min',
  'round',
  'sin',
  'sqrt',
  'tan',
]);
const CONSTANTS = new Set(['pi', 'e']);
const OPERATORS = new Set(['+', '-', '*', '/', '^', '%', 'mod']);
const NODE_TYPES = new Set(['ConstantNode', 'OperatorNode', 'ParenthesisNode', 'FunctionNode', 'SymbolNode']);
const MAX_EXPRESSION_LENGTH = 1000;

export interface CalculatorInput {
  expression: string;
}

export function calculate(expression: string): number {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new NonRetriableError(`expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  let tree: MathNode;
  try {
    tree = math.parse(expression);
  } catch (error) {
    throw new NonRetriableError(`cannot parse ${JSON.stringify(expression)}: ${(error as Error).message}`);
  }
  tree.traverse((node, _path, parent) => {
    if (!NODE_TYPES.has(node.type))
      throw new NonRetriableError(`${node.type} is not allowed in a calculation`);
    if (node.type === 'OperatorNode' && !OPERATORS.has((node as unknown as { op: string }).op)) {
      throw new NonRetriableError(`operator "${(node as unknown as { op: string }).op}" is not supported`);
    }
    if (node.type === 'SymbolNode') {
      const name = (node as unknown as { name: string }).name;
      const isCallee = parent?.type === 'FunctionNode' && (parent as unknown as { fn: MathNode }).fn === node;
      if (isCallee ? !FUNCTIONS.has(name) : !CONSTANTS.has(name)) {
        throw new NonRetriableError(
          isCallee
            ? `unknown function "${name}"; supported: ${[...FUNCTIONS].join(', ')}`
            : `unknown symbol "${name}"; supported constants: pi, e`,
        );
      }
    }
  });
  let result: unknown;
  try {
    result = tree.compile().evaluate({});
  } catch (error) {
    throw new NonRetriableError(`cannot evaluate ${JSON.stringify(expression)}: ${(error as Error).message}`);
  }
  if (typeof result !== 'number' || !Number.isFinite(result)) {
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
