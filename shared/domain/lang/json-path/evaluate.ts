/**
 * JSONPath evaluation: walks a parsed query over a document and answers the selected values in document order.
 * Only own enumerable members are ever selected, and every node visited, value compared or pattern state stepped
 * is charged to the evaluation's step budget (JSONPATH_LIMITS.maxSteps); deep documents are walked with stacks.
 */
import { JsonPathLimitError } from '../../errors.ts';
import { regexProgram, runRegex } from './i-regexp.ts';
import { JSONPATH_LIMITS } from './limits.ts';
import type { Call, LogicalExpression, Operand, Query, Selector, SliceSelector } from './parse.ts';

/** The RFC's "Nothing": what a singular query answers when it selects no node, distinct from null. */
const NOTHING: unique symbol = Symbol('Nothing');

interface Evaluation {
  readonly root: unknown;
  steps: number;
}

function charge(evaluation: Evaluation, steps: number): void {
  evaluation.steps += steps;
  if (evaluation.steps > JSONPATH_LIMITS.maxSteps) {
    throw new JsonPathLimitError(
      `JSONPath query needs more than ${JSONPATH_LIMITS.maxSteps} steps (nodes visited, values compared)`,
    );
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Own enumerable members only: nothing on a prototype is ever selected.
const childrenOf = (value: unknown): readonly unknown[] =>
  Array.isArray(value) ? value : isObject(value) ? Object.values(value) : [];

export function nodesOf(query: Query, current: unknown, evaluation: Evaluation): unknown[] {
  let nodes = [query.root ? evaluation.root : current];
  for (const segment of query.segments) {
    const next: unknown[] = [];
    for (const node of nodes) {
      if (!segment.descendant) {
        select(segment.selectors, node, next, evaluation);
        continue;
      }
      // Descendants in document order, the node before its children; a stack, not recursion, so a deeply
      // nested document cannot overflow the call stack.
      const pending = [node];
      while (pending.length > 0) {
        const visited = pending.pop();
        charge(evaluation, 1);
        select(segment.selectors, visited, next, evaluation);
        const children = childrenOf(visited);
        for (let i = children.length - 1; i >= 0; i--) pending.push(children[i]);
      }
    }
    nodes = next;
  }
  return nodes;
}

function select(selectors: readonly Selector[], node: unknown, out: unknown[], evaluation: Evaluation): void {
  const emit = (value: unknown): void => {
    charge(evaluation, 1);
    out.push(value);
  };
  for (const selector of selectors) {
    switch (selector.kind) {
      case 'name':
        if (isObject(node) && Object.hasOwn(node, selector.name)) emit(node[selector.name]);
        break;
      case 'wildcard':
        for (const child of childrenOf(node)) emit(child);
        break;
      case 'index':
        if (Array.isArray(node)) {
          const i = selector.index < 0 ? node.length + selector.index : selector.index;
          if (i >= 0 && i < node.length) emit(node[i]);
        }
        break;
      case 'slice':
        if (Array.isArray(node)) slice(node, selector, emit);
        break;
      case 'filter':
        for (const child of childrenOf(node)) if (test(selector.test, child, evaluation)) emit(child);
        break;
    }
  }
}

// RFC 9535 2.3.4.2.2: bounds are normalized and clamped so that any step walks only inside the array.
function slice(array: readonly unknown[], selector: SliceSelector, emit: (value: unknown) => void): void {
  const length = array.length;
  const step = selector.step ?? 1;
  const normalize = (i: number): number => (i >= 0 ? i : length + i);
  if (step > 0) {
    const lower = Math.min(Math.max(normalize(selector.start ?? 0), 0), length);
    const upper = Math.min(Math.max(normalize(selector.end ?? length), 0), length);
    for (let i = lower; i < upper; i += step) emit(array[i]);
  } else if (step < 0) {
    const upper = Math.min(Math.max(normalize(selector.start ?? length - 1), -1), length - 1);
    const lower = Math.min(Math.max(normalize(selector.end ?? -length - 1), -1), length - 1);
    for (let i = upper; lower < i; i += step) emit(array[i]);
  }
}

function test(expression: LogicalExpression, current: unknown, evaluation: Evaluation): boolean {
  switch (expression.kind) {
    case 'or':
      return expression.items.some((item) => test(item, current, evaluation));
    case 'and':
      return expression.items.every((item) => test(item, current, evaluation));
    case 'not':
      return !test(expression.expression, current, evaluation);
    case 'exists':
      return nodesOf(expression.query, current, evaluation).length > 0;
    case 'test':
      return evaluate(expression.call, current, evaluation) === true;
    case 'compare': {
      const a = operandValue(expression.left, current, evaluation);
      const b = operandValue(expression.right, current, evaluation);
      switch (expression.op) {
        case '==':
          return equal(a, b, evaluation);
        case '!=':
          return !equal(a, b, evaluation);
        case '<':
          return less(a, b, evaluation);
        case '>':
          return less(b, a, evaluation);
        case '<=':
          return less(a, b, evaluation) || equal(a, b, evaluation);
        case '>=':
          return less(b, a, evaluation) || equal(a, b, evaluation);
      }
    }
  }
}

/** A value-typed operand: the value, or NOTHING when a query selects no node or a function has no answer. */
function operandValue(operand: Operand | undefined, current: unknown, evaluation: Evaluation): unknown {
  if (operand === undefined) return NOTHING;
  if (operand.kind === 'literal') return operand.value;
  if (operand.kind === 'call') return evaluate(operand.call, current, evaluation);
  const nodes = nodesOf(operand.query, current, evaluation);
  return nodes.length === 1 ? nodes[0] : NOTHING;
}

function nodesArgument(operand: Operand | undefined, current: unknown, evaluation: Evaluation): unknown[] {
  return operand?.kind === 'query' ? nodesOf(operand.query, current, evaluation) : [];
}

function evaluate(call: Call, current: unknown, evaluation: Evaluation): unknown {
  const [first, second] = call.args;
  switch (call.name) {
    case 'count':
      return nodesArgument(first, current, evaluation).length;
    case 'value': {
      const nodes = nodesArgument(first, current, evaluation);
      return nodes.length === 1 ? nodes[0] : NOTHING;
    }
    case 'length': {
      const value = operandValue(first, current, evaluation);
      if (typeof value === 'string') {
        charge(evaluation, value.length >> 6);
        return codePointLength(value);
      }
      if (Array.isArray(value)) return value.length;
      return isObject(value) ? Object.keys(value).length : NOTHING;
    }
    case 'match':
    case 'search': {
      const text = operandValue(first, current, evaluation);
      const pattern = operandValue(second, current, evaluation);
      if (typeof text !== 'string' || typeof pattern !== 'string') return false;
      const program = regexProgram(pattern);
      return (
        typeof program !== 'string' &&
        runRegex(program, text, call.name === 'match', (steps) => charge(evaluation, steps))
      );
    }
  }
}

function codePointLength(value: string): number {
  let length = value.length;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    const next = value.charCodeAt(i + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      length--;
      i++;
    }
  }
  return length;
}

// RFC 9535 2.3.5.2.2: numbers by value, strings and literals as such, arrays element by element, objects member
// by member regardless of order; Nothing equals only Nothing. Iterative, so deep documents cannot overflow.
function equal(a: unknown, b: unknown, evaluation: Evaluation): boolean {
  const pending = [a, b];
  while (pending.length > 0) {
    const y = pending.pop();
    const x = pending.pop();
    charge(evaluation, 1);
    if (typeof x === 'string' && typeof y === 'string') charge(evaluation, Math.min(x.length, y.length) >> 6);
    if (x === y) continue;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pending.push(x[i], y[i]);
      continue;
    }
    if (!isObject(x) || !isObject(y)) return false;
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const key of keys) {
      if (!Object.hasOwn(y, key)) return false;
      pending.push(x[key], y[key]);
    }
  }
  return true;
}

// Only numbers and strings are ordered; strings by Unicode code point, which differs from JavaScript's UTF-16
// order when a surrogate pair (a code point above U+FFFF) meets a character in U+E000–U+FFFF.
function less(a: unknown, b: unknown, evaluation: Evaluation): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a < b;
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  charge(evaluation, 1 + (Math.min(a.length, b.length) >> 6));
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointOrder(x) < codePointOrder(y);
  }
  return a.length < b.length;
}

const codePointOrder = (unit: number): number =>
  unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;
