/**
 * The template AST both halves share, the bounds they keep (TEMPLATE_LIMITS) and the names that never resolve.
 */
export interface RenderLimits {
  readonly maxOutputLength: number;
  readonly maxSteps: number;
  /**
   * Steps shared by several renders (the templates of one read, `TEMPLATE_LIMITS.maxStepsPerRead`): each step is
   * charged here too, and a render that finds it spent stops with an error naming `budget.what`.
   */
  readonly budget?: StepBudget;
}

/** Steps left to several renders together; `spent` is set once one of them ran out of it. */
export interface StepBudget {
  left: number;
  spent: boolean;
  /** What the budget is, for the error: "the templates of one read (TEMPLATE_LIMITS.maxStepsPerRead)". */
  readonly what: string;
}

export const TEMPLATE_LIMITS: RenderLimits & {
  readonly maxNesting: number;
  readonly maxStepsPerRead: number;
} = Object.freeze({
  /** Characters of output. A context is at most 350 KB, so a view beyond 1 MB is a template multiplying it. */
  maxOutputLength: 1_048_576,
  /**
   * Statements rendered plus loop iterations. Nested #each over large arrays can burn CPU while printing
   * nothing, which the output cap would not catch; 2M steps is far above any view of a 350 KB context.
   */
  maxSteps: 2_000_000,
  /**
   * Steps of all the templates one read renders (a listing of 100 views, each with its templates): about half a
   * second of one core, so no read can be made to run for the length of a listing times a render.
   */
  maxStepsPerRead: 10_000_000,
  /** Blocks, else-if links and sub-expressions inside each other. Keeps parsing and rendering off the stack limit. */
  maxNesting: 100,
});

export type LiteralValue = string | number | boolean | null | undefined;
export type InlineHelper = 'lookup' | 'json' | 'join';
export type BlockHelper = 'if' | 'unless' | 'each' | 'with' | 'section';

export interface PathExpression {
  readonly kind: 'path';
  readonly data: boolean;
  /** Number of leading `../`. */
  readonly depth: number;
  readonly parts: readonly string[];
  /** The first part names a block parameter (`as |item|`) of an enclosing block. */
  readonly blockParam: boolean;
}
export interface LiteralExpression {
  readonly kind: 'literal';
  readonly value: LiteralValue;
}
export interface CallExpression {
  readonly kind: 'call';
  readonly helper: InlineHelper;
  readonly params: readonly Expression[];
}
export type Expression = PathExpression | LiteralExpression | CallExpression;

export interface Strip {
  readonly open: boolean;
  readonly close: boolean;
}
/** `value` is what renders; whitespace control trims it and remembers that it did. */
export interface ContentStatement {
  readonly type: 'content';
  readonly original: string;
  value: string;
  leftStripped: boolean;
  rightStripped: boolean;
}
export interface CommentStatement {
  readonly type: 'comment';
  readonly strip: Strip;
}
export interface MustacheStatement {
  readonly type: 'mustache';
  readonly expression: Expression;
  readonly strip: Strip;
}
export interface BlockStatement {
  readonly type: 'block';
  readonly helper: BlockHelper;
  readonly params: readonly Expression[];
  readonly includeZero: Expression | undefined;
  readonly blockParams: readonly string[];
  readonly program: Program | undefined;
  readonly inverse: Program | undefined;
  readonly openStrip: Strip;
  readonly inverseStrip: Strip | undefined;
  closeStrip: Strip | undefined;
}
export type Statement = ContentStatement | CommentStatement | MustacheStatement | BlockStatement;
export interface Program {
  readonly body: Statement[];
  /** An `{{else if …}}` link: the program holds the one chained block. */
  readonly chained: boolean;
}

/** A parsed template; immutable once returned by `parseTemplate`, so one parse can serve many renders. */
export interface Template {
  readonly program: Program;
}

/** Names that reach prototypes and constructors: never looked up, even when they are own keys. */
export const BLOCKED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
