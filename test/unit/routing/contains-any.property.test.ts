/**
 * `contains_any` against a direct reference implementation, on many generated cases (fast-check, fixed seed): the
 * selector compiled into a rule and run by the project matcher (what the local EventBridge runs, and EventBridge on
 * AWS) on the publisher's change event must say what "the text contains any of these words" says; the executor's
 * re-check (`matchesSelector`) must agree with the rule.
 *
 * Texts are drawn from words and separators on which every reasonable word splitter agrees (letters and digits,
 * accented and non-Latin letters, full-width forms; spaces and plain punctuation between them), so the reference
 * can be a plain regular-expression split. What UAX #29 decides beyond that ("don't", "file.txt") is pinned by the
 * example tests in compiler.test.ts and words.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { changeEntry, DETAIL_TYPES } from '#shared/domain/change-event.ts';
import type { SelectorInput } from '#shared/domain/selector.ts';
import { compileTriggerPattern, matchesSelector } from '#shared/routing/compiler.ts';
import { compileEventPattern } from '#shared/routing/event-pattern.ts';

const RUNS = 1000;
const SEED = 20_250_601;

const WORDS = [
  'file',
  'files',
  'list',
  'listing',
  'javascript',
  'java',
  'script',
  'my',
  'can',
  'you',
  'café',
  'naïve',
  'straße',
  'ñandú',
  'δοκιμή',
  'файл',
  'список',
  'x1',
  '42',
  'v2',
];
const SEPARATORS = [' ', '  ', ', ', '! ', '? ', '\n', ' - ', '; ', ' (', ') ', '"', '/'];

/** A word as a user might type it: any case, or in full-width letters (NFKC folds them back). */
const typedWord = fc
  .tuple(fc.constantFrom(...WORDS), fc.constantFrom('lower', 'upper', 'title', 'wide'))
  .map(([word, style]) => {
    switch (style) {
      case 'upper':
        return word.toUpperCase();
      case 'title':
        return word.charAt(0).toUpperCase() + word.slice(1);
      case 'wide':
        return /^[a-z0-9]+$/.test(word)
          ? [...word].map((c) => String.fromCodePoint((c.codePointAt(0) ?? 0) + 0xfee0)).join('')
          : word;
      default:
        return word;
    }
  });

const text = fc
  .array(fc.tuple(typedWord, fc.constantFrom(...SEPARATORS)), { maxLength: 12 })
  .map((parts) => parts.map(([word, separator]) => word + separator).join(''));

const values = fc.uniqueArray(typedWord, { minLength: 1, maxLength: 5 });

/** The reference: lowercase both sides (after NFKC), split the text on anything but letters, marks and digits. */
function containsAnyWord(content: string, wanted: readonly string[]): boolean {
  const fold = (s: string) => s.normalize('NFKC').toLowerCase();
  const words = new Set(fold(content).split(/[^\p{L}\p{M}\p{N}]+/u));
  return wanted.some((w) => words.has(fold(w)));
}

const WORKSPACE = 'team-a';
const PRINCIPAL = 'agent:file-manager';

function breadcrumb(context: Record<string, unknown>): Breadcrumb {
  return {
    id: '01J00000000000000000000000',
    workspace: WORKSPACE,
    schema_name: 'user.message.v1',
    title: 'message',
    tags: ['user:message'],
    context,
    version: 1,
    checksum: 'c',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    created_by: 'user:alice',
    updated_by: 'user:alice',
  };
}

/** The publisher's change event for the breadcrumb, as EventBridge would deliver it. */
function published(record: Breadcrumb) {
  const entry = changeEntry(DETAIL_TYPES.created, record);
  return { source: entry.source, 'detail-type': entry.detailType, detail: entry.detail };
}

function selectorFor(path: string, wanted: readonly (string | number)[]): SelectorInput {
  return {
    any_tags: ['user:message'],
    context_match: [{ path, op: 'contains_any', value: [...wanted] }],
  };
}

function rule(selector: SelectorInput) {
  return compileEventPattern(
    compileTriggerPattern({ workspace: WORKSPACE, principal: PRINCIPAL, selectors: [selector] }),
  );
}

// Generous: the machine may be busy; the cases, not the time, are the point.
describe('contains_any (property)', { timeout: 60_000 }, () => {
  it('on a text field, routes exactly when the text contains one of the words, whatever their case', () => {
    fc.assert(
      fc.property(text, values, (content, wanted) => {
        const selector = selectorFor('$.content', wanted);
        const record = breadcrumb({ content, other: 'unrelated words: file list' });
        const expected = containsAnyWord(content, wanted);
        expect(rule(selector).matches(published(record))).toBe(expected);
        expect(matchesSelector(selector, record)).toBe(expected);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('on a nested text field, looks only at that field', () => {
    fc.assert(
      fc.property(text, text, values, (body, title, wanted) => {
        const selector = selectorFor('$.message.body', wanted);
        const record = breadcrumb({ message: { body, title } });
        const expected = containsAnyWord(body, wanted);
        expect(rule(selector).matches(published(record))).toBe(expected);
        expect(matchesSelector(selector, record)).toBe(expected);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('on an array field, routes exactly when an element equals one of the values', () => {
    const element = fc.oneof(typedWord, text, fc.integer({ min: 0, max: 50 }));
    fc.assert(
      fc.property(
        fc.array(element, { maxLength: 6 }),
        fc.uniqueArray(fc.oneof(typedWord, fc.integer({ min: 0, max: 50 })), { minLength: 1, maxLength: 5 }),
        (labels, wanted) => {
          const selector = selectorFor('$.labels', wanted);
          const record = breadcrumb({ labels });
          const expected = labels.some((l) => wanted.includes(l));
          expect(rule(selector).matches(published(record))).toBe(expected);
          expect(matchesSelector(selector, record)).toBe(expected);
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('routes a text too long for the event words, and the re-check still decides by the reference', () => {
    const filler = Array.from({ length: 1200 }, (_, i) => `w${i}`).join(' ');
    fc.assert(
      fc.property(text, values, (tail, wanted) => {
        const selector = selectorFor('$.content', wanted);
        const content = `${filler} ${tail}`;
        const record = breadcrumb({ content });
        // The rule lets the event through (its words were cut); the executor's re-check is exact.
        expect(rule(selector).matches(published(record))).toBe(true);
        expect(matchesSelector(selector, record)).toBe(containsAnyWord(content, wanted));
      }),
      { numRuns: 40, seed: SEED },
    );
  });
});
