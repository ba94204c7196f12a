/**
 * Streaming from an OpenAI-compatible server (`onDelta`), over real HTTP against the scripted loopback server of
 * test/support/openai-stream-server.ts: deltas as the server sends them, the response assembled from the stream
 * as a plain call would return it, retries of a stream that breaks off, abort, and plain calls left as they were.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type { LlmDelta, LlmRequest } from '#shared/ports/llm.ts';
import {
  DEFAULT_USAGE,
  type ScriptedOpenAiOptions,
  type ScriptedOpenAiServer,
  startScriptedOpenAiServer,
} from '../../../support/openai-stream-server.ts';

let server: ScriptedOpenAiServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: ScriptedOpenAiOptions): Promise<LlmRouter> {
  server = await startScriptedOpenAiServer(options);
  return new LlmRouter({ env: { OPENAI_COMPATIBLE_BASE_URL: server.baseUrl }, maxRetries: 1 });
}

function ask(extra: Partial<LlmRequest> = {}): LlmRequest {
  return {
    model: 'openai-compatible/scripted',
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  };
}

/** What a consumer shows: the text deltas, dropped at each reset. */
function shown(deltas: LlmDelta[]): string {
  return deltas.reduce((text, d) => (d.type === 'reset' ? '' : text + d.text), '');
}

function recorded(): Record<string, unknown>[] {
  if (server === undefined) throw new Error('no server');
  return server.requests;
}

describe('LlmRouter streaming from an OpenAI-compatible server', () => {
  it('hands on the text as the server sends it and answers the text, finish reason and usage', async () => {
    const chunks = ['The', ' answer', ' is', ' forty', '-two', '.'];
    const llm = await start({ chunks, delayMs: 20 });
    const deltas: LlmDelta[] = [];
    let writtenAtFirstDelta: number | undefined;
    const out = await llm.generate(
      ask({
        onDelta: (d) => {
          writtenAtFirstDelta ??= server?.chunksWritten;
          deltas.push(d);
        },
      }),
    );
    expect(deltas).toEqual(chunks.map((text) => ({ type: 'text', text })));
    expect(out.text).toBe('The answer is forty-two.');
    expect(shown(deltas)).toBe(out.text);
    // The first piece arrived while the server still had pieces to send: streamed, not buffered.
    expect(writtenAtFirstDelta).toBeLessThan(chunks.length);
    expect(out.finishReason).toBe('stop');
    expect(out.toolCalls).toEqual([]);
    expect(out.model).toBe('openai-compatible/scripted');
    expect(out.usage).toEqual({
      inputTokens: DEFAULT_USAGE.prompt_tokens,
      outputTokens: DEFAULT_USAGE.completion_tokens,
      cachedInputTokens: DEFAULT_USAGE.prompt_tokens_details.cached_tokens,
    });
    expect(recorded()[0]).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('sends a plain request, without any stream field, when no one asks for deltas', async () => {
    const llm = await start({});
    const plain = await llm.generate(ask());
    const streamed = await llm.generate(ask({ onDelta: () => undefined }));
    const [plainBody, streamedBody] = recorded();
    expect(plainBody).toEqual({
      model: 'scripted',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(streamedBody).toEqual({ ...plainBody, stream: true, stream_options: { include_usage: true } });
    // The same answer either way.
    expect(streamed).toEqual(plain);
  });

  it('puts tool calls together from many pieces as the plain call returns them, streaming only text', async () => {
    const options: ScriptedOpenAiOptions = {
      chunks: ['Let me', ' look.'],
      toolCalls: [
        { id: 'call_1', name: 'context__build', arguments: '{"sources":["a","b"],"limit":3}' },
        { id: 'call_2', name: 'calculator', arguments: '{"expression":"17*23"}' },
      ],
      argumentPieces: 7,
    };
    const llm = await start(options);
    const tools = [
      { name: 'context.build', description: 'build', inputSchema: { type: 'object' } },
      { name: 'calculator', description: 'math', inputSchema: { type: 'object' } },
    ];
    const deltas: LlmDelta[] = [];
    const streamed = await llm.generate(ask({ tools, onDelta: (d) => deltas.push(d) }));
    const plain = await llm.generate(ask({ tools }));
    expect(streamed.toolCalls).toEqual([
      { id: 'call_1', name: 'context.build', input: { sources: ['a', 'b'], limit: 3 } },
      { id: 'call_2', name: 'calculator', input: { expression: '17*23' } },
    ]);
    expect(streamed).toEqual(plain);
    expect(streamed.finishReason).toBe('tool-calls');
    expect(streamed.text).toBe('Let me look.');
    expect(deltas).toEqual([
      { type: 'text', text: 'Let me' },
      { type: 'text', text: ' look.' },
    ]);
  });

  it('refuses streamed tool arguments that are not JSON, naming the tool, without retrying', async () => {
    const llm = await start({
      chunks: [],
      toolCalls: [{ id: 'c', name: 'calculator', arguments: '{"expr' }],
    });
    const call = llm.generate(ask({ onDelta: () => undefined }));
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/called tool calculator with arguments that are not JSON/);
    expect(recorded()).toHaveLength(1);
  });

  for (const breakWith of ['reset', 'end', 'error'] as const) {
    it(`retries a stream that breaks off (${breakWith}) after a reset, and answers the retry's text only`, async () => {
      const llm = await start({
        chunks: (attempt) => (attempt === 0 ? ['Partial', ' answer', ' lost'] : ['The', ' retry', '.']),
        breakAfter: 2,
        breakWith,
      });
      const deltas: LlmDelta[] = [];
      const out = await llm.generate(ask({ onDelta: (d) => deltas.push(d) }));
      expect(deltas.map((d) => (d.type === 'text' ? d.text : 'RESET'))).toEqual([
        'Partial',
        ' answer',
        'RESET',
        'The',
        ' retry',
        '.',
      ]);
      const reset = deltas.find((d) => d.type === 'reset');
      expect(reset?.type === 'reset' && reset.reason).toMatch(/broke off/);
      expect(out.text).toBe('The retry.');
      expect(shown(deltas)).toBe(out.text);
      expect(recorded()).toHaveLength(2);
      expect(recorded()[1]).toEqual(recorded()[0]);
    });
  }

  it('sends no reset when the stream broke before any text', async () => {
    const llm = await start({ breakAfter: 0 });
    const deltas: LlmDelta[] = [];
    const out = await llm.generate(ask({ onDelta: (d) => deltas.push(d) }));
    expect(deltas.every((d) => d.type === 'text')).toBe(true);
    expect(shown(deltas)).toBe(out.text);
    expect(out.text).toBe('Hello from the scripted server.');
  });

  it('gives up as retriable once the retries are used, as a lost connection does', async () => {
    const llm = await start({ breakAfter: 1, breakAttempts: 2 });
    const deltas: LlmDelta[] = [];
    const call = llm.generate(ask({ onDelta: (d) => deltas.push(d) }));
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/openai-compatible\/scripted: the answer from .* broke off/);
    expect(recorded()).toHaveLength(2);
    // A reset before the retry; the last attempt's text is left to the failed call.
    expect(deltas.map((d) => d.type)).toEqual(['text', 'reset', 'text']);
  });

  it('does not retry an error event whose code says the request is bad', async () => {
    const llm = await start({ breakAfter: 1, breakWith: 'error', errorCode: 400 });
    const call = llm.generate(ask({ onDelta: () => undefined }));
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/scripted error 400/);
    expect(recorded()).toHaveLength(1);
  });

  it('stops when the signal aborts mid-stream and reports the call as aborted, without retrying', async () => {
    const llm = await start({ chunks: ['one', ' two', ' three', ' four', ' five'], delayMs: 30 });
    const controller = new AbortController();
    const deltas: LlmDelta[] = [];
    const call = llm.generate(
      ask({
        signal: controller.signal,
        onDelta: (d) => {
          deltas.push(d);
          controller.abort();
        },
      }),
    );
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/aborted/);
    expect(deltas).toEqual([{ type: 'text', text: 'one' }]);
    expect(recorded()).toHaveLength(1);
  });

  it('fails the call with what the consumer throws, without retrying', async () => {
    const llm = await start({});
    const call = llm.generate(
      ask({
        onDelta: () => {
          throw new Error('consumer gone');
        },
      }),
    );
    await expect(call).rejects.toThrow('consumer gone');
    expect(recorded()).toHaveLength(1);
  });

  it('streams structured output and answers the JSON taken out of it', async () => {
    const llm = await start({ chunks: ['```json\n{"city":', ' "Oslo"}', '\n```'] });
    const deltas: LlmDelta[] = [];
    const schema = { type: 'object', properties: { city: { type: 'string' } } };
    const out = await llm.generate(ask({ responseSchema: schema, onDelta: (d) => deltas.push(d) }));
    expect(out.text).toBe('{"city": "Oslo"}');
    expect(shown(deltas)).toBe('```json\n{"city": "Oslo"}\n```');
    expect(recorded()[0]).toMatchObject({ stream: true, response_format: { type: 'json_object' } });
  });

  it('takes a whole completion from a server that does not stream as one piece', async () => {
    const llm = await start({ streamAs: 'json' });
    const deltas: LlmDelta[] = [];
    const out = await llm.generate(ask({ onDelta: (d) => deltas.push(d) }));
    expect(deltas).toEqual([{ type: 'text', text: 'Hello from the scripted server.' }]);
    expect(out.text).toBe('Hello from the scripted server.');
    expect(out.usage.inputTokens).toBe(DEFAULT_USAGE.prompt_tokens);
  });
});

/** A fetch answering with an event stream cut into `pieces` exactly as given (splits, CRLF, comments). */
function streamingFetch(pieces: (string | Uint8Array)[]): typeof globalThis.fetch {
  return async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const piece of pieces) {
            controller.enqueue(typeof piece === 'string' ? new TextEncoder().encode(piece) : piece);
          }
          controller.close();
        },
      }),
      { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' } },
    );
}

describe('LlmRouter reading an OpenAI-compatible stream as it comes off the wire', () => {
  const llm = (pieces: (string | Uint8Array)[]) =>
    new LlmRouter({
      env: { OPENAI_COMPATIBLE_BASE_URL: 'http://x.invalid/v1' },
      fetch: streamingFetch(pieces),
    });

  it('reads events split anywhere across reads, with CRLF line ends, comments and multi-byte characters', async () => {
    const chunk = (content: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}`;
    const wire =
      `: keep-alive\r\n\r\n${chunk('Grüß')}\r\n\r\n${chunk(' dich 👋')}\r\n\r\n` +
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\r\n\r\n` +
      `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } })}\r\n\r\ndata: [DONE]\r\n\r\n`;
    // Cut into 7-byte pieces, so events, lines and characters are split between reads.
    const bytes = new TextEncoder().encode(wire);
    const pieces: Uint8Array[] = [];
    for (let at = 0; at < bytes.length; at += 7) pieces.push(bytes.subarray(at, at + 7));
    const router = llm(pieces);
    const deltas: LlmDelta[] = [];
    const out = await router.generate(ask({ onDelta: (d) => deltas.push(d) }));
    expect(out.text).toBe('Grüß dich 👋');
    expect(shown(deltas)).toBe(out.text);
    expect(out.usage).toEqual({ inputTokens: 3, outputTokens: 2 });
    expect(out.finishReason).toBe('stop');
  });

  it('refuses a tool call with an index far off rather than allocating for it', async () => {
    const call = { index: 1_000_000_000, id: 'c', function: { name: 'calculator', arguments: '{}' } };
    const wire = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [call] } }] })}\n\n`;
    const out = llm([wire]).generate(ask({ onDelta: () => undefined }));
    await expect(out).rejects.toBeInstanceOf(NonRetriableError);
    await expect(out).rejects.toThrow(/tool call with index 1000000000/);
  });

  it('refuses an event that is not JSON without retrying', async () => {
    const out = llm(['data: {"choices": [\n\n']).generate(ask({ onDelta: () => undefined }));
    await expect(out).rejects.toBeInstanceOf(NonRetriableError);
    await expect(out).rejects.toThrow(/streamed an event that is not JSON/);
  });

  it('retries a throttled request before its stream begins, with nothing to reset', async () => {
    const bodies: unknown[] = [];
    const stream = streamingFetch([
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'after the wait' }, finish_reason: 'stop' }] })}\n\n`,
    ]);
    const fetch: typeof globalThis.fetch = async (url, init) => {
      bodies.push(JSON.parse(String(init?.body)));
      if (bodies.length === 1) {
        return new Response(JSON.stringify({ error: { message: 'slow down' } }), {
          status: 429,
          headers: { 'retry-after-ms': '10' },
        });
      }
      return stream(url, init);
    };
    const router = new LlmRouter({ env: { OPENAI_COMPATIBLE_BASE_URL: 'http://x.invalid/v1' }, fetch });
    const deltas: LlmDelta[] = [];
    const out = await router.generate(ask({ onDelta: (d) => deltas.push(d) }));
    expect(out.text).toBe('after the wait');
    expect(deltas).toEqual([{ type: 'text', text: 'after the wait' }]);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toMatchObject({ stream: true });
  });
});
