/**
 * The template parser: recursive descent over Handlebars' grammar (handlebars.yy) into the AST, refusing what
 * crumbs does not run (partials, decorators, custom helpers, blocked names) when the template is written, then
 * Handlebars' whitespace control step by step, so multi-line templates render byte for byte as Handlebars.
 */
import type { TemplateSyntaxError } from '../../errors.ts';
import {
  BLOCKED_NAMES,
  type BlockHelper,
  type BlockStatement,
  type CallExpression,
  type Expression,
  type InlineHelper,
  type LiteralExpression,
  type LiteralValue,
  type MustacheStatement,
  type PathExpression,
  type Program,
  type Statement,
  type Strip,
  TEMPLATE_LIMITS,
  type Template,
} from './ast.ts';
import { Lexer, positionAt, type Token, type TokenType } from './lex.ts';

const INLINE_ARITY: Readonly<Record<InlineHelper, number>> = { lookup: 2, json: 1, join: 2 };
const BLOCK_HELPERS = new Set(['if', 'unless', 'each', 'with']);
const DATA_VARIABLES = new Set(['root', 'index', 'key', 'first', 'last']);
const PARAM_START = new Set<TokenType>([
  'ID',
  'DATA',
  'STRING',
  'NUMBER',
  'BOOLEAN',
  'NULL',
  'UNDEFINED',
  'OPEN_SEXPR',
]);

interface Head {
  readonly expression: PathExpression | LiteralExpression;
  /** As Handlebars spells it, to match `{{/name}}` and to name the helper in errors. */
  readonly original: string;
  readonly start: number;
}
interface Call {
  readonly head: Head;
  readonly params: Expression[];
  readonly hash: Map<string, Expression>;
  readonly blockParams: string[] | undefined;
  readonly blockParamsAt: number;
  readonly strip: Strip;
}
interface InverseChain {
  readonly strip: Strip;
  readonly program: Program;
  readonly chain: boolean;
}

function stripFlags(open: string, close: string): Strip {
  return { open: open.charAt(2) === '~', close: close.charAt(close.length - 3) === '~' };
}

function describe(token: Token): string {
  if (token.type === 'EOF') return 'end of template';
  return JSON.stringify(token.text.length > 20 ? `${token.text.slice(0, 20)}…` : token.text);
}

class Parser {
  private readonly lexer: Lexer;
  private nesting = 0;
  /** Block parameter names visible in the program being parsed, innermost last. */
  private readonly blockParamScopes: (readonly string[])[] = [];

  constructor(source: string) {
    this.lexer = new Lexer(source);
  }

  parse(): Program {
    const program = this.program();
    const token = this.lexer.peek();
    if (token.type === 'OPEN_ENDBLOCK') {
      const name = this.lexer.peek(1);
      throw this.lexer.fail(`{{/${name.text}}} closes a block that was never opened`, token.start);
    }
    if (token.type !== 'EOF') throw this.lexer.fail('{{else}} outside of a block', token.start);
    return program;
  }

  private program(): Program {
    const body: Statement[] = [];
    for (;;) {
      const token = this.lexer.peek();
      switch (token.type) {
        case 'CONTENT':
          this.lexer.next();
          body.push({
            type: 'content',
            original: token.value,
            value: token.value,
            leftStripped: false,
            rightStripped: false,
          });
          break;
        case 'COMMENT':
          this.lexer.next();
          body.push({ type: 'comment', strip: stripFlags(token.text, token.text) });
          break;
        case 'OPEN':
        case 'OPEN_UNESCAPED':
          body.push(this.mustache());
          break;
        case 'OPEN_BLOCK':
        case 'OPEN_INVERSE':
          body.push(this.block());
          break;
        default:
          return { body, chained: false };
      }
    }
  }

  private mustache(): MustacheStatement {
    const open = this.lexer.next();
    const call = this.call(open, open.type === 'OPEN_UNESCAPED' ? 'CLOSE_UNESCAPED' : 'CLOSE', false);
    return { type: 'mustache', expression: this.inlineExpression(call), strip: call.strip };
  }

  private block(): BlockStatement {
    const open = this.lexer.next();
    const inverted = open.type === 'OPEN_INVERSE';
    const call = this.call(open, 'CLOSE', true);
    this.enter(open.start);
    const helper = this.blockHelper(call, inverted);
    const program = this.blockProgram(call);
    const next = this.lexer.peek();
    const inverse =
      next.type === 'INVERSE' || (next.type === 'OPEN_INVERSE_CHAIN' && !inverted)
        ? this.inverseChain()
        : undefined;
    const close = this.closeBlock(call.head, inverted);
    this.nesting--;
    return prepareBlock(helper, call, program, inverse, close, inverted);
  }

  private inverseChain(): InverseChain {
    const token = this.lexer.next();
    if (token.type === 'INVERSE') {
      return { strip: stripFlags(token.text, token.text), program: this.program(), chain: false };
    }
    const call = this.call(token, 'CLOSE', true);
    this.enter(token.start);
    const helper = this.blockHelper(call, false);
    const program = this.blockProgram(call);
    const next = this.lexer.peek();
    const rest =
      next.type === 'INVERSE' || next.type === 'OPEN_INVERSE_CHAIN' ? this.inverseChain() : undefined;
    this.nesting--;
    // As Handlebars: a link's close strip is provisionally the strip of the link after it.
    const chained = prepareBlock(helper, call, program, rest, rest?.strip, false);
    return { strip: call.strip, program: { body: [chained], chained: true }, chain: true };
  }

  private blockProgram(call: Call): Program {
    if (call.blockParams) this.blockParamScopes.push(call.blockParams);
    const program = this.program();
    if (call.blockParams) this.blockParamScopes.pop();
    return program;
  }

  private closeBlock(head: Head, inverted: boolean): Strip {
    const opened = `{{${inverted ? '^' : '#'}${head.original}}}`;
    const open = this.lexer.next();
    if (open.type !== 'OPEN_ENDBLOCK') {
      const position = positionAt(this.lexer.source, head.start);
      throw this.lexer.fail(
        `expected {{/${head.original}}} to close ${opened} opened at ${position.line}:${position.column}, got ${describe(open)}`,
        open.start,
      );
    }
    const name = this.helperName();
    const close = this.expect('CLOSE', `"}}" after {{/${name.original}`);
    if (name.original !== head.original) {
      throw this.lexer.fail(`{{/${name.original}}} does not match ${opened}`, open.start);
    }
    return stripFlags(open.text, close.text);
  }

  /** `helperName param* hash? blockParams? CLOSE` after an opening token. */
  private call(open: Token, closeType: TokenType, block: boolean): Call {
    const { head, params, hash } = this.arguments();
    let blockParams: string[] | undefined;
    const blockParamsAt = this.lexer.peek().start;
    if (block && this.lexer.peek().type === 'OPEN_BLOCK_PARAMS') {
      this.lexer.next();
      blockParams = [];
      while (this.lexer.peek().type === 'ID') blockParams.push(unbracket(this.lexer.next().value));
      if (blockParams.length === 0) {
        throw this.unexpectedToken(this.lexer.next(), 'a block parameter name after "as |"');
      }
      this.expect('CLOSE_BLOCK_PARAMS', '"|" to end the block parameters');
    }
    const expected = closeType === 'CLOSE_UNESCAPED' ? '"}}}"' : '"}}"';
    const close = this.expect(
      closeType,
      `${PARAM_START.has(this.lexer.peek().type) ? 'key=value or ' : ''}${expected}`,
    );
    return { head, params, hash, blockParams, blockParamsAt, strip: stripFlags(open.text, close.text) };
  }

  /** `helperName param* hash?`: positional arguments first, then key=value pairs. */
  private arguments(): { head: Head; params: Expression[]; hash: Map<string, Expression> } {
    const head = this.helperName();
    const params: Expression[] = [];
    const hash = new Map<string, Expression>();
    for (;;) {
      const token = this.lexer.peek();
      if (token.type === 'ID' && this.lexer.peek(1).type === 'EQUALS') {
        this.lexer.next();
        this.lexer.next();
        hash.set(token.value, this.param());
      } else if (PARAM_START.has(token.type) && hash.size === 0) {
        params.push(this.param());
      } else {
        return { head, params, hash };
      }
    }
  }

  private param(): Expression {
    const token = this.lexer.peek();
    if (token.type !== 'OPEN_SEXPR') return this.helperName().expression;
    this.lexer.next();
    this.enter(token.start);
    const { head, params, hash } = this.arguments();
    this.expect('CLOSE_SEXPR', '")" to close the sub-expression');
    this.nesting--;
    return this.helperCall(head, params, hash);
  }

  /** A path, a data variable or a literal: `helperName` in the grammar. */
  private helperName(): Head {
    const token = this.lexer.next();
    switch (token.type) {
      case 'ID':
        return this.path(token, false);
      case 'DATA': {
        const first = this.lexer.next();
        if (first.type !== 'ID') throw this.unexpectedToken(first, 'a data variable name after "@"');
        return this.path(first, true);
      }
      case 'STRING':
        return literal(token.value, token.value, token.start);
      case 'NUMBER':
        return literal(Number(token.value), token.value, token.start);
      case 'BOOLEAN':
        return literal(token.value === 'true', token.value, token.start);
      case 'NULL':
        return literal(null, 'null', token.start);
      case 'UNDEFINED':
        return literal(undefined, 'undefined', token.start);
      default:
        throw this.unexpectedToken(token, 'a name, a path or a literal');
    }
  }

  private path(first: Token, data: boolean): Head {
    const segments = [{ part: unbracket(first.value), literal: first.text.startsWith('['), separator: '' }];
    while (this.lexer.peek().type === 'SEP') {
      const separator = this.lexer.next().text;
      const token = this.lexer.next();
      if (token.type === 'ID') {
        segments.push({ part: unbracket(token.value), literal: token.text.startsWith('['), separator });
      } else if (token.type === 'NUMBER' && /^[0-9.]+$/.test(token.text)) {
        // `items.0`: Handlebars lexes a trailing `0` as a number and refuses it; an index is what was meant.
        for (const part of token.text.split('.')) segments.push({ part, literal: true, separator });
      } else {
        throw this.unexpectedToken(token, `a name after "${separator}"`);
      }
    }
    let original = data ? '@' : '';
    let depth = 0;
    const parts: string[] = [];
    for (const { part, literal: isLiteral, separator } of segments) {
      original += separator + part;
      if (!isLiteral && (part === '..' || part === '.' || part === 'this')) {
        if (parts.length > 0) {
          throw this.lexer.fail(
            `invalid path "${original}": "this", "." and ".." may only start a path`,
            first.start,
          );
        }
        if (part === '..') depth++;
      } else {
        if (BLOCKED_NAMES.has(part)) {
          throw this.lexer.fail(`"${part}" cannot be read by a template (path "${original}")`, first.start);
        }
        parts.push(part);
      }
    }
    if (data && !DATA_VARIABLES.has(parts[0] ?? '')) {
      throw this.lexer.fail(
        `unknown data variable "${original}": expected @root, @index, @key, @first or @last`,
        first.start,
      );
    }
    const scoped = !segments[0]?.literal && /^(\.|\.\.|this)$/.test(segments[0]?.part ?? '');
    const name = parts[0];
    const blockParam =
      !data && !scoped && name !== undefined && this.blockParamScopes.some((scope) => scope.includes(name));
    return { expression: { kind: 'path', data, depth, parts, blockParam }, original, start: first.start };
  }

  private inlineExpression(call: Call): Expression {
    const { head } = call;
    if (call.blockParams)
      throw this.lexer.fail('block parameters need a block: {{#each … as |x|}}', head.start);
    if (call.params.length === 0 && call.hash.size === 0) return headValue(head);
    if (BLOCK_HELPERS.has(head.original)) {
      throw this.lexer.fail(
        `"${head.original}" is a block helper: write {{#${head.original} …}}…{{/${head.original}}}`,
        head.start,
      );
    }
    return this.helperCall(head, call.params, call.hash);
  }

  private helperCall(head: Head, params: Expression[], hash: Map<string, Expression>): CallExpression {
    const name = head.original;
    if (!Object.hasOwn(INLINE_ARITY, name) || head.expression.kind !== 'path') {
      throw this.lexer.fail(
        `unknown helper "${name}": the helpers are lookup, json and join, and the block helpers #if, #unless, #each and #with`,
        head.start,
      );
    }
    const helper = name as InlineHelper;
    if (hash.size > 0) throw this.hashNotSupported(head);
    const arity = INLINE_ARITY[helper];
    if (params.length !== arity) {
      throw this.lexer.fail(
        `${helper} expects ${arity} argument${arity === 1 ? '' : 's'}, got ${params.length}`,
        head.start,
      );
    }
    return { kind: 'call', helper, params };
  }

  private blockHelper(call: Call, inverted: boolean): BlockHelper {
    const { head } = call;
    const name = head.original;
    const isHelper = BLOCK_HELPERS.has(name) && head.expression.kind === 'path';
    if (!isHelper && call.params.length === 0 && call.hash.size === 0) {
      if (call.blockParams) {
        throw this.lexer.fail(
          'block parameters (as |…|) are only supported on #each and #with',
          call.blockParamsAt,
        );
      }
      return 'section';
    }
    if (!isHelper) {
      throw this.lexer.fail(
        Object.hasOwn(INLINE_ARITY, name)
          ? `"${name}" is not a block helper: write {{${name} …}}`
          : `unknown block helper "${name}": the block helpers are #if, #unless, #each and #with`,
        head.start,
      );
    }
    if (call.params.length !== 1) {
      throw this.lexer.fail(`#${name} expects 1 argument, got ${call.params.length}`, head.start);
    }
    for (const key of call.hash.keys()) {
      if (key !== 'includeZero' || (name !== 'if' && name !== 'unless')) {
        throw this.lexer.fail(
          `#${name} does not take ${key}=…${name === 'if' || name === 'unless' ? ' (only includeZero=)' : ''}`,
          head.start,
        );
      }
    }
    if (call.blockParams) {
      const max = name === 'each' ? 2 : name === 'with' ? 1 : 0;
      if (max === 0 || inverted) {
        throw this.lexer.fail(
          'block parameters (as |…|) are only supported on #each and #with',
          call.blockParamsAt,
        );
      }
      if (call.blockParams.length > max) {
        throw this.lexer.fail(
          `#${name} has ${max} block parameter${max === 1 ? '' : 's'}, got ${call.blockParams.length}`,
          call.blockParamsAt,
        );
      }
    }
    return name as BlockHelper;
  }

  private enter(offset: number): void {
    if (++this.nesting > TEMPLATE_LIMITS.maxNesting) {
      throw this.lexer.fail(
        `blocks and sub-expressions nest deeper than ${TEMPLATE_LIMITS.maxNesting} levels`,
        offset,
      );
    }
  }

  private expect(type: TokenType, what: string): Token {
    const token = this.lexer.next();
    if (token.type !== type) throw this.unexpectedToken(token, what);
    return token;
  }

  private unexpectedToken(token: Token, what: string): TemplateSyntaxError {
    return this.lexer.fail(`expected ${what}, got ${describe(token)}`, token.start);
  }

  private hashNotSupported(head: Head): TemplateSyntaxError {
    return this.lexer.fail(`${head.original} does not take key=value arguments`, head.start);
  }
}

function unbracket(name: string): string {
  return /^\[.*\]$/s.test(name) ? name.slice(1, -1) : name;
}

function literal(value: LiteralValue, original: string, start: number): Head {
  return { expression: { kind: 'literal', value }, original, start };
}

/** `{{"foo bar"}}`, `{{12}}` and `{{#"x"}}` read the field of that name, as in Handlebars. */
function headValue(head: Head): PathExpression {
  const { expression } = head;
  if (expression.kind === 'path') return expression;
  return { kind: 'path', data: false, depth: 0, parts: [String(expression.value)], blockParam: false };
}

/** Handlebars' prepareBlock: an inverted block (`{{^x}}`) swaps its program and its inverse. */
function prepareBlock(
  helper: BlockHelper,
  call: Call,
  program: Program,
  inverse: InverseChain | undefined,
  closeStrip: Strip | undefined,
  inverted: boolean,
): BlockStatement {
  if (inverse?.chain) (inverse.program.body[0] as BlockStatement).closeStrip = closeStrip;
  return {
    type: 'block',
    helper,
    // A section keeps the value it reads as its one parameter.
    params: helper === 'section' ? [headValue(call.head)] : call.params,
    includeZero: call.hash.get('includeZero'),
    blockParams: call.blockParams ?? [],
    program: inverted ? inverse?.program : program,
    inverse: inverted ? program : inverse?.program,
    openStrip: call.strip,
    inverseStrip: inverse?.strip,
    closeStrip,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Whitespace control: `~` trims, and a line holding only a block tag, {{else}} or a comment disappears with its
// newline. A direct port of Handlebars' compiler/whitespace-control.js, quirks included, so that multi-line
// templates written for Handlebars render byte for byte the same.

interface StripInfo {
  readonly open?: boolean | undefined;
  readonly close?: boolean | undefined;
  readonly openStandalone?: boolean;
  readonly closeStandalone?: boolean;
  readonly inlineStandalone?: boolean;
}

function controlWhitespace(program: Program, isRoot: boolean): void {
  const body = program.body;
  for (let i = 0; i < body.length; i++) {
    const current = body[i] as Statement;
    const strip = controlStatement(current);
    if (!strip) continue;
    const prevWhitespace = isPrevWhitespace(body, i, isRoot);
    const nextWhitespace = isNextWhitespace(body, i, isRoot);
    if (strip.close) omitRight(body, i, true);
    if (strip.open) omitLeft(body, i, true);
    if (strip.inlineStandalone && prevWhitespace && nextWhitespace) {
      omitRight(body, i);
      omitLeft(body, i);
    }
    if (current.type !== 'block') continue;
    if (strip.openStandalone && prevWhitespace) {
      omitRight(bodyOf(current.program ?? current.inverse));
      omitLeft(body, i);
    }
    if (strip.closeStandalone && nextWhitespace) {
      omitRight(body, i);
      omitLeft(bodyOf(current.inverse ?? current.program));
    }
  }
}

function controlStatement(statement: Statement): StripInfo | undefined {
  switch (statement.type) {
    case 'content':
      return undefined;
    case 'mustache':
      return statement.strip;
    case 'comment':
      return { inlineStandalone: true, open: statement.strip.open, close: statement.strip.close };
    case 'block':
      return controlBlock(statement);
  }
}

function controlBlock(block: BlockStatement): StripInfo {
  if (block.program) controlWhitespace(block.program, false);
  if (block.inverse) controlWhitespace(block.inverse, false);
  const program = (block.program ?? block.inverse) as Program;
  const inverse = block.program && block.inverse;
  let firstInverse = inverse;
  let lastInverse = inverse;
  if (inverse?.chained) {
    firstInverse = (inverse.body[0] as BlockStatement).program;
    while (lastInverse?.chained) lastInverse = (lastInverse.body.at(-1) as BlockStatement).program;
  }
  const strip: StripInfo = {
    open: block.openStrip.open,
    close: block.closeStrip?.close,
    openStandalone: isNextWhitespace(program.body),
    closeStandalone: isPrevWhitespace((firstInverse ?? program).body),
  };
  if (block.openStrip.close) omitRight(program.body, undefined, true);
  if (inverse) {
    if (block.inverseStrip?.open) omitLeft(program.body, undefined, true);
    if (block.inverseStrip?.close) omitRight(bodyOf(firstInverse), undefined, true);
    if (block.closeStrip?.open) omitLeft(bodyOf(lastInverse), undefined, true);
    // A standalone {{else}} line.
    if (isPrevWhitespace(program.body) && isNextWhitespace(bodyOf(firstInverse))) {
      omitLeft(program.body);
      omitRight(bodyOf(firstInverse));
    }
  } else if (block.closeStrip?.open) {
    omitLeft(program.body, undefined, true);
  }
  return strip;
}

function bodyOf(program: Program | undefined): Statement[] {
  return program?.body ?? [];
}

function isPrevWhitespace(body: readonly Statement[], index = body.length, isRoot = false): boolean {
  const prev = body[index - 1];
  if (!prev) return isRoot;
  if (prev.type !== 'content') return false;
  return (body[index - 2] || !isRoot ? /(?:^|\S)[^\S\n]*\n\s*$/ : /^\s*$|(?:^|\S)[^\S\n]*\n\s*$/).test(
    prev.original,
  );
}

function isNextWhitespace(body: readonly Statement[], index = -1, isRoot = false): boolean {
  const next = body[index + 1];
  if (!next) return isRoot;
  if (next.type !== 'content') return false;
  return (body[index + 2] || !isRoot ? /^\s*?\r?\n/ : /^\s*?(\r?\n|$)/).test(next.original);
}

function omitRight(body: Statement[], index?: number, multiple = false): void {
  const current = body[index === undefined ? 0 : index + 1];
  if (current?.type !== 'content' || (!multiple && current.rightStripped)) return;
  const original = current.value;
  current.value = current.value.replace(multiple ? /^\s+/ : /^[ \t]*\r?\n?/, '');
  current.rightStripped = current.value !== original;
}

function omitLeft(body: Statement[], index?: number, multiple = false): void {
  const current = body[index === undefined ? body.length - 1 : index - 1];
  if (current?.type !== 'content' || (!multiple && current.leftStripped)) return;
  const original = current.value;
  current.value = current.value.replace(multiple ? /(^|\S)\s+$/ : /(^|[^ \t])[ \t]+$/, '$1');
  current.leftStripped = current.value !== original;
}

/** Parses a template; throws `TemplateSyntaxError` with the position and what was expected there. */
export function parseTemplate(source: string): Template {
  const program = new Parser(source).parse();
  controlWhitespace(program, true);
  return { program };
}
