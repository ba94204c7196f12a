/**
 * One call to an OpenAI-compatible chat-completions API (OpenAI, OpenRouter, Ollama, vLLM, LM Studio, ...) over
 * fetch: `POST {baseURL}/chat/completions`. Only the common subset of the API is used, so the same request works
 * on every server: system + user/assistant/tool messages, function tools, temperature, a token limit and a
 * response format. With `onDelta` the request asks for a stream (server-sent events, openai-chat-stream.ts).
 *
 * 429, 5xx and network failures are retried `maxRetries` times after a short backoff (or the server's
 * Retry-After when it is short); a longer wait is left to the SQS redelivery rather than paid for in a Lambda:
 * the RetriableError then carries the server's Retry-After, and the executor makes the message visible again
 * after that long (shared/adapters/sqs/sqs-batch.ts). A stream that breaks mid-way is a network failure too: the
 * consumer is told to drop what it was streamed (`reset`) and the call starts again.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { isRetriableStatus, NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type {
  LlmAttachment,
  LlmFinishReason,
  LlmMessage,
  LlmRequest,
  LlmResponse,
  LlmToolCall,
} from '#shared/ports/llm.ts';
import { abortedError, BrokenStream, backoffMs, describe, isAbort } from './call-errors.ts';
import { type ChatCompletion, contentText, isEventStream, readChatStream } from './openai-chat-stream.ts';
import { fitsStrictMode, jsonText, withSchemaInstruction } from './structured-output.ts';
import { ToolNames, toolResultText } from './tool-wire.ts';

export interface OpenAiChatTarget {
  /** The crumbs provider name (`openrouter`, `ollama`, ...), used in messages. */
  provider: string;
  modelId: string;
  baseURL: string;
  apiKey: string | undefined;
  /**
   * The server takes `json_schema` response formats (OpenAI, OpenRouter). Others get `json_object` plus the
   * schema in the prompt: the common denominator of Ollama, vLLM and LM Studio.
   */
  jsonSchemaFormat: boolean;
  /** Send the limit as `max_completion_tokens` (OpenAI's reasoning models refuse `max_tokens`). */
  maxCompletionTokens: boolean;
  fetch: typeof globalThis.fetch;
  maxRetries: number;
}

/** No wait (the server's Retry-After or our backoff) is longer than this inside the function. */
const MAX_WAIT_MS = 10_000;

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'input_audio'; input_audio: { data: string; format: 'wav' | 'mp3' } }
  | { type: 'file'; file: { filename: string; file_data: string } };

type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

const FINISH_REASONS: Record<string, LlmFinishReason> = {
  stop: 'stop',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  length: 'length',
  content_filter: 'content-filter',
};

export async function openAiChat(target: OpenAiChatTarget, request: LlmRequest): Promise<LlmResponse> {
  const model = `${target.provider}/${target.modelId}`;
  const names = new ToolNames();
  // Offered tools are encoded first so that names in the history get the same encoding.
  const tools = (request.tools ?? []).map((spec) => ({
    type: 'function' as const,
    function: { name: names.encode(spec.name), description: spec.description, parameters: spec.inputSchema },
  }));
  const schema = request.responseSchema;
  const system =
    schema !== undefined && !target.jsonSchemaFormat
      ? withSchemaInstruction(request.system, schema)
      : request.system;
  const messages: ChatMessage[] = [
    ...(system !== '' ? [{ role: 'system' as const, content: system }] : []),
    ...toChatMessages(request.messages, names),
  ];
  const body = {
    model: target.modelId,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.maxOutputTokens !== undefined
      ? { [target.maxCompletionTokens ? 'max_completion_tokens' : 'max_tokens']: request.maxOutputTokens }
      : {}),
    ...(schema !== undefined ? { response_format: responseFormat(schema, target.jsonSchemaFormat) } : {}),
  };
  const onDelta = request.onDelta;
  if (onDelta === undefined) {
    const completion = await post(target, model, body, request.signal, async (response) =>
      parseCompletion(await bodyText(response), model, response.status),
    );
    return toResponse(completion, model, names, schema !== undefined);
  }
  // Whether the consumer holds text of the current attempt, which a retry must tell it to drop.
  let streamed = false;
  const completion = await post(
    target,
    model,
    { ...body, stream: true, stream_options: { include_usage: true } },
    request.signal,
    async (response) => {
      const onText = (text: string): void => {
        streamed = true;
        onDelta({ type: 'text', text });
      };
      if (isEventStream(response)) return readChatStream(response, model, request.signal, onText);
      // A server that does not stream sends the whole completion: its text is then one piece.
      const whole = parseCompletion(await bodyText(response), model, response.status);
      const text = contentText(whole.choices?.[0]?.message?.content);
      if (text !== '') onText(text);
      return whole;
    },
    (reason) => {
      if (!streamed) return;
      streamed = false;
      onDelta({ type: 'reset', reason });
    },
  );
  return toResponse(completion, model, names, schema !== undefined);
}

function responseFormat(schema: Record<string, unknown>, jsonSchemaFormat: boolean): Record<string, unknown> {
  if (!jsonSchemaFormat) return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: 'response', schema, strict: fitsStrictMode(schema) } };
}

/**
 * A user message with files, as content parts: image parts (data URLs), audio parts, file parts (PDF), text. The
 * attachments room (`shared/rooms/attachments/model-input.ts`) resolved and checked them.
 */
function userParts(text: string, attachments: readonly LlmAttachment[]): ContentPart[] {
  const parts: ContentPart[] = text.trim() === '' ? [] : [{ type: 'text', text }];
  for (const a of attachments) {
    if (a.text !== undefined) parts.push({ type: 'text', text: a.text });
    else if (a.data === undefined) continue;
    else if (a.kind === 'image') {
      parts.push({ type: 'image_url', image_url: { url: `data:${a.ref.media_type};base64,${a.data}` } });
    } else if (a.kind === 'audio') {
      parts.push({
        type: 'input_audio',
        input_audio: { data: a.data, format: a.ref.media_type === 'audio/wav' ? 'wav' : 'mp3' },
      });
    } else {
      parts.push({
        type: 'file',
        file: { filename: a.name ?? a.ref.id, file_data: `data:${a.ref.media_type};base64,${a.data}` },
      });
    }
  }
  return parts;
}

function toChatMessages(messages: LlmMessage[], names: ToolNames): ChatMessage[] {
  return messages.flatMap((m): ChatMessage[] => {
    switch (m.role) {
      case 'user':
        return [
          { role: 'user', content: m.attachments?.length ? userParts(m.content, m.attachments) : m.content },
        ];
      case 'assistant': {
        const calls = (m.toolCalls ?? []).map(
          (c): WireToolCall => ({
            id: c.id,
            type: 'function',
            function: { name: names.encode(c.name), arguments: JSON.stringify(c.input ?? {}) },
          }),
        );
        // OpenAI's own shape: no text beside tool calls is `null`, not an empty string.
        return calls.length > 0
          ? [{ role: 'assistant', content: m.content || null, tool_calls: calls }]
          : [{ role: 'assistant', content: m.content }];
      }
      default:
        return m.results.map((r) => ({
          role: 'tool',
          tool_call_id: r.toolCallId,
          content: toolResultText(r),
        }));
    }
  });
}

/**
 * The request with its retry loop. `read` turns a 2xx answer into the completion; it throws `BrokenStream` when the
 * answer broke off (retried like a failed connection) and anything else when the answer is bad (not retried).
 * `beforeRetry` runs once a failure is known to be retried, before the wait.
 */
async function post(
  target: OpenAiChatTarget,
  model: string,
  body: Record<string, unknown>,
  signal: AbortSignal | undefined,
  read: (response: Response) => Promise<ChatCompletion>,
  beforeRetry?: (reason: string) => void,
): Promise<ChatCompletion> {
  const url = `${target.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  const payload = JSON.stringify(body);
  const init: RequestInit = { method: 'POST', headers, body: payload, ...(signal ? { signal } : {}) };
  for (let attempt = 0; ; attempt++) {
    const outcome = await send(target.fetch, url, init, read);
    let failure: { message: string; retriable: boolean; retryAfterMs?: number; cause?: unknown };
    if ('error' in outcome) {
      if (isAbort(outcome.error, signal)) throw abortedError(model, outcome.error);
      const reason = describe(outcome.error);
      failure = {
        message: `${model}: could not reach ${url}: ${reason}`,
        retriable: true,
        cause: outcome.error,
      };
    } else if ('broken' in outcome) {
      const broken = outcome.broken;
      if (isAbort(broken.cause, signal)) throw abortedError(model, broken.cause ?? broken);
      failure = {
        message: `${model}: the answer from ${url} broke off: ${broken.message}`,
        retriable: broken.retriable,
        ...(broken.cause !== undefined ? { cause: broken.cause } : {}),
      };
    } else if (outcome.ok) {
      return outcome.completion;
    } else {
      failure = {
        message: `${model} answered ${outcome.status}: ${providerMessage(outcome.text)}`,
        retriable: isRetriableStatus(outcome.status),
        retryAfterMs: retryAfterMs(outcome.headers),
      };
    }
    const options = failure.cause !== undefined ? { cause: failure.cause } : undefined;
    if (!failure.retriable) throw new NonRetriableError(failure.message, options);
    const wait = attempt < target.maxRetries ? retryDelay(attempt, failure.retryAfterMs) : undefined;
    if (wait === undefined) {
      const retryAfterSeconds =
        failure.retryAfterMs !== undefined ? Math.ceil(failure.retryAfterMs / 1000) : undefined;
      throw new RetriableError(failure.message, { ...options, retryAfterSeconds });
    }
    beforeRetry?.(failure.message);
    try {
      await delay(wait, undefined, signal ? { signal } : undefined);
    } catch (error) {
      throw abortedError(model, error);
    }
  }
}

/**
 * One HTTP exchange; a transport failure (refused, reset, aborted) comes back as `error` and an answer that broke
 * off as `broken`, not thrown. A 2xx answer is read by `read`, any other is read as text for its error message.
 */
async function send(
  fetchImpl: typeof globalThis.fetch,
  url: string,
  init: RequestInit,
  read: (response: Response) => Promise<ChatCompletion>,
): Promise<
  | { ok: true; completion: ChatCompletion }
  | { ok: false; status: number; headers: Headers; text: string }
  | { error: unknown }
  | { broken: BrokenStream }
> {
  let response: Response;
  try {
    response = await fetchImpl(url, init);
  } catch (error) {
    return { error };
  }
  if (!response.ok) {
    try {
      return { ok: false, status: response.status, headers: response.headers, text: await response.text() };
    } catch (error) {
      return { error };
    }
  }
  try {
    return { ok: true, completion: await read(response) };
  } catch (error) {
    if (error instanceof BrokenStream) return { broken: error };
    throw error;
  }
}

/** The whole body of a plain answer; a connection lost while reading it is a broken answer. */
async function bodyText(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new BrokenStream(describe(error), { cause: error });
  }
}

function parseCompletion(text: string, model: string, status: number): ChatCompletion {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object') return parsed as ChatCompletion;
  } catch {
    // Reported below with the body, which says more than the parser's message.
  }
  throw new NonRetriableError(
    `${model} answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`,
  );
}

/** The server's own words: OpenAI `{error: {message}}`, Ollama `{error: "..."}`, or the body itself. */
function providerMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown } | null;
    const error = body?.error;
    if (typeof error === 'string') return error;
    if (error !== null && typeof error === 'object') {
      const message = (error as { message?: unknown }).message;
      if (typeof message === 'string') return message;
    }
    if (typeof body?.message === 'string') return body.message;
  } catch {
    // Not JSON (a proxy's HTML page, plain text): the text itself is the message.
  }
  return text.trim().slice(0, 500) || '(empty body)';
}

/** `retry-after-ms` (OpenAI) or `retry-after` in seconds or as an HTTP date; undefined when absent or bad. */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** undefined: do not wait here (the server asks for longer than is worth paying for in a Lambda). */
function retryDelay(attempt: number, retryAfter: number | undefined): number | undefined {
  if (retryAfter !== undefined) return retryAfter <= MAX_WAIT_MS ? retryAfter : undefined;
  return Math.min(backoffMs(attempt), MAX_WAIT_MS);
}

function toResponse(
  completion: ChatCompletion,
  model: string,
  names: ToolNames,
  structured: boolean,
): LlmResponse {
  const choice = completion.choices?.[0];
  const message = choice?.message;
  if (message === undefined) {
    throw new NonRetriableError(
      `${model} answered without a message: ${JSON.stringify(completion).slice(0, 200)}`,
    );
  }
  const toolCalls = (message.tool_calls ?? []).map((call) => toToolCall(call, names, model));
  const text = contentText(message.content);
  return {
    text: structured ? jsonText(text) : text,
    toolCalls,
    // Some servers (Ollama) say `stop` beside tool calls; the calls are what the caller acts on.
    finishReason:
      toolCalls.length > 0 ? 'tool-calls' : (FINISH_REASONS[choice?.finish_reason ?? ''] ?? 'other'),
    usage: {
      inputTokens: completion.usage?.prompt_tokens,
      outputTokens: completion.usage?.completion_tokens,
      // OpenAI counts cached tokens inside prompt_tokens.
      ...(completion.usage?.prompt_tokens_details?.cached_tokens !== undefined
        ? { cachedInputTokens: completion.usage.prompt_tokens_details.cached_tokens }
        : {}),
    },
    model,
  };
}

function toToolCall(
  call: { id?: string; function?: { name?: string; arguments?: unknown } },
  names: ToolNames,
  model: string,
): LlmToolCall {
  const name = names.decode(call.function?.name ?? '');
  const args = call.function?.arguments;
  let input: unknown = {};
  if (typeof args === 'string' && args.trim() !== '') {
    try {
      input = JSON.parse(args);
    } catch (error) {
      throw new NonRetriableError(
        `${model} called tool ${name} with arguments that are not JSON: ${args.slice(0, 200)}`,
        { cause: error },
      );
    }
  } else if (args !== null && typeof args === 'object') {
    // A few servers send the arguments as an object already.
    input = args;
  }
  return { id: call.id || `call_${randomUUID()}`, name, input };
}
