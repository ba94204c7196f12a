/**
 * The AI SDK adapter over real HTTP: a loopback node:http server plays an OpenAI-compatible chat-completions API
 * with recorded responses (a plain answer, a tool call, errors), and records what the adapter sent.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AiSdkLlmClient } from '#shared/adapters/llm/ai-sdk-client.ts';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';

interface Recorded {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

const PLAIN_ANSWER = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_760_000_000,
  model: 'llama-3.1-8b',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'Hello from the server.' }, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 },
};

const TOOL_CALL_ANSWER = {
  id: 'chatcmpl-2',
  object: 'chat.completion',
  created: 1_760_000_001,
  model: 'llama-3.1-8b',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_abc',
            type: 'function',
            function: { name: 'calculator', arguments: '{"expression":"17*23"}' },
          },
          {
            id: 'call_def',
            type: 'function',
            function: { name: 'context__build', arguments: '{"sources":[]}' },
          },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 },
};

let server: Server;
let baseUrl: string;
const requests: Recorded[] = [];
let reply: { status: number; body: unknown } = { status: 200, body: PLAIN_ANSWER };

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    req.on('end', () => {
      requests.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text || '{}') });
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  requests.length = 0;
  reply = { status: 200, body: PLAIN_ANSWER };
});

function client(): AiSdkLlmClient {
  return new AiSdkLlmClient({
    env: {
      OPENAI_COMPATIBLE_BASE_URL: baseUrl,
      OPENAI_COMPATIBLE_API_KEY: 'sk-local',
      OPENROUTER_BASE_URL: baseUrl,
      OPENROUTER_API_KEY: 'sk-or',
    },
    maxRetries: 0,
  });
}

const TOOLS = [
  {
    name: 'calculator',
    description: 'Evaluates arithmetic',
    inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
  { name: 'context.build', description: 'Builds context', inputSchema: { type: 'object' } },
];

describe('AiSdkLlmClient with an OpenAI-compatible server', () => {
  it('sends the model, system prompt and messages and returns the answer text', async () => {
    const out = await client().generate({
      model: 'openai-compatible/llama-3.1-8b',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.3,
    });
    expect(out).toMatchObject({
      text: 'Hello from the server.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 21, outputTokens: 5 },
      model: 'openai-compatible/llama-3.1-8b',
    });
    const [sent] = requests;
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-local');
    expect(sent?.body).toMatchObject({
      model: 'llama-3.1-8b',
      temperature: 0.3,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(sent?.body.tools).toBeUndefined();
  });

  it('offers tools natively (dotted names encoded) and returns the calls with crumbs names', async () => {
    reply = { status: 200, body: TOOL_CALL_ANSWER };
    const out = await client().generate({
      model: 'openrouter/meta-llama/llama-3.1-8b',
      system: 'Use tools.',
      messages: [{ role: 'user', content: 'what is 17*23?' }],
      tools: TOOLS,
    });
    expect(out.finishReason).toBe('tool-calls');
    expect(out.toolCalls).toEqual([
      { id: 'call_abc', name: 'calculator', input: { expression: '17*23' } },
      { id: 'call_def', name: 'context.build', input: { sources: [] } },
    ]);
    const sent = requests[0]?.body as {
      model: string;
      tools: { type: string; function: { name: string; parameters: unknown } }[];
    };
    expect(requests[0]?.headers.authorization).toBe('Bearer sk-or');
    expect(sent.model).toBe('meta-llama/llama-3.1-8b');
    expect(sent.tools.map((t) => t.function.name)).toEqual(['calculator', 'context__build']);
    expect(sent.tools[0]?.function.parameters).toMatchObject({
      properties: { expression: { type: 'string' } },
    });
  });

  it('sends earlier tool calls and their results back as assistant and tool messages', async () => {
    await client().generate({
      model: 'openai-compatible/llama-3.1-8b',
      system: 's',
      messages: [
        { role: 'user', content: 'what is 17*23?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_abc', name: 'context.build', input: { sources: [] } }],
        },
        {
          role: 'tool',
          results: [{ toolCallId: 'call_abc', toolName: 'context.build', output: { result: 391 } }],
        },
      ],
      tools: TOOLS,
    });
    const messages = requests[0]?.body.messages as Record<string, unknown>[];
    expect(messages[2]).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'context__build' } }],
    });
    expect(messages[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_abc', content: '{"result":391}' });
  });

  it('asks for JSON: with the schema where the provider takes one, as a JSON object elsewhere', async () => {
    reply = {
      status: 200,
      body: {
        ...PLAIN_ANSWER,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: '{"response_text":"ok"}' },
            finish_reason: 'stop',
          },
        ],
      },
    };
    const schema = {
      type: 'object',
      properties: { response_text: { type: 'string' } },
      required: ['response_text'],
    };
    const request = {
      system: 's',
      messages: [{ role: 'user' as const, content: 'x' }],
      responseSchema: schema,
    };
    const out = await client().generate({ model: 'openrouter/openai/gpt-4o-mini', ...request });
    expect(out.text).toBe('{"response_text":"ok"}');
    expect(requests[0]?.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { schema } });
    await client().generate({ model: 'openai-compatible/llama-3.1-8b', ...request });
    expect(requests[1]?.body.response_format).toEqual({ type: 'json_object' });
  });

  it('classifies 429 as retriable and 401 as not', async () => {
    reply = { status: 429, body: { error: { message: 'slow down' } } };
    const request = {
      model: 'openai-compatible/m',
      system: 's',
      messages: [{ role: 'user' as const, content: 'x' }],
    };
    await expect(client().generate(request)).rejects.toBeInstanceOf(RetriableError);
    reply = { status: 401, body: { error: { message: 'bad key' } } };
    await expect(client().generate(request)).rejects.toBeInstanceOf(NonRetriableError);
  });

  it('refuses OpenRouter without a key, naming the variable', async () => {
    const bare = new AiSdkLlmClient({ env: { OPENROUTER_BASE_URL: baseUrl } });
    await expect(
      bare.generate({ model: 'openrouter/x', system: 's', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toThrow(/OPENROUTER_API_KEY/);
    expect(requests).toHaveLength(0);
  });
});
