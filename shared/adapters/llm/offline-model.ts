/**
 * The OFFLINE model: a deterministic stand-in for an LLM, for the demo and tests. The rule: it makes no network call
 * and never pretends to be a real model (every answer says "offline"). It answers an `LlmRequest` behind the same
 * LlmClient as Bedrock or OpenRouter, so callers exercise the same port, tool calls and conversation shape.
 *
 * What it does, in order:
 * 1. The conversation ends with tool results → it answers from them: a calculator result as "17*23 = 391",
 *    anything else as "<tool>: <output>".
 * 2. The last user message contains arithmetic ("what is 17*23?") and a `calculator` tool is offered → it asks
 *    for the tool: `calculator({ expression: "17*23" })`.
 * 3. Otherwise it replies briefly, quoting the message and naming the context sections (`## <key>` headings of
 *    the system prompt) it received.
 * With a response schema the answer is an instance of it with the reply in its most answer-like string
 * (`fillSchema`; an orchestration plan calls every agent once); a `responseFormat` gives it that shape (`shaped`).
 * Asked to stream, it streams that same answer word by word, a pause between words (`streamOffline`).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { LinearRegExp } from '#shared/domain/lang/linear-regex.ts';
import { CLASSIFIER_PROMPTS } from '#shared/ports/guardrails.ts';
import {
  type LlmDelta,
  type LlmMessage,
  type LlmRequest,
  type LlmResponse,
  type LlmToolResult,
  ORCHESTRATION_PLAN_SCHEMA_ID,
} from '#shared/ports/llm.ts';

export const OFFLINE_PROVIDER = 'offline';

/** The pause between streamed words (`CRUMBS_OFFLINE_STREAM_DELAY_MS`): long enough to see the demo stream. */
export const DEFAULT_OFFLINE_STREAM_DELAY_MS = 25;

/**
 * Arithmetic: numbers joined by at least one operator, parentheses allowed. On the linear-time engine, as are the
 * response schema's patterns below: both run on text a user or a definition wrote.
 */
const ARITHMETIC = new LinearRegExp(String.raw`[(\d][\d\s.()]*(?:[-+*/^%×÷][\s(]*[\d.]+[\d\s.()]*)+`);

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
  const judged = judgeOffline(request);
  if (judged !== undefined) {
    const text = JSON.stringify({ flagged: judged === '' ? null : judged });
    return { text, toolCalls: [], finishReason: 'stop', usage: { inputTokens, outputTokens: 8 }, model };
  }
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
  const text = shaped(request, reply);
  return {
    text,
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens, outputTokens: Math.ceil(text.length / 4) },
    model,
  };
}

/**
 * The offline answer to `request` (`generateOffline`), streamed to `onDelta` a word at a time with its following
 * whitespace, so the pieces concatenate to the answer's text exactly; `delayMs` between words. Aborted by `signal`
 * between words: rejects with `onAbort(reason)`, the error the other providers report an aborted call with.
 */
export async function streamOffline(
  response: LlmResponse,
  onDelta: (delta: LlmDelta) => void,
  options: { delayMs: number; signal?: AbortSignal | undefined; onAbort: (reason: unknown) => Error },
): Promise<LlmResponse> {
  const { signal } = options;
  const words = response.text.match(/\s+|\S+\s*/g) ?? [];
  if (signal?.aborted) throw options.onAbort(signal.reason);
  for (const [i, word] of words.entries()) {
    if (i > 0 && options.delayMs > 0) {
      try {
        await delay(options.delayMs, undefined, signal ? { signal } : undefined);
      } catch (error) {
        throw options.onAbort(error);
      }
    }
    onDelta({ type: 'text', text: word });
  }
  return response;
}

/**
 * The offline model as the guardrails' classifier (its prompts, `CLASSIFIER_PROMPTS`): a denied topic is flagged
 * when the text holds its name (dashes read as spaces) or one of its examples, case aside; an injection when the
 * text tells an assistant to ignore or disregard its instructions. `''`: nothing flagged; undefined: not a judgement.
 */
function judgeOffline(request: LlmRequest): string | undefined {
  const text = lastUserText(request.messages).toLowerCase();
  if (request.system.startsWith(CLASSIFIER_PROMPTS.injection)) {
    return /\b(ignore|disregard|forget)\b[^.\n]{0,40}\b(instructions|rules|prompt)\b/.test(text)
      ? 'injection'
      : '';
  }
  if (!request.system.startsWith(CLASSIFIER_PROMPTS.topic)) return undefined;
  for (const line of request.system.split('\n')) {
    const m = /^- ([^:]+): .*?(?:\(examples: (.*)\))?$/.exec(line);
    if (m === null) continue;
    const name = m[1] as string;
    const examples = (m[2] ?? '').split('; ').flatMap((e) => {
      try {
        const parsed: unknown = JSON.parse(e);
        return typeof parsed === 'string' && parsed.trim() !== '' ? [parsed.toLowerCase()] : [];
      } catch {
        return [];
      }
    });
    if ([name.replace(/-/g, ' ').toLowerCase(), ...examples].some((phrase) => text.includes(phrase)))
      return name;
  }
  return '';
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

const REPLY_FIELDS = [
  'response_text',
  'message',
  'answer',
  'text',
  'content',
  'response',
  'reply',
  'summary',
];
const MAX_FILL_DEPTH = 12;

type Schema = Record<string, unknown>;

function asSchema(value: unknown): Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Schema) : {};
}

/** A local `$ref` (`#/$defs/x`, `#/definitions/x`) resolved against the root schema. */
function deref(schema: Schema, root: Schema): Schema {
  let s = schema;
  for (let hops = 0; hops < 10 && typeof s.$ref === 'string' && s.$ref.startsWith('#'); hops++) {
    let target: unknown = root;
    for (const part of s.$ref.slice(1).split('/').filter(Boolean)) {
      target = asSchema(target)[decodeURIComponent(part.replace(/~1/g, '/').replace(/~0/g, '~'))];
    }
    s = { ...asSchema(target), ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref')) };
  }
  return s;
}

/** allOf's members merged into one schema (properties and required united), enough for filling. */
function merged(schema: Schema, root: Schema): Schema {
  const s = deref(schema, root);
  if (!Array.isArray(s.allOf)) return s;
  let out: Schema = { ...s, allOf: undefined };
  for (const part of s.allOf) {
    const p = merged(asSchema(part), root);
    out = {
      ...p,
      ...out,
      properties: { ...asSchema(p.properties), ...asSchema(out.properties) },
      required: [
        ...(Array.isArray(p.required) ? p.required : []),
        ...(Array.isArray(out.required) ? out.required : []),
      ],
    };
  }
  return out;
}

function stringFor(s: Schema, reply: string): string {
  const formats: Record<string, string> = {
    'date-time': '2025-01-01T00:00:00Z',
    date: '2025-01-01',
    time: '00:00:00Z',
    email: 'offline@example.com',
    uri: 'https://example.com/offline',
    'uri-reference': '/offline',
    uuid: '00000000-0000-4000-8000-000000000000',
    hostname: 'example.com',
    ipv4: '192.0.2.1',
    ipv6: '2001:db8::1',
  };
  let text: string = (typeof s.format === 'string' ? formats[s.format] : undefined) ?? reply;
  if (typeof s.pattern === 'string') {
    try {
      if (!new LinearRegExp(s.pattern, 'u').test(text)) text = samplePattern(s.pattern) ?? text;
    } catch {
      // A pattern the engine cannot compile: the validator reports it; the reply stays.
    }
  }
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Number.POSITIVE_INFINITY;
  const chars = [...text];
  if (chars.length > max) return chars.slice(0, max).join('');
  return chars.length < min ? text + 'x'.repeat(min - chars.length) : text;
}

/** A string for the simplest patterns (a literal alternative, `^[a-z]+$`-like); undefined otherwise. */
function samplePattern(pattern: string): string | undefined {
  const body = pattern.replace(/^\^/, '').replace(/\$$/, '');
  const candidates = [
    body.split('|')[0] ?? '',
    body.replace(/\[[^\]]*\][+*]?|\\d[+*]?|\{\d+(,\d*)?\}/g, 'a'),
  ];
  return candidates.find((c) => {
    try {
      return new LinearRegExp(pattern, 'u').test(c);
    } catch {
      return false;
    }
  });
}

function numberFor(s: Schema, integer: boolean): number {
  const lo =
    typeof s.minimum === 'number'
      ? s.minimum
      : typeof s.exclusiveMinimum === 'number'
        ? s.exclusiveMinimum + (integer ? 1 : 0.5)
        : undefined;
  const hi =
    typeof s.maximum === 'number'
      ? s.maximum
      : typeof s.exclusiveMaximum === 'number'
        ? s.exclusiveMaximum - (integer ? 1 : 0.5)
        : undefined;
  // Midway between the bounds when both are given (a confidence in [0, 1] is 0.5), else the one bound, else 0.
  let n =
    lo !== undefined && hi !== undefined
      ? integer
        ? lo
        : (lo + hi) / 2
      : (lo ?? (hi !== undefined ? Math.min(hi, 0) : 0));
  if (integer) n = Math.ceil(n);
  if (typeof s.multipleOf === 'number' && s.multipleOf > 0) n = Math.ceil(n / s.multipleOf) * s.multipleOf;
  return n;
}

function fill(schemaIn: unknown, reply: string, root: Schema, depth: number): unknown {
  const s = merged(asSchema(schemaIn), root);
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if ('default' in s) return s.default;
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = s[key];
    if (Array.isArray(options) && options.length > 0) {
      const { [key]: _, ...rest } = s;
      return fill({ ...rest, ...asSchema(options[0]) }, reply, root, depth);
    }
  }
  const types = Array.isArray(s.type) ? s.type : s.type !== undefined ? [s.type] : [];
  const type =
    types.find((t) => t !== 'null') ??
    types[0] ??
    (s.properties !== undefined || s.required !== undefined
      ? 'object'
      : s.items !== undefined
        ? 'array'
        : undefined);
  if (depth > MAX_FILL_DEPTH) return type === 'array' ? [] : type === 'object' ? {} : null;
  switch (type) {
    case 'string':
      return stringFor(s, reply);
    case 'number':
      return numberFor(s, false);
    case 'integer':
      return numberFor(s, true);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : [];
      const min = Math.max(typeof s.minItems === 'number' ? s.minItems : 0, prefix.length);
      const item = merged(asSchema(s.items), root);
      const out: unknown[] = prefix.map((p) => fill(p, reply, root, depth + 1));
      const distinct = Array.isArray(item.enum) ? item.enum : undefined;
      for (let i = out.length; i < min; i++) {
        out.push(
          distinct !== undefined && s.uniqueItems === true
            ? distinct[i % distinct.length]
            : fill(item, s.uniqueItems === true ? `${reply} ${i + 1}` : reply, root, depth + 1),
        );
      }
      return out;
    }
    case 'object':
    case undefined: {
      const properties = asSchema(s.properties);
      const required = Array.isArray(s.required)
        ? s.required.filter((r): r is string => typeof r === 'string')
        : [];
      const out: Record<string, unknown> = {};
      const replyField = REPLY_FIELDS.find((f) => f in properties);
      if (replyField !== undefined) out[replyField] = fill(properties[replyField], reply, root, depth + 1);
      for (const key of required) {
        if (!(key in out)) {
          out[key] =
            key in properties
              ? fill(properties[key], reply, root, depth + 1)
              : fill(s.additionalProperties ?? {}, reply, root, depth + 1);
        }
      }
      const minProperties = typeof s.minProperties === 'number' ? s.minProperties : 0;
      for (const key of Object.keys(properties)) {
        if (Object.keys(out).length >= minProperties) break;
        if (!(key in out)) out[key] = fill(properties[key], reply, root, depth + 1);
      }
      return out;
    }
    default:
      return reply;
  }
}

/**
 * A value that satisfies a JSON Schema (the keywords crumbs' validator checks, local `$ref`s included), with the
 * reply in the most answer-like string: `const`, `enum` and `default` first, then the first of `oneOf`/`anyOf`,
 * required properties, minimum lengths, counts and bounds. `uniqueItems` is met through the items' strings (each
 * item gets a numbered reply) or an enum's distinct values.
 */
export function fillSchema(schema: unknown, reply: string): unknown {
  return fill(schema, reply, asSchema(schema), 0);
}

/**
 * The orchestration plan (ORCHESTRATION_PLAN_SCHEMA_ID): every agent the schema allows, called once, in the
 * schema's default mode, each with the user's message.
 */
function orchestrationPlan(schema: Schema, message: string): unknown {
  const properties = asSchema(schema.properties);
  const call = asSchema(asSchema(asSchema(properties.calls).items).properties);
  const agents = Array.isArray(asSchema(call.agent).enum) ? (asSchema(call.agent).enum as unknown[]) : [];
  const mode = asSchema(properties.mode).default;
  return {
    ...(typeof mode === 'string' ? { mode } : {}),
    calls: agents.map((agent) => ({ agent, message })),
  };
}

/** The reply in the shape the request asks for: JSON for a schema, else markdown / html / yaml per the format. */
function shaped(request: LlmRequest, reply: string): string {
  const schema = request.responseSchema;
  const format = request.responseFormat;
  if (schema !== undefined) {
    const value =
      schema.$id === ORCHESTRATION_PLAN_SCHEMA_ID
        ? orchestrationPlan(schema, lastUserText(request.messages))
        : fillSchema(schema, reply);
    // JSON is YAML too: a yaml answer with a schema is the same instance.
    return format?.kind === 'yaml' ? JSON.stringify(value, null, 2) : JSON.stringify(value);
  }
  const sections = format?.sections ?? [];
  switch (format?.kind) {
    case 'markdown': {
      const head = format.template !== undefined ? `${format.template.trim()}\n\n` : '';
      const body = sections.length > 0 ? sections.map((h) => `## ${h}\n\n${reply}`).join('\n\n') : reply;
      return `${head}${body}\n`;
    }
    case 'html': {
      const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
      const body =
        sections.length > 0
          ? sections.map((h) => `<h2>${esc(h)}</h2>\n<p>${esc(reply)}</p>`).join('\n')
          : `<p>${esc(reply)}</p>`;
      return `<article>\n${body}\n</article>\n`;
    }
    case 'yaml':
      return `${JSON.stringify({ summary: reply }, null, 2)}\n`;
    case 'json':
      return JSON.stringify({ text: reply });
    default:
      return reply;
  }
}
