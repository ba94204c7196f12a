import { describe, expect, it } from 'vitest';
import { encodingFor, TiktokenTokenizers } from '#shared/adapters/tokenizer/tiktoken.ts';
import { fitContext } from '#shared/core/agents/context/prompt-budget.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';

const tokenizers = new TiktokenTokenizers();

describe('TiktokenTokenizers', () => {
  it('counts with the model family encoding', async () => {
    const gpt4o = await tokenizers.forModel('openai/gpt-4o-mini');
    expect(gpt4o).toMatchObject({ encoding: 'o200k_base', exact: true });
    expect(gpt4o.count('hello world')).toBe(2);
    const claude = await tokenizers.forModel('bedrock/anthropic.claude-3-haiku');
    expect(claude).toMatchObject({ encoding: 'cl100k_base', exact: false });
    // Far from 4 characters per token: a long run of digits is ~3 chars per token, a repeated word ~1 token each.
    expect(claude.count('1234567890'.repeat(10))).toBeGreaterThan(25);
    expect(claude.count(' the'.repeat(100))).toBe(100);
    expect(claude.count('<|endoftext|>')).toBeGreaterThan(1);
    // Loading the two rank tables takes seconds on a busy 2-core machine (they are big; see tiktoken.ts).
  }, 30_000);

  it('maps model ids to encodings', () => {
    expect(encodingFor('gpt-4')).toEqual({ encoding: 'cl100k_base', exact: true });
    expect(encodingFor('openrouter/openai/o3-mini')).toEqual({ encoding: 'o200k_base', exact: true });
    expect(encodingFor('offline/crumbs')).toEqual({ encoding: 'cl100k_base', exact: false });
  });
});

describe('fitContext', () => {
  const never: Tokenizers = {
    forModel: () => {
      throw new Error('the tokenizer should not load for a small prompt');
    },
  };

  it('keeps everything without loading a tokenizer when the bytes alone fit', async () => {
    const fitted = await fitContext(['system'], [{ key: 'a', text: 'short' }], 1000, 'gpt-4o', never);
    expect(fitted).toEqual({ sources: [{ key: 'a', text: 'short' }], dropped: [] });
  });

  it('drops the lowest-priority sources first, keeping the system prompt and markdown', async () => {
    const word = (w: string, n: number) => ` ${w}`.repeat(n);
    const fitted = await fitContext(
      [word('sys', 100), word('md', 100)],
      [
        { key: 'formatted_context', text: word('one', 300) },
        { key: 'recent_notes', text: word('two', 300) },
        { key: 'old_history', text: word('three', 300) },
      ],
      850,
      'gpt-4',
      tokenizers,
    );
    expect(fitted.sources.map((s) => s.key)).toEqual(['formatted_context', 'recent_notes']);
    expect(fitted.dropped).toEqual(['old_history']);
    expect(fitted.tokens).toBeLessThanOrEqual(850);
    expect(fitted.encoding).toBe('cl100k_base');
  });

  it('cuts the first source that does not fit whole at a token boundary, then drops the rest', async () => {
    const fitted = await fitContext(
      [' sys'.repeat(50)],
      [
        { key: 'a', text: ' alpha'.repeat(100) },
        { key: 'b', text: ' beta'.repeat(200) },
        { key: 'c', text: ' gamma' },
      ],
      300,
      'gpt-4',
      tokenizers,
    );
    expect(fitted.sources.map((s) => s.key)).toEqual(['a', 'b']);
    expect(fitted.cut).toBe('b');
    expect(fitted.dropped).toEqual(['c']);
    expect(fitted.sources[1]?.text).toMatch(/cut to fit the token budget/);
  });

  it('holds back a margin for families counted with the nearest tokenizer', async () => {
    const sources = [{ key: 'a', text: ' x'.repeat(950) }];
    expect((await fitContext([], sources, 1000, 'gpt-4', tokenizers)).dropped).toEqual([]);
    expect((await fitContext([], sources, 1000, 'bedrock/anthropic.claude-3-haiku', tokenizers)).cut).toBe(
      'a',
    );
  });
});
