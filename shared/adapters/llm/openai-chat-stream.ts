/**
 * A streamed chat completion (`stream: true`) read into the completion a plain request would have returned: the
 * answer's text is handed on piece by piece as it arrives, tool calls are put together from their pieces (by
 * `index`: id and name from the first piece, the `arguments` text concatenated), and the finish reason and usage
 * (the last chunk, asked for with `stream_options.include_usage`) are kept. The events are parsed by
 * `eventsource-parser`, which handles what hand-split lines get wrong (CRLF, events split across reads, comments).
 *
 * An answer that ends before `data: [DONE]` or a finish reason, loses its connection, or carries an error event has
 * broken off (`BrokenStream`): the caller retries it as a failed connection.
 */
import { createParser } from 'eventsource-parser';
import { isRetriableStatus, NonRetriableError } from '#shared/domain/errors.ts';
import { BrokenStream, describe } from './call-errors.ts';

/** Message content: a string, or (some servers) an array of typed parts. */
export type ChatContent = string | null | { type?: string; text?: string }[] | undefined;

export interface ChatCompletion {
  choices?: {
    message?: {
      content?: ChatContent;
      tool_calls?: { id?: string; function?: { name?: string; arguments?: unknown } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: ChatUsage;
}

interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

interface ChatChunk {
  choices?: {
    index?: number;
    delta?: {
      content?: ChatContent;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: ChatUsage | null;
  error?: { message?: unknown; code?: unknown } | string;
}

/** One event larger than this is not a chat chunk (a chunk carries a few tokens): the answer is refused. */
const MAX_EVENT_CHARS = 1024 * 1024;
/** Tool calls are kept in an array by the `index` the server gives them: one far off is refused, not allocated. */
const MAX_TOOL_CALL_INDEX = 255;

export function contentText(content: ChatContent): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

/** Whether the server answered with a stream (some ignore `stream: true` and send the whole completion). */
export function isEventStream(response: Response): boolean {
  return /^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '');
}

/**
 * Reads the events of `response` until `[DONE]`, calling `onText` with each piece of the answer's text. Throws
 * `BrokenStream` when the answer broke off or `signal` fired, a NonRetriableError when it is not a
 * chat-completion stream, and whatever `onText` throws.
 */
export async function readChatStream(
  response: Response,
  model: string,
  signal: AbortSignal | undefined,
  onText: (text: string) => void,
): Promise<ChatCompletion> {
  if (response.body === null) throw new BrokenStream('the answer has no body');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const calls: { id?: string; name?: string; args: string }[] = [];
  let finish: string | undefined;
  let usage: ChatUsage | undefined;
  let done = false;
  let stop: Error | undefined;

  const onChunk = (chunk: ChatChunk): void => {
    if (chunk.error !== undefined) {
      stop = streamError(chunk.error);
      return;
    }
    if (chunk.usage) usage = chunk.usage;
    // Only the first choice is read, as in a plain answer (crumbs never asks for n > 1).
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice === undefined) return;
    for (const [position, call] of (choice.delta?.tool_calls ?? []).entries()) {
      const index = call.index ?? position;
      if (!Number.isInteger(index) || index < 0 || index > MAX_TOOL_CALL_INDEX) {
        stop = new NonRetriableError(`${model} streamed a tool call with index ${index}`);
        return;
      }
      calls[index] ??= { args: '' };
      const slot = calls[index];
      if (call.id && slot.id === undefined) slot.id = call.id;
      if (call.function?.name && slot.name === undefined) slot.name = call.function.name;
      if (typeof call.function?.arguments === 'string') slot.args += call.function.arguments;
    }
    if (choice.finish_reason === 'error') {
      stop = new BrokenStream('the server ended the answer with an error');
      return;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
    const piece = contentText(choice.delta?.content);
    if (piece !== '') {
      text += piece;
      onText(piece);
    }
  };

  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (event) => {
      if (done || stop !== undefined) return;
      if (event.data.trim() === '[DONE]') {
        done = true;
        return;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.data);
      } catch {
        stop = new NonRetriableError(
          `${model} streamed an event that is not JSON: ${event.data.slice(0, 200)}`,
        );
        return;
      }
      if (chunk !== null && typeof chunk === 'object') onChunk(chunk as ChatChunk);
    },
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') {
        stop = new NonRetriableError(`${model} streamed an event of more than ${MAX_EVENT_CHARS} characters`);
      }
    },
  });

  try {
    while (!done && stop === undefined) {
      // Checked between reads as well as by fetch: a cancel stops the call even with events already buffered.
      if (signal?.aborted) throw new BrokenStream('aborted', { cause: signal.reason });
      let part: Awaited<ReturnType<typeof reader.read>>;
      try {
        part = await reader.read();
      } catch (error) {
        throw new BrokenStream(describe(error), { cause: error });
      }
      if (part.done) break;
      parser.feed(decoder.decode(part.value, { stream: true }));
    }
  } finally {
    // Stops the download of what is left (after [DONE], or after a failure) and frees the connection.
    reader.cancel().catch(() => undefined);
  }
  if (stop !== undefined) throw stop;
  // A server that closes the stream right after the finish reason, without [DONE], has still answered.
  if (!done && finish === undefined) throw new BrokenStream('the stream ended before the answer did');
  return {
    choices: [
      {
        message: {
          content: text,
          tool_calls: calls
            .filter((call) => call !== undefined)
            .map((call) => ({
              ...(call.id !== undefined ? { id: call.id } : {}),
              function: { name: call.name ?? '', arguments: call.args },
            })),
        },
        finish_reason: finish ?? null,
      },
    ],
    ...(usage !== undefined ? { usage } : {}),
  };
}

/**
 * An error event in the stream (`{"error": {...}}`): retried like a failed connection, unless its code is an HTTP
 * status that says the request itself is bad (OpenRouter puts the status there).
 */
function streamError(error: NonNullable<ChatChunk['error']>): BrokenStream {
  const message =
    typeof error === 'string'
      ? error
      : typeof error.message === 'string'
        ? error.message
        : JSON.stringify(error);
  const code = typeof error === 'string' ? undefined : Number(error.code);
  const retriable = code === undefined || !Number.isInteger(code) || code < 400 || isRetriableStatus(code);
  return new BrokenStream(`the server sent an error: ${message}`, { retriable });
}
