/**
 * Bedrock through `aws-sdk-client-mock`: the adapter builds the Converse request and sends it with the AWS SDK's
 * BedrockRuntimeClient (ConverseCommand), which is what is mocked here.
 */
import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  ServiceUnavailableException,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';

const bedrock = mockClient(BedrockRuntimeClient);
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';

function client(): LlmRouter {
  return new LlmRouter({
    env: { AWS_REGION: 'eu-west-1' },
    bedrockClient: new BedrockRuntimeClient({}),
    maxRetries: 0,
  });
}

beforeEach(() => bedrock.reset());

describe('LlmRouter with Bedrock (Converse through the AWS SDK client)', () => {
  it('counts prompt-cache reads among the input tokens and says how many were cached', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 30, outputTokens: 9, totalTokens: 139, cacheReadInputTokens: 100 },
    });
    const out = await client().generate({
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(out.usage).toEqual({ inputTokens: 130, outputTokens: 9, cachedInputTokens: 100 });
  });

  it('sends the Converse request through ConverseCommand and returns native tool calls', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: {
        message: {
          role: 'assistant',
          content: [
            { toolUse: { toolUseId: 'tooluse_1', name: 'calculator', input: { expression: '17*23' } } },
          ],
        },
      },
      stopReason: 'tool_use',
      usage: { inputTokens: 30, outputTokens: 9, totalTokens: 39 },
      metrics: { latencyMs: 120 },
    });
    const out = await client().generate({
      model: `bedrock/${MODEL}`,
      system: 'Use tools.',
      messages: [{ role: 'user', content: 'what is 17*23?' }],
      tools: [
        {
          name: 'calculator',
          description: 'Evaluates arithmetic',
          inputSchema: {
            type: 'object',
            properties: { expression: { type: 'string' } },
            required: ['expression'],
          },
        },
      ],
      temperature: 0,
    });
    expect(out).toMatchObject({
      toolCalls: [{ id: 'tooluse_1', name: 'calculator', input: { expression: '17*23' } }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 30, outputTokens: 9 },
      model: `bedrock/${MODEL}`,
    });
    const calls = bedrock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]?.args[0].input;
    expect(input?.modelId).toBe(MODEL);
    expect(input?.system).toEqual([{ text: 'Use tools.' }]);
    expect(input?.messages).toEqual([{ role: 'user', content: [{ text: 'what is 17*23?' }] }]);
    expect(input?.inferenceConfig).toMatchObject({ temperature: 0 });
    expect(input?.toolConfig?.tools?.[0]).toMatchObject({
      toolSpec: { name: 'calculator', description: 'Evaluates arithmetic' },
    });
  });

  it('returns a plain answer', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: { message: { role: 'assistant', content: [{ text: '17*23 = 391' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 50, outputTokens: 6, totalTokens: 56 },
    });
    const out = await client().generate({
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [
        { role: 'user', content: 'what is 17*23?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'tooluse_1', name: 'calculator', input: { expression: '17*23' } }],
        },
        {
          role: 'tool',
          results: [{ toolCallId: 'tooluse_1', toolName: 'calculator', output: { result: 391 } }],
        },
      ],
      // Bedrock drops tool history from a request that offers no tools, so the agent keeps offering them.
      tools: [{ name: 'calculator', description: 'arithmetic', inputSchema: { type: 'object' } }],
    });
    expect(out).toMatchObject({ text: '17*23 = 391', finishReason: 'stop', toolCalls: [] });
    const messages = bedrock.commandCalls(ConverseCommand)[0]?.args[0].input.messages;
    expect(messages?.[2]?.content?.[0]).toMatchObject({ toolResult: { toolUseId: 'tooluse_1' } });
  });

  it('turns throttling into a retriable error', async () => {
    bedrock
      .on(ConverseCommand)
      .rejects(new ThrottlingException({ message: 'Too many requests', $metadata: { httpStatusCode: 429 } }));
    await expect(
      client().generate({
        model: `bedrock/${MODEL}`,
        system: 's',
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(RetriableError);
  });
  it('classifies service errors by status and name', async () => {
    const request = {
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [{ role: 'user' as const, content: 'x' }],
    };
    bedrock
      .on(ConverseCommand)
      .rejects(new ServiceUnavailableException({ message: 'busy', $metadata: { httpStatusCode: 503 } }));
    await expect(client().generate(request)).rejects.toBeInstanceOf(RetriableError);

    bedrock
      .on(ConverseCommand)
      .rejects(
        new ValidationException({ message: 'Malformed input request', $metadata: { httpStatusCode: 400 } }),
      );
    const invalid = client().generate(request);
    await expect(invalid).rejects.toBeInstanceOf(NonRetriableError);
    await expect(invalid).rejects.toThrow(
      `bedrock/${MODEL} answered 400: ValidationException: Malformed input request`,
    );

    bedrock
      .on(ConverseCommand)
      .rejects(new AccessDeniedException({ message: 'no model access', $metadata: { httpStatusCode: 403 } }));
    await expect(client().generate(request)).rejects.toBeInstanceOf(NonRetriableError);

    bedrock.on(ConverseCommand).rejects(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    await expect(client().generate(request)).rejects.toBeInstanceOf(RetriableError);
  });

  it('sends tool history as toolUse and toolResult blocks, consecutive results in one user message', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: { message: { role: 'assistant', content: [{ text: 'done' }] } },
      stopReason: 'end_turn',
    });
    await client().generate({
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [
        { role: 'user', content: 'build context and compute 17*23' },
        {
          role: 'assistant',
          content: 'Two calls.',
          toolCalls: [
            { id: 'tu_1', name: 'context.build', input: { sources: [] } },
            { id: 'tu_2', name: 'calculator', input: { expression: '17*23' } },
          ],
        },
        {
          role: 'tool',
          results: [
            { toolCallId: 'tu_1', toolName: 'context.build', output: 'no sources', isError: true },
            { toolCallId: 'tu_2', toolName: 'calculator', output: { result: 391 } },
          ],
        },
        { role: 'user', content: 'and then?' },
      ],
      tools: [
        { name: 'context.build', description: 'Builds context', inputSchema: { type: 'object' } },
        { name: 'calculator', description: 'arithmetic', inputSchema: { type: 'object' } },
      ],
    });
    const input = bedrock.commandCalls(ConverseCommand)[0]?.args[0].input;
    expect(input?.toolConfig?.tools?.map((t) => t.toolSpec?.name)).toEqual(['context__build', 'calculator']);
    expect(input?.messages).toEqual([
      { role: 'user', content: [{ text: 'build context and compute 17*23' }] },
      {
        role: 'assistant',
        content: [
          { text: 'Two calls.' },
          { toolUse: { toolUseId: 'tu_1', name: 'context__build', input: { sources: [] } } },
          { toolUse: { toolUseId: 'tu_2', name: 'calculator', input: { expression: '17*23' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tu_1', content: [{ text: '{"error":"no sources"}' }] } },
          { toolResult: { toolUseId: 'tu_2', content: [{ text: '{"result":391}' }] } },
          { text: 'and then?' },
        ],
      },
    ]);
  });

  it('leaves tool history out of a request that offers no tools (Converse refuses it)', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
      stopReason: 'end_turn',
    });
    await client().generate({
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'calculator', input: {} }] },
        { role: 'tool', results: [{ toolCallId: 't', toolName: 'calculator', output: 1 }] },
        { role: 'user', content: 'again' },
      ],
    });
    const input = bedrock.commandCalls(ConverseCommand)[0]?.args[0].input;
    expect(input?.toolConfig).toBeUndefined();
    expect(input?.messages).toEqual([{ role: 'user', content: [{ text: 'q' }, { text: 'again' }] }]);
  });

  it('returns decoded tool names and maps stop reasons', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: {
        message: {
          role: 'assistant',
          content: [
            { text: 'Building.' },
            { toolUse: { toolUseId: 'tu_9', name: 'context__build', input: { sources: ['a'] } } },
          ],
        },
      },
      stopReason: 'tool_use',
    });
    const request = {
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [{ role: 'user' as const, content: 'x' }],
      tools: [{ name: 'context.build', description: 'Builds context', inputSchema: { type: 'object' } }],
    };
    const called = await client().generate(request);
    expect(called).toMatchObject({
      text: 'Building.',
      toolCalls: [{ id: 'tu_9', name: 'context.build', input: { sources: ['a'] } }],
      finishReason: 'tool-calls',
    });
    for (const [stopReason, finishReason] of [
      ['max_tokens', 'length'],
      ['guardrail_intervened', 'content-filter'],
      ['content_filtered', 'content-filter'],
      ['stop_sequence', 'stop'],
    ] as const) {
      bedrock.on(ConverseCommand).resolves({
        output: { message: { role: 'assistant', content: [{ text: '...' }] } },
        stopReason,
      });
      expect((await client().generate(request)).finishReason).toBe(finishReason);
    }
  });

  it('asks for structured output in the system prompt and takes the JSON out of the answer', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: {
        message: { role: 'assistant', content: [{ text: '```json\n{"response_text":"hi"}\n```' }] },
      },
      stopReason: 'end_turn',
    });
    const schema = { type: 'object', properties: { response_text: { type: 'string' } } };
    const out = await client().generate({
      model: `bedrock/${MODEL}`,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'x' }],
      responseSchema: schema,
      temperature: 0.2,
      maxOutputTokens: 300,
    });
    expect(out.text).toBe('{"response_text":"hi"}');
    const input = bedrock.commandCalls(ConverseCommand)[0]?.args[0].input;
    const system = input?.system?.[0]?.text ?? '';
    expect(system).toMatch(/^Be brief\.\n\nAnswer with only a JSON object/);
    expect(system).toContain(JSON.stringify(schema));
    // No forced tool: the schema must not depend on toolChoice, which many Bedrock models refuse.
    expect(input?.toolConfig).toBeUndefined();
    expect(input?.inferenceConfig).toEqual({ temperature: 0.2, maxTokens: 300 });
  });

  it('passes the abort signal to the SDK and reports an aborted call as retriable', async () => {
    const controller = new AbortController();
    bedrock.on(ConverseCommand).callsFake(() => {
      controller.abort();
      throw Object.assign(new Error('Request aborted'), { name: 'AbortError' });
    });
    const call = client().generate({
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [{ role: 'user', content: 'x' }],
      signal: controller.signal,
    });
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/aborted/);
    // The stub's type knows only the command; the SDK's send takes the options second.
    expect((bedrock.send.firstCall.args as unknown[])[1]).toEqual({ abortSignal: controller.signal });
  });

  it('creates its default client with maxRetries + 1 attempts in the configured region', async () => {
    bedrock.on(ConverseCommand).resolves({
      output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
      stopReason: 'end_turn',
    });
    const router = new LlmRouter({ env: { AWS_REGION: 'eu-west-1' }, maxRetries: 2 });
    await router.generate({
      model: `bedrock/${MODEL}`,
      system: 's',
      messages: [{ role: 'user', content: 'x' }],
    });
    const used = bedrock.send.firstCall.thisValue as BedrockRuntimeClient;
    expect(await used.config.region()).toBe('eu-west-1');
    expect(await used.config.maxAttempts()).toBe(3);
  });
});
