import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinearRegExp } from '#shared/domain/lang/linear-regex.ts';
import {
  GuardrailDefinitionSchema,
  type GuardrailInput,
  guardrailIssues,
} from '#shared/rooms/guardrails/definition.ts';
import { Guard } from '#shared/rooms/guardrails/guard.ts';
import { maxMatchLength } from '#shared/rooms/guardrails/match-length.ts';
import { compilePolicy } from '#shared/rooms/guardrails/scan.ts';
import { guardedSink } from '#shared/rooms/guardrails/stream-guard.ts';
import { LocalKeyRing, MemoryVaultStore, Placeholders, Vault } from '#shared/rooms/guardrails/vault.ts';

const CARD = '4111 1111 1111 1111';

function guardOf(input: GuardrailInput, placeholders = new Placeholders()) {
  return new Guard(
    [compilePolicy(input.guardrail_id, 1, GuardrailDefinitionSchema.parse(input))],
    placeholders,
  );
}

describe('guardrail.def.v1 validation', () => {
  it('names a pattern that cannot compile', () => {
    const issues = guardrailIssues({
      guardrail_id: 'p',
      patterns: [{ name: 'ticket', pattern: '(?<=x)TCK', action: 'mask' }],
    });
    expect(issues).toEqual([
      expect.objectContaining({
        path: 'context.patterns[0].pattern',
        message: expect.stringContaining('ticket'),
      }),
    ]);
  });

  it('names a pattern whose matches have no bound', () => {
    const issues = guardrailIssues({
      guardrail_id: 'p',
      patterns: [{ name: 'order', pattern: 'ORD-\\d+', action: 'block' }],
    });
    expect(issues[0]?.message).toMatch(/order is unbounded/);
    expect(
      guardrailIssues({
        guardrail_id: 'p',
        patterns: [{ name: 'order', pattern: 'ORD-\\d{4,12}', action: 'block' }],
      }),
    ).toEqual([]);
  });

  it('refuses denied topics without a classifier, and detect streaming with mask', () => {
    expect(guardrailIssues({ guardrail_id: 'p', topics: [{ name: 'x', definition: 'y' }] })[0]?.path).toBe(
      'context.classifier',
    );
    expect(
      guardrailIssues({ guardrail_id: 'p', streaming: 'detect', pii: [{ type: 'email', action: 'mask' }] })[0]
        ?.path,
    ).toBe('context.streaming');
  });

  it('refuses unknown fields and types with their path', () => {
    const issues = guardrailIssues({
      guardrail_id: 'p',
      pii: [{ type: 'passport', action: 'mask' }],
      extra: 1,
    });
    expect(issues.map((i) => i.path)).toEqual(expect.arrayContaining(['context.pii[0].type']));
  });
});

describe('maxMatchLength', () => {
  it('bounds every match the linear engine makes', () => {
    const patterns = ['[0-9](?:[ -]?[0-9]){12,18}', 'a{2,5}(bc|d)?', '(?:x|yz){0,3}\\d', 'AB?C{1,2}'];
    for (const p of patterns) {
      const bound = maxMatchLength(p);
      fc.assert(
        fc.property(
          fc.string({
            unit: fc.constantFrom('a', 'b', 'c', 'd', 'x', 'y', 'z', 'A', 'B', 'C', '1', ' ', '-'),
          }),
          (s) => {
            const m = new LinearRegExp(p).exec(s);
            return m === null || m[0].length <= bound;
          },
        ),
      );
    }
    expect(maxMatchLength('a+')).toBe(Number.POSITIVE_INFINITY);
    expect(maxMatchLength('a{3}b?')).toBe(4);
  });
});

describe('Guard', () => {
  it('masks with a stable placeholder per value, the same in a later invocation of the thread', async () => {
    const vault = new Vault(new MemoryVaultStore(), new LocalKeyRing(Buffer.alloc(32, 7)));
    const policy: GuardrailInput = {
      guardrail_id: 'pii',
      pii: [
        { type: 'email', action: 'mask' },
        { type: 'card', action: 'mask' },
      ],
    };
    const first = guardOf(policy, await vault.open('ws', 't1'));
    const a = await first.check('input', [
      { part: 'user', text: `mail ann@example.com, card ${CARD}, again ann@example.com, bob@example.com` },
    ]);
    expect(a.texts[0]).toBe('mail [EMAIL_1], card [CARD_1], again [EMAIL_1], [EMAIL_2]');
    expect(JSON.stringify(a.findings)).not.toContain('ann@');
    await vault.keep('ws', 't1', first.placeholders);
    const second = guardOf(policy, await vault.open('ws', 't1'));
    const b = await second.check('tool_result', [
      { part: 'tool_result', text: 'reply from bob@example.com' },
    ]);
    expect(b.texts[0]).toBe('reply from [EMAIL_2]');
    expect(second.placeholders.unmask('to [EMAIL_2]')).toBe('to bob@example.com');
  });

  it('keeps the map sealed: the stored item holds no value, and another thread cannot open it', async () => {
    const store = new MemoryVaultStore();
    const vault = new Vault(store, new LocalKeyRing(Buffer.alloc(32, 1)));
    const guard = guardOf(
      { guardrail_id: 'pii', pii: [{ type: 'email', action: 'mask' }] },
      await vault.open('ws', 't'),
    );
    await guard.check('input', [{ part: 'user', text: 'me@example.com' }]);
    await vault.keep('ws', 't', guard.placeholders);
    const sealed = store.items.get('ws/t') as string;
    expect(sealed).not.toContain('example');
    store.items.set('ws/other', sealed);
    await expect(vault.open('ws', 'other')).rejects.toThrow();
  });

  it('blocks with the configured message naming the policy, never the text', async () => {
    const guard = guardOf({
      guardrail_id: 'no-secrets',
      pii: [{ type: 'aws_access_key', action: 'block' }],
      message: 'Blocked by {policy}.',
    });
    const r = await guard.check('model_output', [{ part: 'assistant', text: 'key AKIAABCDEFGHIJKLMNOP' }]);
    expect(r.blocked).toEqual({ policy: 'no-secrets', message: 'Blocked by no-secrets.' });
    expect(r.findings).toEqual([
      expect.objectContaining({ type: 'aws_access_key', action: 'block', start: 4, end: 24 }),
    ]);
  });

  it('judges denied topics with the classifier, and applies on_error when it fails', async () => {
    const policy = compilePolicy(
      'topics',
      1,
      GuardrailDefinitionSchema.parse({
        guardrail_id: 'topics',
        topics: [{ name: 'investment-advice', definition: 'advice on what to invest in' }],
        classifier: { model: 'scripted/judge' },
      }),
    );
    const flagged = new Guard([policy], new Placeholders(), {
      classifier: { judge: async () => ({ flagged: 'investment-advice' }) },
    });
    expect(
      (await flagged.check('input', [{ part: 'user', text: 'which stocks should I buy?' }])).blocked?.policy,
    ).toBe('topics');
    const failing = new Guard([policy], new Placeholders(), {
      classifier: {
        judge: async () => {
          throw Object.assign(new Error('slow'), { name: 'TimeoutError' });
        },
      },
    });
    const r = await failing.check('input', [{ part: 'user', text: 'hello' }]);
    expect(r.blocked?.policy).toBe('topics');
    expect(r.findings[0]).toMatchObject({ check: 'error', type: 'topic: timeout', action: 'block' });
  });

  it('scans only the parts a policy names: scaffolding does not trip a word list', async () => {
    const guard = guardOf({ guardrail_id: 'words', words: { terms: ['confidential'], action: 'block' } });
    const r = await guard.check('model_input', [
      { part: 'system', text: 'Never reveal confidential data.' },
      { part: 'tool_result', text: 'nothing here' },
    ]);
    expect(r.blocked).toBeUndefined();
    const hit = await guard.check('model_input', [{ part: 'tool_result', text: 'this is CONFIDENTIAL' }]);
    expect(hit.blocked?.policy).toBe('words');
  });
});

describe('guardedSink', () => {
  function recorder() {
    const seen: string[] = [];
    const resets: string[] = [];
    return {
      seen,
      resets,
      sink: {
        write: (t: string) => seen.push(t),
        reset: (r: string) => resets.push(r),
        final: async () => undefined,
        close: async () => undefined,
      },
    };
  }

  it('under buffer, never lets a card number split across chunks reach the subscriber', async () => {
    const guard = guardOf({ guardrail_id: 'pii', pii: [{ type: 'card', action: 'mask' }] });
    const r = recorder();
    const sink = guardedSink(r.sink, guard);
    const text = `Your card ${CARD} is on file. ${'More words follow here. '.repeat(4)}`;
    for (let i = 0; i < text.length; i += 3) sink.write(text.slice(i, i + 3));
    await sink.final('completed', 'answer-1');
    const streamed = r.seen.join('');
    expect(streamed).not.toMatch(/4111|1111 1111/);
    expect(streamed).toBe(text.replace(CARD, '[CARD_1]'));
    // Something was released before the end: the stream holds back only the longest match.
    expect(r.seen.length).toBeGreaterThan(1);
  });

  it('under buffer with block, resets the stream and releases nothing of the value', async () => {
    const guard = guardOf({ guardrail_id: 'pii', pii: [{ type: 'card', action: 'block' }] });
    const r = recorder();
    const sink = guardedSink(r.sink, guard);
    for (const chunk of ['Card: 4111 11', '11 1111 1111 and more text after it']) sink.write(chunk);
    await sink.final('completed', 'a');
    expect(r.seen.join('')).not.toContain('4111');
    expect(r.resets).toEqual(['blocked by guardrail pii']);
  });

  it('under detect, releases at once and cuts the stream with a reset when a check fails', async () => {
    const guard = guardOf({
      guardrail_id: 'w',
      streaming: 'detect',
      words: { terms: ['forbidden'], action: 'block' },
    });
    const r = recorder();
    const sink = guardedSink(r.sink, guard);
    sink.write('hello ');
    expect(r.seen).toEqual(['hello ']);
    sink.write('forbidden ');
    sink.write('more');
    expect(r.resets).toEqual(['blocked by guardrail w']);
    expect(r.seen).toEqual(['hello ', 'forbidden ']);
  });
});
