/**
 * The OpenAI-compatible providers over real HTTP: a loopback node:http server plays a chat-completions API with
 * recorded responses (a plain answer, a tool call, errors, throttling), and records what the adapter sent.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmRouter, type LlmRouterOptions } from '#shared/adapters/llm/llm-router.ts';
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
interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}
let reply: Reply = { status: 200, body: PLAIN_ANSWER };
/** Replies for the next requests, in order; `reply` answers once these are used up. */
let queue: Reply[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    req.on('end', () => {
      requests.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text || '{}') });
      const next = queue.shift() ?? reply;
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(typeof next.body === 'string' ? next.body : JSON.stringify(next.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  requests.length = 0;
  reply = { status: 200, body: PLAIN_ANSWER };
  queue = [];
});

function client(options: LlmRouterOptions = {}): LlmRouter {
  return new LlmRouter({
    env: {
      OPENAI_COMPATIBLE_BASE_URL: baseUrl,
      OPENAI_COMPATIBLE_API_KEY: 'sk-local',
      OPENROUTER_BASE_URL: baseUrl,
      OPENROUTER_API_KEY: 'sk-or',
      OPENAI_BASE_URL: baseUrl,
      OPENAI_API_KEY: 'sk-openai',
    },
    maxRetries: 0,
    ...options,
  });
}

const HI = { system: 's', messages: [{ role: 'user' as const, content: 'x' }] };

function answering(content: string) {
  return {
    ...PLAIN_ANSWER,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  };
}

const TOOLS = [
  {
    name: 'calculator',
    description: 'Evaluates arithmetic',
    inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
  { name: 'context.build', description: 'Builds context', inputSchema: { type: 'object' } },
];

describe('LlmRouter with an OpenAI-compatible server', () => {
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
    // The schema travels in the response format, so the prompt stays as written.
    expect(requests[0]?.body.messages).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: 'x' },
    ]);
    await client().generate({ model: 'openai-compatible/llama-3.1-8b', ...request });
    expect(requests[1]?.body.response_format).toEqual({ type: 'json_object' });
    // json_object cannot carry a schema: the system prompt does.
    const [system] = (requests[1]?.body.messages ?? []) as { role: string; content: string }[];
    expect(system?.role).toBe('system');
    expect(system?.content).toMatch(/^s\n\nAnswer with only a JSON object/);
    expect(system?.content).toContain(JSON.stringify(schema));
  });

  it('classifies 429 as retriable and 401 as not', async () => {
    reply = { status: 429, body: { error: { message: 'slow down' } } };
    const request = {
      model: 'openai-compatible/m',
      system: 's',
      messages: [{ role: 'user' as const, content: 'x' }],
    };
    const throttled = client().generate(request);
    await expect(throttled).rejects.toBeInstanceOf(RetriableError);
    await expect(throttled).rejects.toThrow('openai-compatible/m answered 429: slow down');
    reply = { status: 401, body: { error: { message: 'bad key' } } };
    const refused = client().generate(request);
    await expect(refused).rejects.toBeInstanceOf(NonRetriableError);
    await expect(refused).rejects.toThrow('openai-compatible/m answered 401: bad key');
  });

  it('refuses OpenRouter without a key, naming the variable', async () => {
    const bare = new LlmRouter({ env: { OPENROUTER_BASE_URL: baseUrl } });
    await expect(
      bare.generate({ model: 'openrouter/x', system: 's', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toThrow(/OPENROUTER_API_KEY/);
    expect(requests).toHaveLength(0);
  });
  it('retries a 429 and returns the answer that follows', async () => {
    queue = [{ status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '0' } }];
    const out = await client({ maxRetries: 1 }).generate({ model: 'openai-compatible/m', ...HI });
    expect(out.text).toBe('Hello from the server.');
    expect(requests).toHaveLength(2);
    expect(requests[1]?.body).toEqual(requests[0]?.body);
  });

  it('retries a 5xx after its own short backoff when the server names no wait', async () => {
    queue = [{ status: 503, body: 'upstream unavailable' }];
    const out = await client({ maxRetries: 1 }).generate({ model: 'openai-compatible/m', ...HI });
    expect(out.text).toBe('Hello from the server.');
    expect(requests).toHaveLength(2);
  });

  it('gives up as retriable after maxRetries, with the last answer in the message', async () => {
    reply = { status: 502, body: { error: 'bad gateway' }, headers: { 'retry-after-ms': '1' } };
    const call = client({ maxRetries: 2 }).generate({ model: 'openai-compatible/m', ...HI });
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow('openai-compatible/m answered 502: bad gateway');
    expect(requests).toHaveLength(3);
  });

  it('leaves a long Retry-After to the queue instead of waiting in the function', async () => {
    queue = [{ status: 429, body: { error: { message: 'quota' } }, headers: { 'retry-after': '120' } }];
    const call = client({ maxRetries: 3 }).generate({ model: 'openai-compatible/m', ...HI });
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    expect(requests).toHaveLength(1);
  });

  it('does not retry a client error', async () => {
    reply = { status: 400, body: { error: { message: "'messages' is required" } } };
    const call = client({ maxRetries: 3 }).generate({ model: 'openai-compatible/m', ...HI });
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow("openai-compatible/m answered 400: 'messages' is required");
    expect(requests).toHaveLength(1);
  });

  it('classifies an unreachable server as retriable, naming the reason', async () => {
    let attempts = 0;
    const refusing: typeof globalThis.fetch = async () => {
      attempts++;
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
      });
    };
    const call = client({ fetch: refusing }).generate({ model: 'ollama/llama3', ...HI });
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/ollama\/llama3: could not reach .* fetch failed \(ECONNREFUSED\)/);
    expect(attempts).toBe(1);
  });

  it('passes the abort signal on and reports an aborted call as retriable', async () => {
    const controller = new AbortController();
    controller.abort(new Error('Lambda timeout is near'));
    const call = client({ maxRetries: 3 }).generate({
      model: 'openai-compatible/m',
      ...HI,
      signal: controller.signal,
    });
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/aborted/);
    expect(requests).toHaveLength(0);
  });

  it('refuses tool arguments that are not JSON, naming the tool', async () => {
    reply = {
      status: 200,
      body: {
        ...TOOL_CALL_ANSWER,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: 'call_x',
                  type: 'function',
                  function: { name: 'context__build', arguments: '{"sources": [' },
                },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      },
    };
    const call = client().generate({ model: 'openai-compatible/m', ...HI, tools: TOOLS });
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/called tool context\.build with arguments that are not JSON/);
  });

  it('marks a failed tool result as an error for the model', async () => {
    await client().generate({
      model: 'openai-compatible/m',
      system: 's',
      messages: [
        { role: 'user', content: 'what is 1/0?' },
        {
          role: 'assistant',
          content: 'Let me compute.',
          toolCalls: [{ id: 'c1', name: 'calculator', input: {} }],
        },
        {
          role: 'tool',
          results: [{ toolCallId: 'c1', toolName: 'calculator', output: 'division by zero', isError: true }],
        },
      ],
      tools: TOOLS,
    });
    const messages = requests[0]?.body.messages as Record<string, unknown>[];
    expect(messages[2]).toMatchObject({ role: 'assistant', content: 'Let me compute.' });
    expect(messages[3]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: '{"error":"division by zero"}',
    });
  });

  it('maps finish reasons and sends the token limit under the name each server takes', async () => {
    queue = [
      {
        status: 200,
        body: {
          ...answering('cut'),
          choices: [{ index: 0, message: { content: 'cut' }, finish_reason: 'length' }],
        },
      },
      {
        status: 200,
        body: {
          ...answering(''),
          choices: [{ index: 0, message: { content: '' }, finish_reason: 'content_filter' }],
        },
      },
    ];
    const cut = await client().generate({ model: 'openai-compatible/m', ...HI, maxOutputTokens: 5 });
    expect(cut.finishReason).toBe('length');
    expect(requests[0]?.body).toMatchObject({ max_tokens: 5 });
    const filtered = await client().generate({ model: 'openai/gpt-5-mini', ...HI, maxOutputTokens: 5 });
    expect(filtered.finishReason).toBe('content-filter');
    expect(requests[1]?.body).toMatchObject({ max_completion_tokens: 5 });
    expect(requests[1]?.body.max_tokens).toBeUndefined();
    expect(requests[1]?.headers.authorization).toBe('Bearer sk-openai');
  });

  it('asks for strict structured output only for a schema written for it', async () => {
    reply = { status: 200, body: answering('{"a":"x"}') };
    const loose = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'number' } },
      required: ['a'],
    };
    const closed = { ...loose, required: ['a', 'b'], additionalProperties: false };
    await client().generate({ model: 'openai/gpt-4o-mini', ...HI, responseSchema: loose });
    await client().generate({ model: 'openai/gpt-4o-mini', ...HI, responseSchema: closed });
    expect(requests[0]?.body.response_format).toMatchObject({
      json_schema: { name: 'response', strict: false },
    });
    expect(requests[1]?.body.response_format).toMatchObject({ json_schema: { strict: true } });
  });

  it('takes the JSON object out of a fenced answer when JSON was asked for by prompt', async () => {
    reply = { status: 200, body: answering('Here it is:\n```json\n{"response_text":"ok"}\n```') };
    const out = await client().generate({
      model: 'openai-compatible/m',
      ...HI,
      responseSchema: { type: 'object', properties: { response_text: { type: 'string' } } },
    });
    expect(out.text).toBe('{"response_text":"ok"}');
  });

  it('refuses an OpenAI-compatible model without a base URL, naming the variable', async () => {
    const bare = new LlmRouter({ env: {} });
    const call = bare.generate({ model: 'openai-compatible/m', ...HI });
    await expect(call).rejects.toBeInstanceOf(NonRetriableError);
    await expect(call).rejects.toThrow(/OPENAI_COMPATIBLE_BASE_URL/);
  });

  it('refuses an answer that is not a chat completion', async () => {
    reply = { status: 200, body: '<html>proxy login</html>' };
    await expect(client().generate({ model: 'openai-compatible/m', ...HI })).rejects.toThrow(
      /answered 200 with a body that is not JSON/,
    );
    reply = { status: 200, body: { choices: [] } };
    await expect(client().generate({ model: 'openai-compatible/m', ...HI })).rejects.toBeInstanceOf(
      NonRetriableError,
    );
  });
});
