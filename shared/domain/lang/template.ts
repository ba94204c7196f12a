/**
 * Templates for `llm_hints` `template` rules: the part of the Handlebars language that context views need,
 * parsed into a small AST and rendered by walking it. Replaces the `handlebars` package, which put ~107 KB
 * (with `source-map`) into every function bundle and compiled each template to JavaScript with `new Function`.
 * Here nothing is compiled or evaluated, lookups see own properties only, and output, work and nesting are
 * bounded, so a template written by one user cannot read prototypes or stall a Lambda on someone else's read.
 *
 * Supported, with Handlebars semantics (compared with handlebars 4.7 on generated templates and data by
 * test/unit/domain/lang/template.differential.test.ts, which also asserts each difference below):
 *   {{a.b}} {{a/b}} {{this}} {{.}} {{this.x}} {{./x}} {{../x}} {{[weird key]}} {{items.[0]}} {{items.0}}
 *   {{@root.x}} {{@index}} {{@key}} {{@first}} {{@last}} {{@../index}}      data variables
 *   {{{raw}}} {{&raw}}                                                       same as {{raw}}: nothing is escaped
 *   {{#if x}}…{{else if y}}…{{else}}…{{/if}}  {{#unless x}}  {{#if n includeZero=true}}
 *   {{#each list}}…{{else}}…{{/each}} over arrays and objects, {{#each list as |item key|}}
 *   {{#with obj}}…{{else}}…{{/with}}, {{#with obj as |o|}}
 *   {{#name}}…{{/name}} {{^name}}…{{/name}}                                  Mustache-style sections
 *   {{lookup obj key}} and sub-expressions: {{#each (lookup groups kind)}}
 *   {{! c }} {{!-- c --}}  {{~x~}}  standalone block lines  \{{literal}}
 *   literals: "s" 's' 12 -1.5 true false null undefined
 *
 * Deliberate differences from Handlebars:
 * - Crumbs additions: {{json value}} (JSON.stringify; strings come out quoted) and {{join list ", "}}.
 * - A plain object renders as JSON, also inside an array, instead of "[object Object]": the output is read by
 *   models, for which JSON carries the data and "[object Object]" carries nothing. Arrays still render
 *   comma-joined (`[1,"a"]` → `1,a`) and null/undefined render as "".
 * - Adjacent values are concatenated as strings. Handlebars 4.7 with noEscape added adjacent numbers: a rule
 *   `{{a}}{{b}}` with a=1, b=2 answered "3" before this renderer; it answers "12" now.
 * - A name is a helper only when it has arguments: {{json}}, {{lookup}} or {{if}} alone read the field of that
 *   name (Handlebars would call the helper with no arguments).
 * - Refused when written, not met at read time: partials, partial blocks, decorators, raw blocks, custom or
 *   unknown helpers, block helpers used inline and inline helpers used as blocks, wrong argument counts,
 *   key=value arguments other than includeZero on #if/#unless, block parameters other than on #each/#with,
 *   unknown @variables, and path segments named __proto__, constructor or prototype.
 * - {{items.0}} works; Handlebars only accepts a numeric last segment in brackets ({{items.[0]}}).
 * - `this` stays null inside the blocks in the body of a null item. Handlebars called block helpers with an empty
 *   object in place of a null `this`, so in `{{#each list}}{{#if true}}{{#if this}}…` a null item was true.
 * - Own properties only, as Handlebars' default prototype-access rules, but silently and with no opt-out; the
 *   three names above never resolve, even as own keys (JSON.parse makes "__proto__" an own key), and #each
 *   skips them. #each iterates arrays and plain objects, not Maps, Sets or other iterables.
 * - Limits (TEMPLATE_LIMITS): output length, render steps and nesting depth; exceeding one is an error.
 */
import { TemplateRenderError, TemplateSyntaxError } from '../errors.ts';

export interface RenderLimits {
  readonly maxOutputLength: number;
  readonly maxSteps: number;
}

export const TEMPLATE_LIMITS: RenderLimits & { readonly maxNesting: number } = Object.freeze({
  /** Characters of output. A context is at most 350 KB, so a view beyond 1 MB is a template multiplying it. */
  maxOutputLength: 1_048_576,
  /**
   * Statements rendered plus loop iterations. Nested #each over large arrays can burn CPU while printing
   * nothing, which the output cap would not catch; 2M steps is far above any view of a 350 KB context.
   */
  maxSteps: 2_000_000,
  /** Blocks, else-if links and sub-expressions inside each other. Keeps parsing and rendering off the stack limit. */
  maxNesting: 100,
});

// ---------------------------------------------------------------------------------------------------------------
// AST

type LiteralValue = string | number | boolean | null | undefined;
type InlineHelper = 'lookup' | 'json' | 'join';
type BlockHelper = 'if' | 'unless' | 'each' | 'with' | 'section';

interface PathExpression {
  readonly kind: 'path';
  readonly data: boolean;
  /** Number of leading `../`. */
  readonly depth: number;
  readonly parts: readonly string[];
  /** The first part names a block parameter (`as |item|`) of an enclosing block. */
  readonly blockParam: boolean;
}
interface LiteralExpression {
  readonly kind: 'literal';
  readonly value: LiteralValue;
}
interface CallExpression {
  readonly kind: 'call';
  readonly helper: InlineHelper;
  readonly params: readonly Expression[];
}
type Expression = PathExpression | LiteralExpression | CallExpression;

interface Strip {
  readonly open: boolean;
  readonly close: boolean;
}
/** `value` is what renders; whitespace control trims it and remembers that it did. */
interface ContentStatement {
  readonly type: 'content';
  readonly original: string;
  value: string;
  leftStripped: boolean;
  rightStripped: boolean;
}
interface CommentStatement {
  readonly type: 'comment';
  readonly strip: Strip;
}
interface MustacheStatement {
  readonly type: 'mustache';
  readonly expression: Expression;
  readonly strip: Strip;
}
interface BlockStatement {
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
type Statement = ContentStatement | CommentStatement | MustacheStatement | BlockStatement;
interface Program {
  readonly body: Statement[];
  /** An `{{else if …}}` link: the program holds the one chained block. */
  readonly chained: boolean;
}

/** A parsed template; immutable once returned by `parseTemplate`, so one parse can serve many renders. */
export interface Template {
  readonly program: Program;
}

// ---------------------------------------------------------------------------------------------------------------
// Lexer: the rules and order of Handlebars' own lexer (handlebars.l), so that what parses there parses here.

type TokenType =
  | 'CONTENT'
  | 'COMMENT'
  | 'OPEN'
  | 'OPEN_UNESCAPED'
  | 'OPEN_BLOCK'
  | 'OPEN_INVERSE'
  | 'OPEN_INVERSE_CHAIN'
  | 'INVERSE'
  | 'OPEN_ENDBLOCK'
  | 'CLOSE'
  | 'CLOSE_UNESCAPED'
  | 'OPEN_SEXPR'
  | 'CLOSE_SEXPR'
  | 'EQUALS'
  | 'ID'
  | 'SEP'
  | 'DATA'
  | 'STRING'
  | 'NUMBER'
  | 'BOOLEAN'
  | 'NULL'
  | 'UNDEFINED'
  | 'OPEN_BLOCK_PARAMS'
  | 'CLOSE_BLOCK_PARAMS'
  | 'EOF';

interface Token {
  readonly type: TokenType;
  /** The source text of the token. */
  readonly text: string;
  /** Content with escapes removed, a string literal's value, or `text`. */
  readonly value: string;
  readonly start: number;
}

type MuRule = readonly [
  RegExp,
  TokenType | 'SKIP' | 'LONG_COMMENT' | 'UNCLOSED_COMMENT' | 'UNSUPPORTED' | 'INVALID',
];

// Characters Handlebars allows in a plain name, and what may follow one (the end too, so that `{{name` at the
// end of a template is reported as a missing "}}" rather than as a bad name).
const ID_CHARS = String.raw`[^\s!"#%-,\.\/;->@\[-\^\x60\{-~]`;
const ID = String.raw`${ID_CHARS}+(?=[=~}\s\/.)|]|$)`;
const ID_RUN = new RegExp(`${ID_CHARS}*`, 'y');
const LITERAL_END = String.raw`(?=[~}\s)])`;

const MU_RULES: readonly MuRule[] = [
  [/\(/y, 'OPEN_SEXPR'],
  [/\)/y, 'CLOSE_SEXPR'],
  [/\{\{\{\{/y, 'UNSUPPORTED'],
  [/\{\{~?>/y, 'UNSUPPORTED'],
  [/\{\{~?#>/y, 'UNSUPPORTED'],
  [/\{\{~?#\*/y, 'UNSUPPORTED'],
  [/\{\{~?#/y, 'OPEN_BLOCK'],
  [/\{\{~?\//y, 'OPEN_ENDBLOCK'],
  [/\{\{~?\^\s*~?\}\}/y, 'INVERSE'],
  [/\{\{~?\s*else\s*~?\}\}/y, 'INVERSE'],
  [/\{\{~?\^/y, 'OPEN_INVERSE'],
  [/\{\{~?\s*else\b/y, 'OPEN_INVERSE_CHAIN'],
  [/\{\{~?\{/y, 'OPEN_UNESCAPED'],
  [/\{\{~?&/y, 'OPEN'],
  [/\{\{~?!--/y, 'LONG_COMMENT'],
  [/\{\{~?![\s\S]*?\}\}/y, 'COMMENT'],
  [/\{\{~?!/y, 'UNCLOSED_COMMENT'],
  [/\{\{~?\*/y, 'UNSUPPORTED'],
  [/\{\{~?/y, 'OPEN'],
  [/=/y, 'EQUALS'],
  [/\.\./y, 'ID'],
  [/\.(?=[=~}\s/.)|])/y, 'ID'],
  [/[/.]/y, 'SEP'],
  [/\s+/y, 'SKIP'],
  [/\}~?\}\}/y, 'CLOSE_UNESCAPED'],
  [/~?\}\}/y, 'CLOSE'],
  [/"(?:\\"|[^"])*"/y, 'STRING'],
  [/'(?:\\'|[^'])*'/y, 'STRING'],
  [/@/y, 'DATA'],
  [new RegExp(`(?:true|false)${LITERAL_END}`, 'y'), 'BOOLEAN'],
  [new RegExp(`undefined${LITERAL_END}`, 'y'), 'UNDEFINED'],
  [new RegExp(`null${LITERAL_END}`, 'y'), 'NULL'],
  [new RegExp(`-?[0-9]+(?:\\.[0-9]+)?${LITERAL_END}`, 'y'), 'NUMBER'],
  [/as\s+\|/y, 'OPEN_BLOCK_PARAMS'],
  [/\|/y, 'CLOSE_BLOCK_PARAMS'],
  [new RegExp(ID, 'y'), 'ID'],
  [/\[(?:\\\]|[^\]])*\]/y, 'ID'],
  [/[\s\S]/y, 'INVALID'],
];

const UNSUPPORTED: readonly (readonly [RegExp, string])[] = [
  [/^\{\{\{\{/, 'raw blocks ({{{{raw}}}}) are not supported'],
  [/^\{\{~?>/, 'partials ({{> name}}) are not supported'],
  [/^\{\{~?#>/, 'partial blocks ({{#> name}}) are not supported'],
  [/^\{\{~?#?\*/, 'decorators ({{* name}}) are not supported'],
];

// Text after `\{{` is literal up to the next mustache (at least the two braces).
const ESCAPED_CONTENT = /[\s\S]{2,}?(?=\{\{|\\\{\{|\\\\\{\{|$)/y;
const LONG_COMMENT = /[\s\S]*?--~?\}\}/y;

class Lexer {
  private pos = 0;
  private mode: 'text' | 'mustache' | 'escaped' = 'text';
  private readonly queue: Token[] = [];

  constructor(readonly source: string) {}

  peek(ahead = 0): Token {
    while (this.queue.length <= ahead) this.queue.push(this.lex());
    return this.queue[ahead] as Token;
  }

  next(): Token {
    const token = this.peek();
    this.queue.shift();
    return token;
  }

  fail(detail: string, offset: number): TemplateSyntaxError {
    return syntaxError(this.source, detail, offset);
  }

  private lex(): Token {
    const { source } = this;
    for (;;) {
      const start = this.pos;
      if (this.mode === 'escaped') {
        ESCAPED_CONTENT.lastIndex = start;
        const match = ESCAPED_CONTENT.exec(source);
        const text = match ? match[0] : source.slice(start);
        this.pos = start + text.length;
        this.mode = 'text';
        return { type: 'CONTENT', text, value: text, start };
      }
      if (this.mode === 'text') {
        if (start >= source.length) return { type: 'EOF', text: '', value: '', start };
        const open = source.indexOf('{{', start);
        if (open < 0) {
          this.pos = source.length;
          const text = source.slice(start);
          return { type: 'CONTENT', text, value: text, start };
        }
        let value = source.slice(start, open);
        // `\\{{` prints one backslash before a live mustache; `\{{` makes the mustache literal text.
        if (value.endsWith('\\\\')) {
          value = value.slice(0, -1);
          this.mode = 'mustache';
        } else if (value.endsWith('\\')) {
          value = value.slice(0, -1);
          this.mode = 'escaped';
        } else {
          this.mode = 'mustache';
        }
        this.pos = open;
        if (value) return { type: 'CONTENT', text: source.slice(start, open), value, start };
        continue;
      }
      if (start >= source.length) return { type: 'EOF', text: '', value: '', start };
      const [text, type] = this.matchMustacheRule(start);
      this.pos = start + text.length;
      switch (type) {
        case 'SKIP':
          continue;
        case 'INVALID': {
          // A name followed by a character that may not follow one: point at that character.
          ID_RUN.lastIndex = start;
          const at = start + (ID_RUN.exec(source)?.[0].length ?? 0);
          throw this.fail(`unexpected ${JSON.stringify(source.charAt(at))} inside a mustache`, at);
        }
        case 'UNSUPPORTED': {
          const reason = UNSUPPORTED.find(([pattern]) => pattern.test(text))?.[1] ?? 'unsupported syntax';
          throw this.fail(reason, start);
        }
        case 'UNCLOSED_COMMENT':
          throw this.fail('comment is never closed: expected "}}"', start);
        case 'LONG_COMMENT': {
          LONG_COMMENT.lastIndex = start;
          const comment = LONG_COMMENT.exec(source);
          if (!comment) throw this.fail('comment is never closed: expected "--}}"', start);
          this.pos = start + comment[0].length;
          this.mode = 'text';
          return { type: 'COMMENT', text: comment[0], value: comment[0], start };
        }
        case 'COMMENT':
        case 'INVERSE':
        case 'CLOSE':
        case 'CLOSE_UNESCAPED':
          this.mode = 'text';
          return { type, text, value: text, start };
        case 'STRING':
          return {
            type,
            text,
            value: text.slice(1, -1).replaceAll(`\\${text[0]}`, text[0] as string),
            start,
          };
        case 'ID':
          // `[...]` names anything; Handlebars unescapes `\]` and `\\` inside.
          return { type, text, value: text.replace(/\\([\\\]])/g, '$1'), start };
        default:
          return { type, text, value: text, start };
      }
    }
  }

  private matchMustacheRule(start: number): readonly [string, MuRule[1]] {
    for (const [pattern, type] of MU_RULES) {
      pattern.lastIndex = start;
      const match = pattern.exec(this.source);
      if (match) return [match[0], type];
    }
    // The last rule matches any character, and `start` is inside the source.
    throw this.fail('unexpected end of template', start);
  }
}

function positionAt(source: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = source.indexOf('\n'); i >= 0 && i < offset; i = source.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

function syntaxError(source: string, detail: string, offset: number): TemplateSyntaxError {
  const { line, column } = positionAt(source, offset);
  return new TemplateSyntaxError(detail, line, column);
}

// ---------------------------------------------------------------------------------------------------------------
// Parser: recursive descent over Handlebars' grammar (handlebars.yy), building the same block structure so that
// whitespace control below can follow Handlebars' WhitespaceControl step by step.

const INLINE_ARITY: Readonly<Record<InlineHelper, number>> = { lookup: 2, json: 1, join: 2 };
const BLOCK_HELPERS = new Set(['if', 'unless', 'each', 'with']);
const DATA_VARIABLES = new Set(['root', 'index', 'key', 'first', 'last']);
/** Names that reach prototypes and constructors: never looked up, even when they are own keys. */
const BLOCKED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
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

// ---------------------------------------------------------------------------------------------------------------
// Renderer

interface ContextFrame {
  readonly value: unknown;
  readonly parent: ContextFrame | undefined;
}
interface DataFrame {
  readonly root: unknown;
  readonly index?: number;
  readonly key?: string | number;
  readonly first?: boolean;
  readonly last?: boolean;
  readonly parent?: DataFrame;
}
interface ParamFrame {
  readonly names: readonly string[];
  readonly values: readonly unknown[];
  readonly parent: ParamFrame | undefined;
}
interface Scope {
  readonly context: ContextFrame;
  readonly data: DataFrame;
  readonly params: ParamFrame | undefined;
}

/**
 * Renders a parsed template (or parses `template` first) against `data`. Throws `TemplateSyntaxError` for a
 * source that does not parse and `TemplateRenderError` when a limit is exceeded.
 */
export function renderTemplate(
  template: Template | string,
  data: unknown,
  limits: Partial<RenderLimits> = {},
): string {
  const parsed = typeof template === 'string' ? parseTemplate(template) : template;
  const renderer = new Renderer({ ...TEMPLATE_LIMITS, ...limits });
  renderer.program(parsed.program, {
    context: { value: data, parent: undefined },
    data: { root: data },
    params: undefined,
  });
  return renderer.output();
}

class Renderer {
  private readonly chunks: string[] = [];
  private length = 0;
  private steps = 0;

  constructor(private readonly limits: RenderLimits) {}

  output(): string {
    return this.chunks.join('');
  }

  program(program: Program, scope: Scope): void {
    for (const statement of program.body) {
      this.step();
      switch (statement.type) {
        case 'content':
          this.append(statement.value);
          break;
        case 'comment':
          break;
        case 'mustache':
          this.append(show(this.evaluate(statement.expression, scope)));
          break;
        case 'block':
          this.block(statement, scope);
          break;
      }
    }
  }

  private block(block: BlockStatement, scope: Scope): void {
    const [param] = block.params;
    switch (block.helper) {
      case 'if':
      case 'unless': {
        const value = this.evaluate(param as Expression, scope);
        const includeZero = block.includeZero && this.evaluate(block.includeZero, scope);
        const truthy = !((!includeZero && !value) || isEmpty(value));
        this.call(
          truthy === (block.helper === 'if') ? block.program : block.inverse,
          scope.context.value,
          scope,
        );
        return;
      }
      case 'with': {
        const value = this.evaluate(param as Expression, scope);
        if (isEmpty(value)) this.call(block.inverse, scope.context.value, scope);
        else this.call(block.program, value, scope, scope.data, [value], block.blockParams);
        return;
      }
      case 'each':
        this.each(block, this.evaluate(param as Expression, scope), scope);
        return;
      case 'section':
        this.section(block, scope);
        return;
    }
  }

  /** Handlebars' blockHelperMissing: `{{#name}}` on a value that is not a helper. */
  private section(block: BlockStatement, scope: Scope): void {
    const value = this.evaluate(block.params[0] as Expression, scope);
    if (value === true) this.call(block.program, scope.context.value, scope);
    else if (value === false || value === null || value === undefined) {
      this.call(block.inverse, scope.context.value, scope);
    } else if (Array.isArray(value)) this.each(block, value, scope);
    else this.call(block.program, value, scope);
  }

  private each(block: BlockStatement, value: unknown, scope: Scope): void {
    let count = 0;
    if (Array.isArray(value)) {
      count = value.length;
      for (let index = 0; index < count; index++) {
        this.iterate(block, scope, value[index], index, index, index === count - 1);
      }
    } else if (value !== null && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).filter((key) => !BLOCKED_NAMES.has(key));
      count = keys.length;
      for (let index = 0; index < count; index++) {
        const key = keys[index] as string;
        this.iterate(block, scope, record[key], key, index, index === count - 1);
      }
    }
    if (count === 0) this.call(block.inverse, scope.context.value, scope);
  }

  private iterate(
    block: BlockStatement,
    scope: Scope,
    item: unknown,
    key: string | number,
    index: number,
    last: boolean,
  ): void {
    this.step();
    // Every frame has the same shape (no spread): this runs once per item of every loop.
    const data: DataFrame = {
      root: scope.data.root,
      key,
      index,
      first: index === 0,
      last,
      parent: scope.data,
    };
    this.call(block.program, item, scope, data, [item, key], block.blockParams);
  }

  /** Runs a block's program with a new `this`; `../` reaches the previous one only if `this` changed. */
  private call(
    program: Program | undefined,
    context: unknown,
    scope: Scope,
    data: DataFrame = scope.data,
    values: readonly unknown[] = [],
    names: readonly string[] = [],
  ): void {
    if (!program) return;
    const current = scope.context.value;
    const same = context === current || (context == null && current == null);
    this.program(program, {
      context: same ? scope.context : { value: context, parent: scope.context },
      data,
      params: names.length > 0 ? { names, values, parent: scope.params } : scope.params,
    });
  }

  private evaluate(expression: Expression, scope: Scope): unknown {
    switch (expression.kind) {
      case 'literal':
        return expression.value;
      case 'path':
        return resolvePath(expression, scope);
      case 'call': {
        const args = expression.params.map((param) => this.evaluate(param, scope));
        return callHelper(expression.helper, args);
      }
    }
  }

  private append(text: string): void {
    if (!text) return;
    this.length += text.length;
    if (this.length > this.limits.maxOutputLength) {
      throw new TemplateRenderError(`template output exceeds ${this.limits.maxOutputLength} characters`);
    }
    this.chunks.push(text);
  }

  private step(): void {
    if (++this.steps > this.limits.maxSteps) {
      throw new TemplateRenderError(`template rendering exceeds ${this.limits.maxSteps} steps`);
    }
  }
}

function resolvePath(path: PathExpression, scope: Scope): unknown {
  const { parts } = path;
  let value: unknown;
  let start = 1;
  if (path.data) {
    let frame: DataFrame | undefined = scope.data;
    for (let i = 0; i < path.depth && frame; i++) frame = frame.parent;
    value = frame ? dataVariable(frame, parts[0] as string) : undefined;
  } else if (path.blockParam) {
    value = blockParam(scope.params, parts[0] as string);
  } else {
    let frame: ContextFrame | undefined = scope.context;
    for (let i = 0; i < path.depth && frame; i++) frame = frame.parent;
    value = frame?.value;
    start = 0;
  }
  for (let i = start; i < parts.length; i++) {
    // Handlebars walks a data path (`@root.a.b`) with `&&`: a falsy value on the way (0, "", false) is the
    // result itself, where a context path (`a.b`) gives nothing.
    value = path.data && !value ? value : property(value, parts[i] as string);
  }
  return value;
}

function dataVariable(frame: DataFrame, name: string): unknown {
  switch (name) {
    case 'root':
      return frame.root;
    case 'index':
      return frame.index;
    case 'key':
      return frame.key;
    case 'first':
      return frame.first;
    case 'last':
      return frame.last;
    default:
      return undefined;
  }
}

function blockParam(frame: ParamFrame | undefined, name: string): unknown {
  for (let f = frame; f; f = f.parent) {
    const index = f.names.indexOf(name);
    if (index >= 0) return f.values[index];
  }
  return undefined;
}

/** Own properties only: what JSON put there, never what a prototype provides. */
function property(target: unknown, key: string): unknown {
  if (target === null || target === undefined || BLOCKED_NAMES.has(key)) return undefined;
  if (typeof target !== 'object' && typeof target !== 'string') return undefined;
  const object = Object(target) as Record<string, unknown>;
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

function callHelper(helper: InlineHelper, args: readonly unknown[]): unknown {
  const [first, second] = args;
  switch (helper) {
    case 'lookup':
      // Handlebars returns a falsy target itself (`{{lookup 0 "x"}}` prints 0).
      if (!first) return first;
      return property(first, propertyKey(second));
    case 'json':
      return JSON.stringify(first) ?? '';
    case 'join':
      return Array.isArray(first) ? first.map(show).join(show(second)) : show(first);
  }
}

/**
 * The property name JavaScript makes of a `lookup` key, as Handlebars used it: `[0]` is "0", null is "null".
 * Written out rather than `String(key)`, which would call a `toString` that a JSON object may hold as data.
 */
function propertyKey(key: unknown): string {
  if (Array.isArray(key)) return key.map((item) => (item == null ? '' : propertyKey(item))).join(',');
  if (key !== null && typeof key === 'object') return '[object Object]';
  return String(key);
}

/** Handlebars' isEmpty: what #with and #each treat as nothing. */
function isEmpty(value: unknown): boolean {
  return (!value && value !== 0) || (Array.isArray(value) && value.length === 0);
}

/** How a value prints: as Handlebars (strings as is, arrays comma-joined, null as ""), but objects as JSON. */
function show(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(show).join(',');
  if (typeof value === 'object') return JSON.stringify(value) ?? '';
  if (typeof value === 'function' || typeof value === 'symbol') return '';
  return String(value);
}
