import { describe, expect, it } from 'vitest';
import { formatRecord, formatTable, shortTime, truncate } from '#cli/format.ts';

describe('formatTable', () => {
  it('aligns columns, right-aligns numbers and leaves no trailing spaces', () => {
    const text = formatTable(
      [
        { header: 'id', value: (r: { id: string; n: number; note: string }) => r.id },
        { header: 'n', value: (r) => r.n, align: 'right' },
        { header: 'note', value: (r) => r.note },
      ],
      [
        { id: 'a', n: 1, note: 'x' },
        { id: 'long-id', n: 100, note: '' },
      ],
    );
    expect(text.split('\n')).toEqual(['ID         N  NOTE', 'a          1  x', 'long-id  100']);
  });

  it('truncates long cells with an ellipsis and flattens newlines', () => {
    const text = formatTable([{ header: 'title', value: (r: string) => r, max: 8 }], ['line one\nline two']);
    expect(text.split('\n')[1]).toBe('line on…');
  });

  it('joins arrays with commas and prints nothing for missing values', () => {
    const text = formatTable(
      [
        { header: 'tags', value: (r: { tags?: string[] }) => r.tags },
        { header: 'x', value: () => 'y' },
      ],
      [{ tags: ['a', 'b'] }, {}],
    );
    expect(text.split('\n')).toEqual(['TAGS  X', 'a,b   y', '      y']);
  });
});

describe('shortTime', () => {
  it('prints ISO times as UTC date and seconds', () => {
    expect(shortTime('2025-03-04T05:06:07.890Z')).toBe('2025-03-04 05:06:07');
    expect(shortTime('2025-03-04T07:06:07+02:00')).toBe('2025-03-04 05:06:07');
    expect(shortTime(1741064767)).toBe('2025-03-04 05:06:07');
  });

  it('leaves values that are not ISO times unchanged', () => {
    expect(shortTime('yesterday')).toBe('yesterday');
    expect(shortTime(undefined)).toBe('');
  });
});

describe('formatRecord', () => {
  it('aligns keys and drops undefined values', () => {
    expect(
      formatRecord([
        ['id', 'c1'],
        ['expires', undefined],
        ['version', 3],
      ]),
    ).toBe('id       c1\nversion  3');
  });
});

describe('truncate', () => {
  it('keeps short text and counts code points, not UTF-16 units', () => {
    expect(truncate('abc', 3)).toBe('abc');
    expect(truncate('😀😀😀😀', 3)).toBe('😀😀…');
  });
});
