import { describe, expect, it } from 'vitest';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { fillSchema, findArithmetic } from '#shared/adapters/llm/offline-model.ts';
import { compileJsonSchema } from '#shared/domain/lang/json-schema.ts';
import { type LlmRequest, ORCHESTRATION_PLAN_SCHEMA_ID } from '#shared/ports/llm.ts';

const calculator = {
  name: 'calculator',
  description: 'arithmetic',
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
};
const llm = new LlmRouter({ env: {} });

describe('the offline model', () => {
  it('asks for the calculator when the message holds arithmetic and the tool is offered', async () => {
    const out = await llm.generate({
      model: 'offline/crumbs',
      system: 's',
      messages: [{ role: 'user', content: 'what is 17*23?' }],
      tools: [calculator],
    });
    expect(out.finishReason).toBe('tool-calls');
    expect(out.toolCalls).toEqual([
      { id: 'offline-call-1-1', name: 'calculator', input: { expression: '17*23' } },
    ]);
  });

  it('answers from the tool result', async () => {
    const out = await llm.generate({
      model: 'offline/crumbs',
      system: 's',
      messages: [
        { role: 'user', content: 'what is 17*23?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'calculator', input: { expression: '17*23' } }],
        },
        { role: 'tool', results: [{ toolCallId: 'c1', toolName: 'calculator', output: { result: 391 } }] },
      ],
      tools: [calculator],
    });
    expect(out.text).toBe('17*23 = 391 (offline model)');
    expect(out.finishReason).toBe('stop');
  });

  it('answers other tools by their crumbs name and says when a tool failed', async () => {
    const out = await llm.generate({
      model: 'offline/crumbs',
      system: 's',
      messages: [
        { role: 'user', content: 'what is 1/0 and what do you know?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            { id: 'c1', name: 'calculator', input: { expression: '1/0' } },
            { id: 'c2', name: 'context.build', input: {} },
          ],
        },
        {
          role: 'tool',
          results: [
            { toolCallId: 'c1', toolName: 'calculator', output: 'division by zero', isError: true },
            { toolCallId: 'c2', toolName: 'context.build', output: { sources: 0 } },
          ],
        },
      ],
      tools: [calculator],
    });
    expect(out.text).toBe(
      'calculator failed: {"error":"division by zero"}\ncontext.build: {"sources":0} (offline model)',
    );
    expect(out.model).toBe('offline/crumbs');
  });

  it('replies without tools, naming the context sections it received, and says it is offline', async () => {
    const out = await llm.generate({
      model: 'offline/crumbs',
      system: 'You help.\n\n# Context\n\n## chat_history\n[]\n\n## tool_catalog\n[]',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(out.text).toBe(
      '(offline model) You said: "hello there". Context I received: chat_history, tool_catalog.',
    );
    expect(out.toolCalls).toEqual([]);
  });

  it('is deterministic', async () => {
    const request: LlmRequest = {
      model: 'offline/x',
      system: '## a',
      messages: [{ role: 'user', content: 'what is (2+3)*4?' }],
      tools: [calculator],
    };
    expect(await llm.generate(request)).toEqual(await llm.generate(request));
  });

  it('fills a response schema with the reply (seed 002 structured output)', async () => {
    const schema = {
      type: 'object',
      required: ['response_text', 'confidence'],
      properties: {
        response_text: { type: 'string' },
        confidence: { type: 'number', minimum: 0, maximum: 1 },
      },
    };
    const out = await llm.generate({
      model: 'offline/x',
      system: '',
      messages: [{ role: 'user', content: 'hi' }],
      responseSchema: schema,
    });
    expect(JSON.parse(out.text)).toEqual({
      response_text: '(offline model) You said: "hi". I received no context.',
      confidence: 0.5,
    });
    expect(fillSchema({ type: 'array' }, 'r')).toEqual([]);
  });

  it('finds arithmetic in text', () => {
    expect(findArithmetic('what is 17*23?')).toBe('17*23');
    expect(findArithmetic('compute (2 + 3) × 4 please')).toBe('(2 + 3) * 4');
    expect(findArithmetic('I have 3 apples')).toBeUndefined();
  });

  it('answers a bare model id only when it is the configured default provider', async () => {
    const request = { system: '', messages: [{ role: 'user' as const, content: 'hi' }] };
    const offline = new LlmRouter({ env: { CRUMBS_DEFAULT_LLM_PROVIDER: 'offline' } });
    expect((await offline.generate({ ...request, model: 'gpt-4' })).model).toBe('offline/gpt-4');
    await expect(new LlmRouter({ env: {} }).generate({ ...request, model: 'gpt-4' })).rejects.toThrow(
      /no default provider/,
    );
  });
});

describe('the offline model, scripted for modes (issue 12)', () => {
  const ask = (extra: Partial<LlmRequest>) =>
    llm.generate({
      model: 'offline/crumbs',
      system: 's',
      messages: [{ role: 'user', content: 'the launch' }],
      ...extra,
    });

  const schemas: Record<string, Record<string, unknown>> = {
    nested: {
      type: 'object',
      required: ['title', 'steps', 'owner', 'score', 'when'],
      properties: {
        title: { type: 'string', minLength: 40, maxLength: 60 },
        steps: {
          type: 'array',
          minItems: 3,
          uniqueItems: true,
          items: {
            type: 'object',
            required: ['name', 'n'],
            properties: { name: { type: 'string' }, n: { type: 'integer', minimum: 2, multipleOf: 3 } },
          },
        },
        owner: { enum: ['ann', 'bob'] },
        score: { type: 'number', exclusiveMinimum: 1, maximum: 4 },
        when: { type: 'string', format: 'date-time' },
      },
      additionalProperties: false,
    },
    refs: {
      $defs: {
        item: {
          type: 'object',
          required: ['id'],
          properties: { id: { type: 'string', pattern: '^[a-z]+$' } },
        },
      },
      type: 'object',
      required: ['items', 'kind'],
      properties: {
        items: { type: 'array', minItems: 2, items: { $ref: '#/$defs/item' } },
        kind: { oneOf: [{ const: 'a' }, { const: 'b' }] },
      },
    },
    allOf: {
      allOf: [
        { type: 'object', required: ['a'], properties: { a: { type: 'boolean' } } },
        { required: ['b'], properties: { b: { type: ['null', 'integer'], minimum: 7 } } },
      ],
    },
    tuple: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], minItems: 2 },
  };

  for (const [name, schema] of Object.entries(schemas)) {
    it(`answers an instance of the schema it is asked for (${name})`, async () => {
      const out = await ask({ responseSchema: schema });
      const issues = compileJsonSchema(`offline-test:${name}`, schema, 'schema').validate(
        JSON.parse(out.text),
      );
      expect(issues).toEqual([]);
    });
  }

  it('plans a call of every available agent once, in the default mode, with the message', async () => {
    const schema = {
      $id: ORCHESTRATION_PLAN_SCHEMA_ID,
      type: 'object',
      properties: {
        mode: { enum: ['sequential', 'parallel'], default: 'parallel' },
        calls: { type: 'array', items: { type: 'object', properties: { agent: { enum: ['a', 'b', 'c'] } } } },
      },
    };
    const out = await ask({ responseSchema: schema });
    expect(JSON.parse(out.text)).toEqual({
      mode: 'parallel',
      calls: [
        { agent: 'a', message: 'the launch' },
        { agent: 'b', message: 'the launch' },
        { agent: 'c', message: 'the launch' },
      ],
    });
  });

  it('shapes markdown with the template and a heading per section, html with an h2 per section', async () => {
    const md = await ask({
      responseFormat: { kind: 'markdown', template: '# Plan\n## Goals', sections: ['A', 'B'] },
    });
    expect(md.text).toMatch(/^# Plan\n## Goals\n\n## A\n\n[\s\S]*\n\n## B\n/);
    const html = await ask({ responseFormat: { kind: 'html', sections: ['Q&A'] } });
    expect(html.text).toMatch(
      /^<article>\n<h2>Q&amp;A<\/h2>\n<p>\(offline model\) You said: &quot;|^<article>\n<h2>Q&amp;A<\/h2>\n<p>\(offline model\)/,
    );
  });
});
