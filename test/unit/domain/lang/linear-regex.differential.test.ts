/**
 * The linear-time regex engine (`shared/domain/lang/linear-regex.ts`: JavaScript syntax translated to RE2's, run on
 * re2js) against V8's RegExp, on generated patterns of the supported syntax and generated texts: the same match
 * (position and matched text) or the same miss, with and without the `u`, `i`, `m` and `s` flags.
 *
 * Kept out of the generated cases, as the module's header documents them: lookaround and backreferences (refused,
 * asserted in linear-regex.test.ts); `\r`, U+2028 and U+2029 as line ends under `m` (RE2 knows only `\n`);
 * characters outside the BMP without the `u` flag (one character for RE2, two for JavaScript), and next to `\B`
 * (RE2 also finds a non-boundary inside a surrogate pair); a repeated group that can match the empty string
 * (JavaScript refuses an empty iteration and tries the next alternative, RE2 stops repeating). Capture groups
 * are not compared: inside a repeated group JavaScript clears them on each repetition and RE2 keeps the last.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinearRegExp } from '#shared/domain/lang/linear-regex.ts';
import { assertDifferential } from '../../../support/differential.ts';

const TEXT_CHARS = [
  'a',
  'b',
  'c',
  'A',
  'B',
  '1',
  '2',
  ' ',
  '-',
  '.',
  '_',
  '\n',
  '\t',
  '\u00a0',
  'é',
  'É',
  '\u3000',
];
const LINE_ENDS = ['\r', '\u2028'];
const ASTRAL = ['😀', '𝒜'];

const literal = fc.constantFrom(
  'a',
  'b',
  'c',
  'A',
  '1',
  ' ',
  '\\.',
  '\\-',
  '\\n',
  '\\t',
  'é',
  '\\u00e9',
  '\\x41',
);
const classAtom = fc.constantFrom(
  '[ab]',
  '[^a]',
  '[a-c]',
  '[\\s]',
  '[^\\s]',
  '[\\d\\-]',
  '[\\S1]',
  '[.]',
  '[]',
  '[^]',
  '[\\w]',
);
const shorthand = fc.constantFrom('.', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\b', '\\B', '^', '$');
const quantifier = fc.constantFrom(
  '',
  '',
  '',
  '*',
  '+',
  '?',
  '{1,3}',
  '{2}',
  '{0,}',
  '*?',
  '+?',
  '??',
  '{1,2}?',
);

interface Gen {
  readonly src: string;
  /** Whether it can match the empty string. */
  readonly nullable: boolean;
}
const LOOSE = new Set(['', '*', '?', '{0,}', '*?', '??']);

const { pattern } = fc.letrec<{ pattern: Gen; piece: Gen; atom: Gen & { group: boolean } }>((tie) => ({
  atom: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    literal.map((src) => ({ src, nullable: false, group: false })),
    literal.map((src) => ({ src, nullable: false, group: false })),
    classAtom.map((src) => ({ src, nullable: false, group: false })),
    shorthand.map((src) => ({ src, nullable: /^(\^|\$|\\b|\\B)$/.test(src), group: false })),
    tie('pattern').map((p) => ({ src: `(${p.src})`, nullable: p.nullable, group: true })),
    tie('pattern').map((p) => ({ src: `(?:${p.src})`, nullable: p.nullable, group: true })),
  ),
  piece: fc.tuple(tie('atom'), quantifier).map(([atom, q]) => {
    // A quantifier after an anchor or a boundary is a syntax error with the u flag; a repeated group that can
    // match nothing is the documented difference (JavaScript refuses empty iterations, RE2 stops): left bare.
    if (/^(\^|\$|\\b|\\B)$/.test(atom.src) || (atom.group && atom.nullable)) return atom;
    return { src: atom.src + q, nullable: atom.nullable || LOOSE.has(q) };
  }),
  pattern: fc
    .array(fc.array(tie('piece'), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 })
    .map((branches) => ({
      src: branches.map((b) => b.map((p) => p.src).join('')).join('|'),
      nullable: branches.some((b) => b.every((p) => p.nullable)),
    })),
}));

const flagSets = fc.constantFrom('', 'u', 'i', 'm', 's', 'iu', 'mu', 'su', 'imsu');

function textFor(flags: string) {
  const chars = [
    ...TEXT_CHARS,
    ...(flags.includes('m') ? [] : LINE_ENDS),
    ...(flags.includes('u') ? ASTRAL : []),
  ];
  return fc.array(fc.constantFrom(...chars), { maxLength: 12 }).map((c) => c.join(''));
}

function nativeOutcome(source: string, flags: string, text: string) {
  const m = new RegExp(source, flags).exec(text);
  return m === null ? null : { index: m.index, match: m[0] };
}

function linearOutcome(source: string, flags: string, text: string) {
  const m = new LinearRegExp(source, flags).exec(text);
  return m === null ? null : { index: m.index, match: m[0] };
}

describe('LinearRegExp against RegExp', () => {
  it('finds the same first match on generated patterns and texts', () => {
    assertDifferential(
      fc.property(
        flagSets.chain((flags) =>
          fc.tuple(
            fc.constant(flags),
            pattern.map((p) => p.src),
            fc.array(textFor(flags), { maxLength: 4 }),
          ),
        ),
        ([flags, source, texts]) => {
          try {
            new RegExp(source, flags);
          } catch {
            return; // Not JavaScript: refused by both, asserted in linear-regex.test.ts.
          }
          for (const text of texts) {
            if (source.includes('\\B') && /[\u{10000}-\u{10ffff}]/u.test(text)) continue;
            expect(
              linearOutcome(source, flags, text),
              `/${source}/${flags} on ${JSON.stringify(text)}`,
            ).toEqual(nativeOutcome(source, flags, text));
          }
        },
      ),
      600,
    );
  }, 60_000);

  it('walks the same matches with the g flag (lastIndex)', () => {
    assertDifferential(
      fc.property(
        flagSets.chain((flags) =>
          fc.tuple(
            fc.constant(flags),
            pattern.map((p) => p.src),
            textFor(flags),
          ),
        ),
        ([flags, source, text]) => {
          try {
            new RegExp(source, flags);
          } catch {
            return;
          }
          if (source.includes('\\B') && /[\u{10000}-\u{10ffff}]/u.test(text)) return;
          const all = (re: { exec(s: string): RegExpExecArray | null; lastIndex: number }) => {
            const found: [number, string][] = [];
            for (let m = re.exec(text); m !== null && found.length < 20; m = re.exec(text)) {
              found.push([m.index, m[0]]);
              // Past an empty match by one character, a code point with the u flag (as String#matchAll does).
              if (m[0] === '')
                re.lastIndex += flags.includes('u') && (text.codePointAt(re.lastIndex) ?? 0) > 0xffff ? 2 : 1;
            }
            return found;
          };
          expect(all(new LinearRegExp(source, `${flags}g`)), `/${source}/${flags}g`).toEqual(
            all(new RegExp(source, `${flags}g`)),
          );
        },
      ),
      300,
    );
  }, 60_000);
});
