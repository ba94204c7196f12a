/**
 * The template lexer: the rules and order of Handlebars' own lexer (handlebars.l), so that what parses there parses
 * here; errors carry the line and column of the offending character.
 */
import { TemplateSyntaxError } from '../../errors.ts';

export type TokenType =
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

export interface Token {
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

export class Lexer {
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

export function positionAt(source: string, offset: number): { line: number; column: number } {
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
