/**
 * Bedrock streaming (`onDelta`) through `aws-sdk-client-mock`: the adapter sends a ConverseStreamCommand and reads
 * the event stream the mock answers with (an async generator per call, so a retry gets a fresh stream).
 */
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  type ConverseStreamOutput,
  ModelStreamErrorException,
} from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type { LlmDelta, LlmRequest } from '#shared/ports/llm.ts';

const bedrock = mockClient(BedrockRuntimeClient);
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';

function router(maxRetries = 1): LlmRouter {
  return new LlmRouter({
    env: {},
    bedrockClient: new BedrockRuntimeClient({ region: 'eu-west-1' }),
    maxRetries,
  });
}

function ask(extra: Partial<LlmRequest> = {}): LlmRequest {
  return {
    model: `bedrock/${MODEL}`,
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  };
}

const text = (t: string, index = 0): ConverseStreamOutput => ({
  contentBlockDelta: { contentBlockIndex: index, delta: { text: t } },
});
const stop = (stopReason: 'end_turn' | 'tool_use'): ConverseStreamOutput => ({
  messageStop: { stopReason },
});
const metadata = (
  inputTokens: number,
  outputTokens: number,
  cacheReadInputTokens?: number,
): ConverseStreamOutput => ({
  metadata: {
    usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, cacheReadInputTokens },
    metrics: { latencyMs: 10 },
  },
});

/** The events of one answer, then (optionally) a failure while reading on. */
async function* events(
  list: ConverseStreamOutput[],
  failure?: unknown,
): AsyncGenerator<ConverseStreamOutput> {
  yield { messageStart: { role: 'assistant' } };
  for (const event of list) yield event;
  if (failure !== undefined) throw failure;
}

/** The mock answers the n-th ConverseStreamCommand with `attempts[n]`'s stream. */
function streams(...attempts: (() => AsyncIterable<ConverseStreamOutput>)[]): void {
  let n = 0;
  bedrock.on(ConverseStreamCommand).callsFake(() => {
    const next = attempts[Math.min(n++, attempts.length - 1)];
    if (next === undefined) throw new Error('no stream scripted');
    return { stream: next(), $metadata: {} };
  });
}

function shown(deltas: LlmDelta[]): string {
  return deltas.reduce((t, d) => (d.type === 'reset' ? '' : t + d.text), '');
}

beforeEach(() => bedrock.reset());

describe('LlmRouter streaming from Bedrock (ConverseStream)', () => {
  it('hands on text deltas in order and answers their text, stop reason and usage', async () => {
    streams(() =>
      events([
        text('Hello'),
        text(', '),
        text('world.'),
        { contentBlockStop: { contentBlockIndex: 0 } },
        stop('end_turn'),
        metadata(30, 3, 100),
      ]),
    );
    const deltas: LlmDelta[] = [];
    const out = await router().generate(ask({ onDelta: (d) => deltas.push(d) }));
    expect(deltas).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ', ' },
      { type: 'text', text: 'world.' },
    ]);
    expect(out).toEqual({
      text: 'Hello, world.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 130, outputTokens: 3, cachedInputTokens: 100 },
      model: `bedrock/${MODEL}`,
    });
    expect(bedrock.commandCalls(ConverseCommand)).toHaveLength(0);
  });

  it('sends the request a plain call sends, through ConverseStreamCommand, with the abort signal', async () => {
    streams(() => events([text('ok'), stop('end_turn')]));
    bedrock.on(ConverseCommand).resolves({
      output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
      stopReason: 'end_turn',
    });
    const controller = new AbortController();
    const request = ask({ temperature: 0.1, maxOutputTokens: 50, signal: controller.signal });
    await router().generate({ ...request, onDelta: () => undefined });
    await router().generate(request);
    const streamed = bedrock.commandCalls(ConverseStreamCommand)[0];
    const plain = bedrock.commandCalls(ConverseCommand)[0];
    expect(streamed?.args[0].input).toEqual(plain?.args[0].input);
    expect((streamed?.args as unknown[] | undefined)?.[1]).toEqual({ abortSignal: controller.signal });
  });

  it('puts tool uses together from their start and input pieces, decoding names, streaming only the text', async () => {
    streams(() =>
      events([
        text('Let me check.'),
        { contentBlockStop: { contentBlockIndex: 0 } },
        {
          contentBlockStart: {
            contentBlockIndex: 1,
            start: { toolUse: { toolUseId: 'tu_1', name: 'context__build' } },
          },
        },
        { contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: '{"sour' } } } },
        { contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: 'ces":["a"' } } } },
        { contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: '],"limit":3}' } } } },
        { contentBlockStop: { contentBlockIndex: 1 } },
        {
          contentBlockStart: {
            contentBlockIndex: 2,
            start: { toolUse: { toolUseId: 'tu_2', name: 'calculator' } },
          },
        },
        { contentBlockStop: { contentBlockIndex: 2 } },
        stop('tool_use'),
        metadata(40, 12),
      ]),
    );
    const deltas: LlmDelta[] = [];
    const tools = [
      { name: 'context.build', description: 'build', inputSchema: { type: 'object' } },
      { name: 'calculator', description: 'math', inputSchema: { type: 'object' } },
    ];
    const out = await router().generate(ask({ tools, onDelta: (d) => deltas.push(d) }));
    expect(out.toolCalls).toEqual([
      { id: 'tu_1', name: 'context.build', input: { sources: ['a'], limit: 3 } },
      // A tool use without input pieces is called with an empty object, as Converse reports it.
      { id: 'tu_2', name: 'calculator', input: {} },
    ]);
    expect(out.finishReason).toBe('tool-calls');
    expect(out.text).toBe('Let me check.');
    expect(deltas).toEqual([{ type: 'text', text: 'Let me check.' }]);
  });

  it('refuses streamed tool input that is not JSON, naming the tool', async () => {
    streams(() =>
      events([
        {
          contentBlockStart: {
            contentBlockIndex: 0,
            start: { toolUse: { toolUseId: 't', name: 'calculator' } },
          },
        },
        { contentBlockDelta: { contentBlockIndex: 0, delta: { toolUse: { input: '{"expr' } } } },
        stop('tool_use'),
      ]),
    );
    const call = router().generate(ask({ onDelta: () => undefined }));
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/called tool calculator with input that is not JSON/);
  });

  it('refuses a content block with an index far off rather than allocating for it', async () => {
    streams(() => events([text('x', 1_000_000_000), stop('end_turn')]));
    const call = router().generate(ask({ onDelta: () => undefined }));
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/content block with index 1000000000/);
  });

  const breaks: [string, () => AsyncIterable<ConverseStreamOutput>][] = [
    [
      'a lost connection',
      () =>
        events(
          [text('Partial'), text(' answer')],
          Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
        ),
    ],
    [
      // How the SDK reports an exception event of the stream: it throws the modeled exception.
      'a ModelStreamErrorException the SDK throws',
      () =>
        events(
          [text('Partial'), text(' answer')],
          new ModelStreamErrorException({ message: 'model failed', $metadata: {} }),
        ),
    ],
    [
      'a ModelStreamErrorException event',
      () =>
        events([
          text('Partial'),
          text(' answer'),
          { modelStreamErrorException: { message: 'model failed' } } as ConverseStreamOutput,
        ]),
    ],
    ['an end before messageStop', () => events([text('Partial'), text(' answer')])],
  ];
  for (const [name, broken] of breaks) {
    it(`starts a stream broken by ${name} again after a reset, and answers the retry's text only`, async () => {
      streams(broken, () => events([text('The'), text(' retry.'), stop('end_turn'), metadata(5, 2)]));
      const deltas: LlmDelta[] = [];
      const out = await router(1).generate(ask({ onDelta: (d) => deltas.push(d) }));
      expect(deltas.map((d) => (d.type === 'text' ? d.text : 'RESET'))).toEqual([
        'Partial',
        ' answer',
        'RESET',
        'The',
        ' retry.',
      ]);
      expect(out.text).toBe('The retry.');
      expect(shown(deltas)).toBe(out.text);
      expect(out.usage).toEqual({ inputTokens: 5, outputTokens: 2 });
      expect(bedrock.commandCalls(ConverseStreamCommand)).toHaveLength(2);
    });
  }

  it('gives up as retriable once the retries are used', async () => {
    streams(() =>
      events([text('Partial')], Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })),
    );
    const deltas: LlmDelta[] = [];
    const call = router(1).generate(ask({ onDelta: (d) => deltas.push(d) }));
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/the stream broke off: socket hang up/);
    expect(bedrock.commandCalls(ConverseStreamCommand)).toHaveLength(2);
    expect(deltas.map((d) => d.type)).toEqual(['text', 'reset', 'text']);
  });

  it('does not start again a stream the service refused mid-way (ValidationException)', async () => {
    streams(() =>
      events([
        text('Partial'),
        { validationException: { message: 'input too long' } } as ConverseStreamOutput,
      ]),
    );
    const call = router(2).generate(ask({ onDelta: () => undefined }));
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/input too long/);
    expect(bedrock.commandCalls(ConverseStreamCommand)).toHaveLength(1);
  });

  it('reports a refused request as a plain call does, without a stream of its own retries', async () => {
    bedrock.on(ConverseStreamCommand).rejects(
      Object.assign(new Error('Rate exceeded'), {
        name: 'ThrottlingException',
        $metadata: { httpStatusCode: 429 },
      }),
    );
    const call = router(1).generate(ask({ onDelta: () => undefined }));
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/answered 429: ThrottlingException: Rate exceeded/);
    // The client's maxAttempts retries the request itself; the adapter does not multiply them.
    expect(bedrock.commandCalls(ConverseStreamCommand)).toHaveLength(1);
  });

  it('stops when the signal aborts mid-stream and reports the call as aborted, without retrying', async () => {
    const controller = new AbortController();
    // The mocked stream goes on after the abort (the SDK's would fail): the adapter itself stops between events.
    streams(() => events([text('one'), text(' two'), text(' three'), stop('end_turn')]));
    const deltas: LlmDelta[] = [];
    const call = router(2).generate(
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
    expect(bedrock.commandCalls(ConverseStreamCommand)).toHaveLength(1);
  });

  it('streams structured output and answers the JSON taken out of it', async () => {
    streams(() => events([text('Here: {"city":'), text(' "Oslo"}'), stop('end_turn')]));
    const deltas: LlmDelta[] = [];
    const out = await router().generate(
      ask({ responseSchema: { type: 'object' }, onDelta: (d) => deltas.push(d) }),
    );
    expect(out.text).toBe('{"city": "Oslo"}');
    expect(shown(deltas)).toBe('Here: {"city": "Oslo"}');
  });
});
