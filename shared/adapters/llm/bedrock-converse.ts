/**
 * One Amazon Bedrock Converse call through the AWS SDK's BedrockRuntimeClient: the SDK signs with the function's
 * role (no keys in env), retries throttling with its own policy (`maxAttempts` on the client), and is what
 * `aws-sdk-client-mock` intercepts in tests.
 *
 * Structured output puts the schema in the system prompt rather than forcing a `json` tool. Forcing a tool needs
 * `toolChoice`, which Converse accepts only for some model families (Claude, Nova, Mistral Large) and answers with
 * a ValidationException for the rest; and agents offer their real tools beside a response schema, where a forced
 * tool would leave the model no way to call them. The prompt works on every model, with or without tools; the
 * caller validates the answer against the schema, so a model that ignores the instruction is reported, not missed.
 *
 * With `onDelta` the call is a ConverseStream, read into the output a Converse call returns (`converseStream`).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  ConverseStreamCommand,
  type ConverseStreamOutput,
  type Message,
  type Tool,
  type ToolUseBlock,
} from '@aws-sdk/client-bedrock-runtime';
import {
  asCrumbsError,
  isRetriableStatus,
  NonRetriableError,
  RetriableError,
} from '#shared/domain/errors.ts';
import type {
  LlmAttachment,
  LlmDelta,
  LlmFinishReason,
  LlmMessage,
  LlmRequest,
  LlmResponse,
  LlmToolCall,
  LlmUsage,
} from '#shared/ports/llm.ts';
import { abortedError, BrokenStream, backoffMs, describe, isAbort } from './call-errors.ts';
import { jsonText, withSchemaInstruction } from './structured-output.ts';
import { ToolNames, toolResultText } from './tool-wire.ts';

type Document = NonNullable<ToolUseBlock['input']>;

const STOP_REASONS: Record<string, LlmFinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool-calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  content_filtered: 'content-filter',
  guardrail_intervened: 'content-filter',
};

/**
 * `maxRetries`: how often a stream that breaks off mid-way is started again (the client's own `maxAttempts` covers
 * the request up to its first event, as it covers a plain call).
 */
export async function bedrockConverse(
  client: BedrockRuntimeClient,
  modelId: string,
  request: LlmRequest,
  maxRetries = 0,
): Promise<LlmResponse> {
  const model = `bedrock/${modelId}`;
  const names = new ToolNames();
  const tools = (request.tools ?? []).map(
    (spec): Tool => ({
      toolSpec: {
        name: names.encode(spec.name),
        // Converse refuses an empty description.
        ...(spec.description ? { description: spec.description } : {}),
        inputSchema: { json: spec.inputSchema as Document },
      },
    }),
  );
  const schema = request.responseSchema;
  const system = schema !== undefined ? withSchemaInstruction(request.system, schema) : request.system;
  const input: ConverseCommandInput = {
    modelId,
    messages: toConverseMessages(request.messages, names, tools.length > 0),
    ...(system.trim() !== '' ? { system: [{ text: system }] } : {}),
    ...(tools.length > 0 ? { toolConfig: { tools } } : {}),
    ...(request.temperature !== undefined || request.maxOutputTokens !== undefined
      ? {
          inferenceConfig: {
            ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
            ...(request.maxOutputTokens !== undefined ? { maxTokens: request.maxOutputTokens } : {}),
          },
        }
      : {}),
  };
  if (request.onDelta !== undefined) {
    const out = await converseStream(client, input, model, request.onDelta, request.signal, maxRetries);
    return toResponse(out, model, names, schema !== undefined);
  }
  let out: ConverseCommandOutput;
  try {
    out = await client.send(
      new ConverseCommand(input),
      request.signal !== undefined ? { abortSignal: request.signal } : {},
    );
  } catch (error) {
    throw classify(error, model, request.signal);
  }
  return toResponse(out, model, names, schema !== undefined);
}

/**
 * Converse messages alternate user and assistant, so consecutive messages of one role are merged (several tool
 * results, or tool results followed by a user message, become one user message). Converse also refuses tool
 * blocks in a request that offers no tools: tool history is left out then (the agent keeps offering its tools
 * once the conversation used them), and blank text blocks are refused too.
 */
function toConverseMessages(messages: LlmMessage[], names: ToolNames, withTools: boolean): Message[] {
  const out: Message[] = [];
  const push = (role: 'user' | 'assistant', content: ContentBlock[]): void => {
    if (content.length === 0) return;
    const last = out[out.length - 1];
    if (last?.role === role) last.content = [...(last.content ?? []), ...content];
    else out.push({ role, content });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'user':
        // Files first, then the text: Converse wants a text block beside documents.
        push('user', [
          ...(m.attachments ?? []).flatMap(attachmentBlocks),
          ...textBlocks(
            m.content.trim() === '' && m.attachments?.length ? 'See the attached files.' : m.content,
          ),
        ]);
        break;
      case 'assistant':
        push('assistant', [
          ...textBlocks(m.content),
          ...(withTools ? (m.toolCalls ?? []) : []).map(
            (c): ContentBlock => ({
              toolUse: { toolUseId: c.id, name: names.encode(c.name), input: (c.input ?? {}) as Document },
            }),
          ),
        ]);
        break;
      default:
        if (!withTools) break;
        // The error flag is in the text, not Converse's `status: 'error'`, which only Claude models accept.
        push(
          'user',
          m.results.map(
            (r): ContentBlock => ({
              toolResult: { toolUseId: r.toolCallId, content: [{ text: toolResultText(r) }] },
            }),
          ),
        );
    }
  }
  return out;
}

const IMAGE_FORMATS: Record<string, 'png' | 'jpeg' | 'gif' | 'webp'> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};
const DOCUMENT_FORMATS: Record<string, 'pdf' | 'csv' | 'txt' | 'md' | 'html' | 'docx' | 'xlsx'> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/html': 'html',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};
const VIDEO_FORMATS: Record<string, 'mp4' | 'webm' | 'mov'> = {
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
};

/**
 * An attachment resolved by the attachments room (`shared/rooms/attachments/model-input.ts`, which checked
 * Converse's limits): an image, document or video block with its bytes or its `s3Location`, or its text.
 */
function attachmentBlocks(a: LlmAttachment): ContentBlock[] {
  if (a.text !== undefined) return textBlocks(a.text);
  const source =
    a.s3Uri !== undefined
      ? { s3Location: { uri: a.s3Uri } }
      : a.data !== undefined
        ? { bytes: Buffer.from(a.data, 'base64') }
        : undefined;
  if (source === undefined) return [];
  const type = a.ref.media_type;
  if (a.kind === 'image' && IMAGE_FORMATS[type]) return [{ image: { format: IMAGE_FORMATS[type], source } }];
  if (a.kind === 'video' && VIDEO_FORMATS[type]) return [{ video: { format: VIDEO_FORMATS[type], source } }];
  if (a.kind === 'document' && DOCUMENT_FORMATS[type]) {
    return [{ document: { format: DOCUMENT_FORMATS[type], name: a.name ?? 'document', source } }];
  }
  return [];
}

function textBlocks(text: string): ContentBlock[] {
  return text.trim() === '' ? [] : [{ text }];
}

function toResponse(
  out: ConverseCommandOutput,
  model: string,
  names: ToolNames,
  structured: boolean,
): LlmResponse {
  let text = '';
  const toolCalls: LlmToolCall[] = [];
  for (const block of out.output?.message?.content ?? []) {
    if (block.text !== undefined) text += block.text;
    if (block.toolUse !== undefined) {
      toolCalls.push({
        id: block.toolUse.toolUseId ?? `tooluse_${randomUUID()}`,
        name: names.decode(block.toolUse.name ?? ''),
        input: block.toolUse.input ?? {},
      });
    }
  }
  return {
    text: structured ? jsonText(text) : text,
    toolCalls,
    finishReason: toolCalls.length > 0 ? 'tool-calls' : (STOP_REASONS[out.stopReason ?? ''] ?? 'other'),
    usage: bedrockUsage(out.usage),
    model,
  };
}

/** No wait between the attempts of a broken stream is longer than this inside the function. */
const MAX_WAIT_MS = 10_000;
/** Content blocks are kept in an array by their index: one far off is refused, not allocated. */
const MAX_BLOCK_INDEX = 255;

/**
 * A ConverseStream read into the output a Converse call would have returned: text deltas handed on as they come,
 * tool-use blocks put together from their start (id, name) and input pieces (JSON text), the stop reason and usage
 * kept. A stream that breaks off (an error while reading it, an exception event, an end before `messageStop`) is
 * started again up to `maxRetries` times, after a `reset` delta when text was handed on, unless the error says the
 * request itself is bad.
 */
async function converseStream(
  client: BedrockRuntimeClient,
  input: ConverseCommandInput,
  model: string,
  onDelta: (delta: LlmDelta) => void,
  signal: AbortSignal | undefined,
  maxRetries: number,
): Promise<ConverseCommandOutput> {
  for (let attempt = 0; ; attempt++) {
    let streamed = false;
    let events: AsyncIterable<ConverseStreamOutput> | undefined;
    try {
      const out = await client.send(new ConverseStreamCommand(input), signal ? { abortSignal: signal } : {});
      events = out.stream;
    } catch (error) {
      throw classify(error, model, signal);
    }
    let failure: BrokenStream;
    try {
      return await collectStream(events, model, signal, (text) => {
        streamed = true;
        onDelta({ type: 'text', text });
      });
    } catch (error) {
      if (!(error instanceof BrokenStream)) throw error;
      failure = error;
    }
    const cause = failure.cause ?? failure;
    if (isAbort(cause, signal)) throw abortedError(model, cause);
    const message = `${model}: the stream broke off: ${failure.message}`;
    if (!failure.retriable) throw new NonRetriableError(message, { cause });
    if (attempt >= maxRetries) throw new RetriableError(message, { cause });
    if (streamed) onDelta({ type: 'reset', reason: message });
    try {
      await delay(Math.min(backoffMs(attempt), MAX_WAIT_MS), undefined, signal ? { signal } : undefined);
    } catch (error) {
      throw abortedError(model, error);
    }
  }
}

/**
 * Reads one stream to its end; `BrokenStream` when it broke off or `signal` fired (checked between events, so a
 * cancel stops the call however the transport reacts), and whatever `onText` throws.
 */
async function collectStream(
  events: AsyncIterable<ConverseStreamOutput> | undefined,
  model: string,
  signal: AbortSignal | undefined,
  onText: (text: string) => void,
): Promise<ConverseCommandOutput> {
  if (events === undefined) throw new BrokenStream('the answer has no stream');
  const blocks: { text?: string; toolUse?: { toolUseId?: string; name?: string; input: string } }[] = [];
  let stopReason: ConverseCommandOutput['stopReason'];
  let usage: ConverseCommandOutput['usage'];
  const iterator = events[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      if (signal?.aborted) throw new BrokenStream('aborted', { cause: signal.reason });
      let next: IteratorResult<ConverseStreamOutput>;
      try {
        next = await iterator.next();
      } catch (error) {
        throw new BrokenStream(describe(error), { cause: error, retriable: retriableMidStream(error) });
      }
      if (next.done) {
        finished = true;
        break;
      }
      const event = next.value;
      const exception = streamException(event);
      if (exception !== undefined) {
        throw new BrokenStream(describe(exception), {
          cause: exception,
          retriable: retriableMidStream(exception),
        });
      }
      if (event.contentBlockStart?.start?.toolUse !== undefined) {
        const { toolUseId, name } = event.contentBlockStart.start.toolUse;
        blocks[blockIndex(event.contentBlockStart.contentBlockIndex ?? blocks.length, model)] = {
          toolUse: { ...(toolUseId ? { toolUseId } : {}), ...(name ? { name } : {}), input: '' },
        };
      }
      const delta = event.contentBlockDelta;
      if (delta !== undefined) {
        const index = blockIndex(delta.contentBlockIndex ?? 0, model);
        if (delta.delta?.text !== undefined && delta.delta.text !== '') {
          blocks[index] ??= { text: '' };
          const block = blocks[index];
          block.text = (block.text ?? '') + delta.delta.text;
          onText(delta.delta.text);
        }
        if (delta.delta?.toolUse?.input !== undefined) {
          blocks[index] ??= { toolUse: { input: '' } };
          const block = blocks[index];
          block.toolUse ??= { input: '' };
          block.toolUse.input += delta.delta.toolUse.input;
        }
      }
      if (event.messageStop !== undefined) stopReason = event.messageStop.stopReason;
      if (event.metadata?.usage !== undefined) usage = event.metadata.usage;
    }
  } finally {
    // Stops reading what is left after a failure or a cancel, which frees the connection.
    if (!finished) iterator.return?.()?.catch(() => undefined);
  }
  if (stopReason === undefined) throw new BrokenStream('the stream ended before the answer did');
  const content: ContentBlock[] = [];
  for (const block of blocks) {
    if (block?.text !== undefined) content.push({ text: block.text });
    if (block?.toolUse !== undefined) content.push({ toolUse: toolUseOf(block.toolUse, model) });
  }
  return {
    output: { message: { role: 'assistant', content } },
    stopReason,
    usage,
    metrics: undefined,
    $metadata: {},
  };
}

function blockIndex(index: number, model: string): number {
  if (Number.isInteger(index) && index >= 0 && index <= MAX_BLOCK_INDEX) return index;
  throw new NonRetriableError(`${model} streamed a content block with index ${index}`);
}

function toolUseOf(block: { toolUseId?: string; name?: string; input: string }, model: string): ToolUseBlock {
  let input: Document = {};
  if (block.input.trim() !== '') {
    try {
      input = JSON.parse(block.input) as Document;
    } catch (error) {
      throw new NonRetriableError(
        `${model} called tool ${block.name ?? '(no name)'} with input that is not JSON: ${block.input.slice(0, 200)}`,
        { cause: error },
      );
    }
  }
  return { toolUseId: block.toolUseId, name: block.name, input };
}

/** An exception sent as an event of the stream, as the Error the SDK would have thrown. */
function streamException(event: ConverseStreamOutput): Error | undefined {
  const exceptions = {
    internalServerException: event.internalServerException,
    modelStreamErrorException: event.modelStreamErrorException,
    serviceUnavailableException: event.serviceUnavailableException,
    throttlingException: event.throttlingException,
    validationException: event.validationException,
  };
  for (const [key, value] of Object.entries(exceptions)) {
    if (value === undefined) continue;
    const name = key[0]?.toUpperCase() + key.slice(1);
    return Object.assign(new Error(value.message ?? name), { name });
  }
  return undefined;
}

/**
 * Whether a stream that broke off with `error` is worth starting again: a lost connection or a failure of the
 * model or service is (ModelStreamErrorException says so itself); a request the service refuses is not.
 */
function retriableMidStream(error: unknown): boolean {
  const e = (error ?? {}) as { name?: string; $metadata?: { httpStatusCode?: number } };
  if (e.name === 'ValidationException' || e.name === 'AccessDeniedException') return false;
  const status = e.$metadata?.httpStatusCode;
  return status === undefined || isRetriableStatus(status);
}

/** By the SDK error's HTTP status and name: throttling, 5xx, timeouts retry via SQS; the rest will not pass. */
function classify(error: unknown, model: string, signal: AbortSignal | undefined): Error {
  if (isAbort(error, signal)) return abortedError(model, error);
  const e = (error ?? {}) as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  return asCrumbsError(
    error,
    `${model} answered ${status ?? 'no status'}: ${name}: ${e.message ?? String(error)}`,
  );
}

/** Converse counts cache reads apart from `inputTokens`; crumbs' usage counts them among the input tokens. */
function bedrockUsage(
  usage: { inputTokens?: number; outputTokens?: number; cacheReadInputTokens?: number } | undefined,
): LlmUsage {
  const cached = usage?.cacheReadInputTokens;
  return {
    inputTokens: usage?.inputTokens === undefined ? undefined : usage.inputTokens + (cached ?? 0),
    outputTokens: usage?.outputTokens,
    ...(cached !== undefined && cached > 0 ? { cachedInputTokens: cached } : {}),
  };
}
