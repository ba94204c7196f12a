/**
 * A loopback OpenAI-compatible chat-completions server that answers from a script, for tests of streaming model
 * output. `POST …/chat/completions` with `stream: true` is answered as OpenAI streams (server-sent events: a role
 * chunk, one chunk per text piece, tool-call chunks, the finish reason, a usage chunk, `data: [DONE]`), with a pause
 * before each chunk; without it, as one JSON completion of the whole text. Every request body is recorded.
 *
 *   const server = await startScriptedOpenAiServer({ chunks: ['Hel', 'lo'], delayMs: 50, breakAfter: 1 });
 *   // OPENAI_COMPATIBLE_BASE_URL=server.baseUrl, model `openai-compatible/<anything>`
 *   // the first request's stream breaks after 'Hel'; the retry streams 'Hel', 'lo' and ends
 *   server.requests  // the JSON bodies received, in order
 *   await server.close();
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

export interface ScriptedToolCall {
  id: string;
  /** The name on the wire (crumbs encodes `a.b` as `a__b`). */
  name: string;
  /** The arguments' JSON text; streamed in `argumentPieces` pieces. */
  arguments: string;
}

export interface ScriptedOpenAiOptions {
  /**
   * The answer's text in the pieces it is streamed as (joined for a plain answer); a function gets the attempt
   * (0 for the first request) so a retry can answer differently. @default `DEFAULT_CHUNKS`
   */
  chunks?: string[] | ((attempt: number) => string[]);
  /** Tool calls after the text; the answer then finishes with `tool_calls`. @default none */
  toolCalls?: ScriptedToolCall[];
  /** Into how many pieces each tool call's arguments are cut when streamed. @default 4 */
  argumentPieces?: number;
  /** Pause before each streamed chunk, in ms. @default 0 */
  delayMs?: number;
  /** Break the stream of the first `breakAttempts` requests after this many text and tool-call chunks. */
  breakAfter?: number;
  /** How many requests, from the first, break. @default 1 */
  breakAttempts?: number;
  /**
   * How a stream breaks: `reset` destroys the connection, `end` ends the body cleanly without a finish reason or
   * [DONE], `error` sends an error event (`{"error": {...}}`) and ends. @default 'reset'
   */
  breakWith?: 'reset' | 'end' | 'error';
  /** The `code` of the error event (`breakWith: 'error'`): a 4xx says the request itself is bad. @default 502 */
  errorCode?: number;
  /** The usage reported in the last chunk (streamed) or the completion (plain). */
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
  };
  /** Answer with this SSE content type, or pretend to be a server that ignores `stream` (`json`). @default 'sse' */
  streamAs?: 'sse' | 'json';
}

export interface ScriptedOpenAiServer {
  /** The base URL (…/v1), e.g. for OPENAI_COMPATIBLE_BASE_URL. */
  readonly baseUrl: string;
  /** The JSON body of every request, in the order they came. */
  readonly requests: Record<string, unknown>[];
  /** How many text and tool-call chunks have been written so far, over all requests. */
  readonly chunksWritten: number;
  close(): Promise<void>;
}

export const DEFAULT_CHUNKS = ['Hello', ' from', ' the', ' scripted', ' server.'];
export const DEFAULT_USAGE = {
  prompt_tokens: 12,
  completion_tokens: 5,
  prompt_tokens_details: { cached_tokens: 3 },
};

export async function startScriptedOpenAiServer(
  options: ScriptedOpenAiOptions = {},
): Promise<ScriptedOpenAiServer> {
  const requests: Record<string, unknown>[] = [];
  const counter = { written: 0 };
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      const attempt = requests.length;
      requests.push(body);
      if (body.stream === true && options.streamAs !== 'json') {
        void stream(res, options, attempt, String(body.model), counter).catch(() => res.destroy());
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(completion(options, attempt, String(body.model))));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get chunksWritten() {
      return counter.written;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function chunksOf(options: ScriptedOpenAiOptions, attempt: number): string[] {
  const { chunks = DEFAULT_CHUNKS } = options;
  return typeof chunks === 'function' ? chunks(attempt) : chunks;
}

function completion(options: ScriptedOpenAiOptions, attempt: number, model: string): Record<string, unknown> {
  const calls = options.toolCalls ?? [];
  return {
    id: `chatcmpl-${attempt}`,
    object: 'chat.completion',
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: chunksOf(options, attempt).join('') || (calls.length > 0 ? null : ''),
          ...(calls.length > 0
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
        finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: options.usage ?? DEFAULT_USAGE,
  };
}

async function stream(
  res: ServerResponse,
  options: ScriptedOpenAiOptions,
  attempt: number,
  model: string,
  counter: { written: number },
): Promise<void> {
  const calls = options.toolCalls ?? [];
  const pieces = Math.max(1, options.argumentPieces ?? 4);
  const breaks = options.breakAfter !== undefined && attempt < (options.breakAttempts ?? 1);
  const chunk = (choice: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      id: `chatcmpl-${attempt}`,
      object: 'chat.completion.chunk',
      model,
      choices: choice ? [{ index: 0, ...choice }] : [],
      ...extra,
    });
  // The chunks that carry the answer (text, then tool calls piece by piece): the ones `breakAfter` counts.
  const answer: string[] = chunksOf(options, attempt).map((text) => chunk({ delta: { content: text } }));
  calls.forEach((call, index) => {
    const size = Math.ceil(call.arguments.length / pieces) || 1;
    answer.push(
      chunk({
        delta: {
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        },
      }),
    );
    for (let at = 0; at < call.arguments.length; at += size) {
      answer.push(
        chunk({
          delta: { tool_calls: [{ index, function: { arguments: call.arguments.slice(at, at + size) } }] },
        }),
      );
    }
  });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  await write(res, chunk({ delta: { role: 'assistant', content: '' } }));
  for (const [sent, data] of answer.entries()) {
    if (breaks && sent === options.breakAfter) {
      const how = options.breakWith ?? 'reset';
      if (how === 'reset') res.destroy();
      else if (how === 'error') {
        const code = options.errorCode ?? 502;
        res.end(`data: ${JSON.stringify({ error: { message: `scripted error ${code}`, code } })}\n\n`);
      } else res.end();
      return;
    }
    if (options.delayMs) await delay(options.delayMs);
    if (res.destroyed) return;
    await write(res, data);
    counter.written++;
  }
  if (breaks && options.breakAfter !== undefined && options.breakAfter >= answer.length) {
    // Asked to break after every chunk of the answer: the finish and [DONE] never come.
    res.destroy();
    return;
  }
  if (options.delayMs) await delay(options.delayMs);
  await write(res, chunk({ delta: {}, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }));
  await write(res, chunk(undefined, { usage: options.usage ?? DEFAULT_USAGE }));
  res.end('data: [DONE]\n\n');
}

/** One event, resolved once it is handed to the socket: a break after it cannot swallow it. */
function write(res: ServerResponse, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(`data: ${data}\n\n`, (error) => (error ? reject(error) : resolve()));
  });
}
