/**
 * The OFFLINE model: a deterministic stand-in for an LLM, for the demo and tests. It makes no network call and
 * never pretends to be a real model (every answer says "offline"). It answers an `LlmRequest` directly, behind the
 * same LlmClient as Bedrock or OpenRouter, so callers exercise the same port, tool calls and conversation shape.
 *
 * What it does, in order:
 * 1. The conversation ends with tool results → it answers from them: a calculator result as "17*23 = 391",
 *    anything else as "<tool>: <output>".
 * 2. The last user message contains arithmetic ("what is 17*23?") and a `calculator` tool is offered → it asks
 *    for the tool: `calculator({ expression: "17*23" })`.
 * 3. Otherwise it replies briefly, quoting the message and naming the context sections (`## <key>` headings of
 *    the system prompt) it received.
 * With a response schema (structured output) the reply is wrapped into an object that fills the schema's
 * required fields.
 */
import type { LlmMessage, LlmRequest, LlmResponse, LlmToolResult } from '#shared/ports/llm.ts';

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

/** One offline model call; `modelId` is the part after `offline/` and only names the answer's model. */
export function generateOffline(request: LlmRequest, modelId = 'crumbs'): LlmResponse {
  const model = `${OFFLINE_PROVIDER}/${modelId}`;
  const { messages } = request;
  const inputTokens = Math.ceil(JSON.stringify({ system: request.system, messages }).length / 4);
  const last = messages[messages.length - 1];
  let reply: string;
  if (last?.role === 'tool') {
    reply = answerFromToolResults(messages, last.results);
  } else {
    const message = lastUserText(messages);
    const expression = findArithmetic(message);
    const calculator = request.tools?.find((t) => t.name === 'calculator');
    if (expression !== undefined && calculator !== undefined) {
      const round = messages.filter((m) => m.role === 'assistant').length + 1;
      return {
        text: '',
        toolCalls: [{ id: `offline-call-${round}-1`, name: calculator.name, input: { expression } }],
        finishReason: 'tool-calls',
        usage: { inputTokens, outputTokens: 0 },
        model,
      };
    }
    const keys = contextKeys(request.system);
    const quoted = message.length > 200 ? `${message.slice(0, 200)}…` : message;
    reply =
      `(offline model) You said: "${quoted}". ` +
      (keys.length > 0 ? `Context I received: ${keys.join(', ')}.` : 'I received no context.');
  }
  const text =
    request.responseSchema !== undefined ? JSON.stringify(fillSchema(request.responseSchema, reply)) : reply;
  return {
    text,
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens, outputTokens: Math.ceil(text.length / 4) },
    model,
  };
}

function lastUserText(messages: LlmMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'user') return m.content.trim();
  }
  return '';
}

function contextKeys(system: string): string[] {
  const keys: string[] = [];
  for (const match of system.matchAll(/^## (\S+)/gm)) {
    if (match[1] && !keys.includes(match[1])) keys.push(match[1]);
  }
  return keys;
}

function answerFromToolResults(messages: LlmMessage[], results: LlmToolResult[]): string {
  const inputs = new Map<string, unknown>();
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const call of m.toolCalls ?? []) inputs.set(call.id, call.input);
  }
  const lines: string[] = [];
  for (const result of results) {
    const value = result.isError
      ? { error: typeof result.output === 'string' ? result.output : JSON.stringify(result.output) }
      : (result.output ?? null);
    const input = inputs.get(result.toolCallId);
    const expression =
      input !== null &&
      typeof input === 'object' &&
      typeof (input as { expression?: unknown }).expression === 'string'
        ? (input as { expression: string }).expression
        : undefined;
    if (result.toolName === 'calculator' && expression !== undefined && !result.isError) {
      lines.push(`${expression} = ${render(resultOf(value))}`);
    } else {
      lines.push(`${result.toolName}${result.isError ? ' failed' : ''}: ${render(value)}`);
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
