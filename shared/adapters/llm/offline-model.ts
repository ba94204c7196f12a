/**
 * The OFFLINE model: a deterministic stand-in for an LLM, for the demo and tests. It makes no network call and
 * never pretends to be a real model (every answer says "offline"). It is a real AI SDK `LanguageModelV3`, so it
 * goes through the same `generateText` path, tool encoding and message conversion as Bedrock or OpenRouter.
 *
 * What it does, in order:
 * 1. The conversation ends with tool results → it answers from them: a calculator result as "17*23 = 391",
 *    anything else as "<tool>: <output>".
 * 2. The last user message contains arithmetic ("what is 17*23?") and a `calculator` tool is offered → it asks
 *    for the tool: `calculator({ expression: "17*23" })`.
 * 3. Otherwise it replies briefly, quoting the message and naming the context sections (`## <key>` headings of
 *    the system prompt) it received.
 * With a JSON response format (structured output) the reply is wrapped into an object that fills the schema's
 * required fields.
 */
import type { LanguageModel } from 'ai';

type LanguageModelV3 = Extract<LanguageModel, { specificationVersion: 'v3' }>;
type CallOptions = Parameters<LanguageModelV3['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<LanguageModelV3['doGenerate']>>;
type Prompt = CallOptions['prompt'];
type Content = GenerateResult['content'][number];

export const OFFLINE_PROVIDER = 'offline';

/** Arithmetic: numbers joined by at least one operator, parentheses allowed. */
const ARITHMETIC = /[(\d][\d\s.()]*(?:[-+*/^%×÷][\s(]*[\d.]+[\d\s.()]*)+/;

export function findArithmetic(text: string): string | undefined {
  const match = ARITHMETIC.exec(text);
  if (!match) return undefined;
  const expression = match[0].replace(/×/g, '*').replace(/÷/g, '/').trim();
  // Balance stray closing parentheses picked up at the end ("(what is 2+2)").
  let depth = 0;
  let out = '';
  for (const c of expression) {
    if (c === '(') depth++;
    if (c === ')') {
      if (depth === 0) continue;
      depth--;
    }
    out += c;
  }
  return /\d/.test(out) && /[-+*/^%]/.test(out) ? out.trim() : undefined;
}

export class OfflineLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly provider = OFFLINE_PROVIDER;
  readonly supportedUrls = {};

  constructor(readonly modelId: string = 'crumbs') {}

  async doGenerate(options: CallOptions): Promise<GenerateResult> {
    const content = this.answer(options);
    const text = content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    const inputChars = JSON.stringify(options.prompt).length;
    return {
      content,
      finishReason: {
        unified: content.some((c) => c.type === 'tool-call') ? 'tool-calls' : 'stop',
        raw: undefined,
      },
      usage: {
        inputTokens: {
          total: Math.ceil(inputChars / 4),
          noCache: undefined,
          cacheRead: undefined,
          cacheWrite: undefined,
        },
        outputTokens: { total: Math.ceil(text.length / 4), text: undefined, reasoning: undefined },
      },
      warnings: [],
    };
  }

  doStream(): PromiseLike<never> {
    return Promise.reject(new Error('the offline model does not stream; use generateText'));
  }

  private answer(options: CallOptions): Content[] {
    const { prompt } = options;
    const last = prompt[prompt.length - 1];
    let reply: string;
    if (last?.role === 'tool') {
      reply = answerFromToolResults(prompt, last.content);
    } else {
      const message = lastUserText(prompt);
      const expression = findArithmetic(message);
      const calculator = options.tools?.find((t) => t.type === 'function' && t.name === 'calculator');
      if (expression !== undefined && calculator !== undefined) {
        const round = prompt.filter((m) => m.role === 'assistant').length + 1;
        return [
          {
            type: 'tool-call',
            toolCallId: `offline-call-${round}-1`,
            toolName: calculator.name,
            input: JSON.stringify({ expression }),
          },
        ];
      }
      const keys = contextKeys(prompt);
      const quoted = message.length > 200 ? `${message.slice(0, 200)}…` : message;
      reply =
        `(offline model) You said: "${quoted}". ` +
        (keys.length > 0 ? `Context I received: ${keys.join(', ')}.` : 'I received no context.');
    }
    const format = options.responseFormat;
    if (format?.type === 'json') {
      return [{ type: 'text', text: JSON.stringify(fillSchema(format.schema, reply)) }];
    }
    return [{ type: 'text', text: reply }];
  }
}

function lastUserText(prompt: Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m?.role === 'user') {
      return m.content
        .map((p) => (p.type === 'text' ? p.text : ''))
        .join(' ')
        .trim();
    }
  }
  return '';
}

function contextKeys(prompt: Prompt): string[] {
  const keys: string[] = [];
  for (const m of prompt) {
    if (m.role !== 'system') continue;
    for (const match of m.content.matchAll(/^## (\S+)/gm))
      if (match[1] && !keys.includes(match[1])) keys.push(match[1]);
  }
  return keys;
}

function answerFromToolResults(
  prompt: Prompt,
  results: Extract<Prompt[number], { role: 'tool' }>['content'],
): string {
  const inputs = new Map<string, unknown>();
  for (const m of prompt) {
    if (m.role !== 'assistant') continue;
    for (const part of m.content) if (part.type === 'tool-call') inputs.set(part.toolCallId, part.input);
  }
  const lines: string[] = [];
  for (const part of results) {
    if (part.type !== 'tool-result') continue;
    const output = part.output;
    const value =
      output.type === 'json' || output.type === 'text'
        ? output.value
        : output.type === 'error-text' || output.type === 'error-json'
          ? { error: output.value }
          : output.type;
    const input = inputs.get(part.toolCallId);
    const expression =
      input !== null &&
      typeof input === 'object' &&
      typeof (input as { expression?: unknown }).expression === 'string'
        ? (input as { expression: string }).expression
        : undefined;
    const isError = output.type === 'error-text' || output.type === 'error-json';
    if (part.toolName === 'calculator' && expression !== undefined && !isError) {
      lines.push(`${expression} = ${render(resultOf(value))}`);
    } else {
      lines.push(`${part.toolName}${isError ? ' failed' : ''}: ${render(value)}`);
    }
  }
  return `${lines.join('\n')} (offline model)`;
}

/** A calculator output may be a bare value or `{ result }` / `{ value }`. */
function resultOf(value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    if ('result' in o) return o.result;
    if ('value' in o) return o.value;
  }
  return value;
}

function render(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

const REPLY_FIELDS = ['response_text', 'message', 'answer', 'text', 'content', 'response', 'reply'];

/** Builds a value satisfying a JSON Schema's required fields, with the reply in the most answer-like string. */
export function fillSchema(schema: unknown, reply: string): unknown {
  const s = (schema ?? {}) as Record<string, unknown>;
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if ('const' in s) return s.const;
  switch (type) {
    case 'string':
      return reply;
    case 'number':
    case 'integer': {
      const min = typeof s.minimum === 'number' ? s.minimum : 0;
      const max = typeof s.maximum === 'number' ? s.maximum : min + 1;
      return type === 'integer' ? Math.ceil(min) : (min + max) / 2;
    }
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'null':
      return null;
    default: {
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(s.required)
        ? s.required.filter((r): r is string => typeof r === 'string')
        : [];
      const out: Record<string, unknown> = {};
      const replyField = REPLY_FIELDS.find((f) => f in properties);
      if (replyField !== undefined) out[replyField] = reply;
      for (const key of required) if (!(key in out)) out[key] = fillSchema(properties[key], reply);
      return out;
    }
  }
}
