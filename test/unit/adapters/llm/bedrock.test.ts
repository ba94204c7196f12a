/**
 * Bedrock through `aws-sdk-client-mock`: the AI SDK's Bedrock provider builds the Converse request, and the
 * adapter hands it to the AWS SDK's BedrockRuntimeClient (ConverseCommand), which is what is mocked here.
 */
import { BedrockRuntimeClient, ConverseCommand, ThrottlingException } from '@aws-sdk/client-bedrock-runtime';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { AiSdkLlmClient } from '#shared/adapters/llm/ai-sdk-client.ts';
import { RetriableError } from '#shared/domain/errors.ts';

const bedrock = mockClient(BedrockRuntimeClient);
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';

function client(): AiSdkLlmClient {
  return new AiSdkLlmClient({
    env: { AWS_REGION: 'eu-west-1' },
    bedrockClient: new BedrockRuntimeClient({}),
    maxRetries: 0,
  });
}

beforeEach(() => bedrock.reset());

describe('AiSdkLlmClient with Bedrock (Converse through the AWS SDK client)', () => {
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
});
