/**
 * The offline model streaming (`onDelta`): the answer it gives anyway, handed out word by word, for the demo's
 * kinds of prompt (chat, the calculator round, an orchestration plan, a shaped deliverable); abort between words;
 * the pause between words as an operator setting.
 */
import { describe, expect, it } from 'vitest';
import { llmFromEnv } from '#functions/wiring/llm-from-env.ts';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { LlmEnvSchema, parseEnv } from '#shared/config.ts';
import { inInvocation } from '#shared/core/model-calls/governed-llm.ts';
import { RetriableError, ValidationError } from '#shared/domain/errors.ts';
import { type LlmDelta, type LlmRequest, ORCHESTRATION_PLAN_SCHEMA_ID } from '#shared/ports/llm.ts';
import { ENV } from '#shared/topology.ts';

const calculator = {
  name: 'calculator',
  description: 'arithmetic',
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
};

const DEMO_PROMPTS: [string, LlmRequest][] = [
  [
    'a chat message with context sections',
    {
      model: 'offline/crumbs',
      system: 'You are the crumbs demo assistant.\n\n## chat_history\n- hi\n\n## related_messages\n- hello',
      messages: [{ role: 'user', content: 'Tell me  about crumbs,\nbriefly. ' }],
      tools: [calculator],
    },
  ],
  [
    'the answer from a calculator result',
    {
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
    },
  ],
  [
    'an orchestration plan (structured output)',
    {
      model: 'offline/crumbs',
      system: 'You lead product launches.',
      messages: [{ role: 'user', content: 'Plan the launch' }],
      responseSchema: {
        $id: ORCHESTRATION_PLAN_SCHEMA_ID,
        type: 'object',
        properties: {
          calls: {
            type: 'array',
            items: {
              type: 'object',
              properties: { agent: { enum: ['market-research', 'competitor-data'] } },
            },
          },
        },
      },
    },
  ],
  [
    'a markdown deliverable',
    {
      model: 'offline/crumbs',
      system: 'Write the brief.',
      messages: [{ role: 'user', content: 'the launch brief' }],
      responseFormat: { kind: 'markdown', template: '# Brief', sections: ['Market', 'Competitors'] },
    },
  ],
];

describe('the offline model, streaming', () => {
  const llm = new LlmRouter({ env: {}, offlineStreamDelayMs: 0 });

  for (const [name, request] of DEMO_PROMPTS) {
    it(`streams exactly the answer it gives unstreamed, word by word (${name})`, async () => {
      const plain = await llm.generate(request);
      const deltas: LlmDelta[] = [];
      const streamed = await llm.generate({ ...request, onDelta: (d) => deltas.push(d) });
      expect(streamed).toEqual(plain);
      expect(deltas.every((d) => d.type === 'text')).toBe(true);
      const pieces = deltas.map((d) => (d.type === 'text' ? d.text : ''));
      expect(pieces.join('')).toBe(plain.text);
      // A word at a time: each piece is one word with the whitespace after it.
      expect(pieces.length).toBe(plain.text.split(/\s+/).filter(Boolean).length);
      for (const piece of pieces) expect(piece).toMatch(/^\S+\s*$/);
    });
  }

  it('streams nothing when the answer is a tool call', async () => {
    const deltas: LlmDelta[] = [];
    const out = await llm.generate({
      model: 'offline/crumbs',
      system: 's',
      messages: [{ role: 'user', content: 'what is 17*23?' }],
      tools: [calculator],
      onDelta: (d) => deltas.push(d),
    });
    expect(out.toolCalls).toHaveLength(1);
    expect(deltas).toEqual([]);
  });

  it('stops between words when the signal aborts, reporting the call as aborted', async () => {
    const slow = new LlmRouter({ env: {}, offlineStreamDelayMs: 5 });
    const controller = new AbortController();
    const deltas: LlmDelta[] = [];
    const call = slow.generate({
      ...(DEMO_PROMPTS[0]?.[1] as LlmRequest),
      signal: controller.signal,
      onDelta: (d) => {
        deltas.push(d);
        if (deltas.length === 2) controller.abort();
      },
    });
    await expect(call).rejects.toBeInstanceOf(RetriableError);
    await expect(call).rejects.toThrow(/offline\/crumbs: the call was aborted/);
    expect(deltas).toHaveLength(2);
  });

  it('takes the pause between words from CRUMBS_OFFLINE_STREAM_DELAY_MS: 25 ms unless set, 0 to 1000', () => {
    const env = { [ENV.defaultLlmProvider]: 'offline' };
    expect(parseEnv(LlmEnvSchema, env)[ENV.offlineStreamDelayMs]).toBe(25);
    expect(
      parseEnv(LlmEnvSchema, { ...env, [ENV.offlineStreamDelayMs]: '0' })[ENV.offlineStreamDelayMs],
    ).toBe(0);
    for (const bad of ['-1', '1001', '2.5', 'fast']) {
      expect(() => parseEnv(LlmEnvSchema, { ...env, [ENV.offlineStreamDelayMs]: bad })).toThrow(
        ValidationError,
      );
    }
    expect(() => parseEnv(LlmEnvSchema, { ...env, [ENV.offlineStreamDelayMs]: '-1' })).toThrow(
      /CRUMBS_OFFLINE_STREAM_DELAY_MS/,
    );
  });

  it('streams through the client a function builds from its environment (aliases, pricing, the pause)', async () => {
    const llm = llmFromEnv({
      [ENV.defaultLlmProvider]: 'offline',
      [ENV.modelAliases]: JSON.stringify({ fast: 'offline/crumbs' }),
      [ENV.offlineStreamDelayMs]: '0',
    });
    const deltas: LlmDelta[] = [];
    // As an executor invocation makes it (a call outside one is refused: it would answer to no budget).
    const out = await inInvocation('ws', {}, () =>
      llm.generate({
        model: 'fast',
        system: 's',
        messages: [{ role: 'user', content: 'stream this please' }],
        onDelta: (d) => deltas.push(d),
      }),
    );
    expect(out.model).toBe('offline/crumbs');
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((d) => (d.type === 'text' ? d.text : '')).join('')).toBe(out.text);
  });
});
