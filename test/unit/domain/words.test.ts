import { describe, expect, it } from 'vitest';
import {
  contextWords,
  MAX_WORDS_BYTES,
  MAX_WORDS_PER_FIELD,
  NO_WORD_LIMITS,
  textWords,
  valueWord,
} from '#shared/domain/words.ts';

describe('textWords', () => {
  it.each([
    ['Can you list my files?', ['can', 'you', 'list', 'my', 'files']],
    ['LIST, list and List', ['list', 'and']],
    [
      "don't touch file.txt v1.2 at 3.14 or 1,000",
      ["don't", 'touch', 'file.txt', 'v1.2', 'at', '3.14', 'or', '1,000'],
    ],
    ['snake_case user:message', ['snake_case', 'user:message']],
    ['e-mail a@b.com', ['e', 'mail', 'a', 'b.com']],
    ['Note: files. "quoted" (paren)', ['note', 'files', 'quoted', 'paren']],
    ['Ünïcödé CAFÉ naïve', ['ünïcödé', 'café', 'naïve']],
    ['ｆｉｌｅ ﬁle', ['file']],
    ['emoji 👍 ok', ['emoji', 'ok']],
    ['我想列出我的文件', ['我想', '列出', '我的', '文件']],
    ['ภาษาไทยง่าย', ['ภาษา', 'ไทย', 'ง่าย']],
    ['', []],
    ['?! ...', []],
  ])('%j → %j', (text, words) => {
    expect(textWords(text)).toEqual(words);
  });

  it('composed and decomposed accents are the same word', () => {
    expect(textWords('cafe\u0301')).toEqual(textWords('caf\u00e9'));
  });
});

describe('valueWord', () => {
  it('gives the one word a value stands for, ignoring punctuation around it', () => {
    expect(valueWord('List')).toEqual({ word: 'list' });
    expect(valueWord('list!')).toEqual({ word: 'list' });
    expect(valueWord('file.txt')).toEqual({ word: 'file.txt' });
  });

  it('gives every word of a phrase, and none for punctuation', () => {
    expect(valueWord('list files')).toEqual({ words: ['list', 'files'] });
    expect(valueWord('*')).toEqual({ words: [] });
  });
});

describe('contextWords', () => {
  it('mirrors the context objects with the words of each text field', () => {
    expect(
      contextWords({
        content: 'List my files',
        meta: { subject: 'Hello World', count: 3, flag: true, empty: '', none: null },
        n: 1,
      }),
    ).toEqual({
      words: { content: ['list', 'my', 'files'], meta: { subject: ['hello', 'world'] } },
      truncated: false,
    });
  });

  it('leaves out text inside arrays: there contains_any keeps element equality', () => {
    expect(contextWords({ labels: ['dark red'], items: [{ name: 'x y' }] })).toEqual({
      words: {},
      truncated: false,
    });
  });

  it('has no words for a context that is not an object', () => {
    expect(contextWords(undefined)).toEqual({ words: {}, truncated: false });
  });

  it(`keeps at most ${MAX_WORDS_PER_FIELD} distinct words per field and says so`, () => {
    const many = Array.from({ length: MAX_WORDS_PER_FIELD + 5 }, (_, i) => `w${i}`).join(' ');
    const out = contextWords({ content: many, other: 'kept' });
    expect((out.words.content as string[]).length).toBe(MAX_WORDS_PER_FIELD);
    expect(out.words.other).toEqual(['kept']);
    expect(out.truncated).toBe(true);
    // Repeated words do not count twice.
    expect(contextWords({ content: 'a '.repeat(5000) }).truncated).toBe(false);
  });

  it(`keeps at most ${MAX_WORDS_BYTES} bytes of words in all and says so`, () => {
    const field = (k: number) => Array.from({ length: 900 }, (_, i) => `f${k}word${i}`).join(' ');
    const context = Object.fromEntries(Array.from({ length: 6 }, (_, k) => [`field${k}`, field(k)]));
    const out = contextWords(context);
    expect(out.truncated).toBe(true);
    expect(JSON.stringify(out.words).length).toBeLessThanOrEqual(MAX_WORDS_BYTES);
    const all = contextWords(context, NO_WORD_LIMITS);
    expect(all.truncated).toBe(false);
    expect(Object.values(all.words).flat()).toHaveLength(6 * 900);
  });
});
