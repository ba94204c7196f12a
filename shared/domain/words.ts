/**
 * The words of a breadcrumb's text fields, as the change event carries them for `contains_any` (see
 * `change-event.ts` and `shared/routing/compiler.ts`). EventBridge compares values only whole and case-sensitively,
 * and `*word*` wildcards make rules "too complex" after a few values; so the publisher lists the words of every
 * text field in the event (`detail.words`, mirroring the context's paths) and `contains_any` compiles to plain
 * equality on those words.
 *
 * The rule: this module is the one place words are derived. The publisher (what EventBridge matches), the
 * executor's re-check and `explain` all call it, so they agree. What a word is: `textWords`. Which fields have
 * words, and the limits that keep the event small (EventBridge takes 1 MB; we stay near one 64 KB chunk): `contextWords`.
 */

/** Distinct words kept per text field in the change event. */
export const MAX_WORDS_PER_FIELD = 1000;
/** Bytes of serialized words (`JSON.stringify(words)`) kept in one change event. */
export const MAX_WORDS_BYTES = 32 * 1024;

export interface WordLimits {
  readonly perField: number;
  readonly totalBytes: number;
}

/** The change event's limits. */
export const EVENT_WORD_LIMITS: WordLimits = { perField: MAX_WORDS_PER_FIELD, totalBytes: MAX_WORDS_BYTES };
/** No limits: the re-check against a stored breadcrumb must see every word. */
export const NO_WORD_LIMITS: WordLimits = {
  perField: Number.POSITIVE_INFINITY,
  totalBytes: Number.POSITIVE_INFINITY,
};

/** A tree mirroring the context's objects, with a list of words at each text field. */
export interface WordTree {
  [key: string]: string[] | WordTree;
}

export interface ContextWords {
  readonly words: WordTree;
  /** True when a limit cut some field's words: matching on words alone may miss. */
  readonly truncated: boolean;
}

const WORD = /[\p{L}\p{M}\p{N}\p{Pc}]+(?:(?:['’.:·]|(?<=\p{N}),(?=\p{N}))[\p{L}\p{M}\p{N}\p{Pc}]+)*/gu;
const UNSPACED_SCRIPT =
  /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]/u;

// One segmenter per process. The locale is fixed so the host's locale settings cannot change what a word is.
let segmenter: Intl.Segmenter | undefined;

function* segmentWords(text: string): Generator<string> {
  for (const [run] of text.normalize('NFKC').matchAll(WORD)) {
    if (!UNSPACED_SCRIPT.test(run)) {
      yield run.toLowerCase();
      continue;
    }
    segmenter ??= new Intl.Segmenter('en', { granularity: 'word' });
    for (const segment of segmenter.segment(run)) {
      if (segment.isWordLike) yield segment.segment.toLowerCase();
    }
  }
}

/**
 * The distinct words of a text, normalized and lowercased, in order of first appearance (EventBridge matches an
 * array when any element matches, so order and repeats carry no meaning).
 *
 * - Text is normalized with NFKC (full-width letters, ligatures and composed accents compare equal to their plain
 *   forms) and lowercased. A word is a run of letters, combining marks, digits and connector punctuation (`_`),
 *   which may continue across one `'`, `’`, `.`, `:` or `·` between such characters, or one `,` between digits:
 *   the Unicode word-boundary rules (UAX #29) for the common cases. Everything else (spaces, punctuation, symbols,
 *   emoji) separates words. "Can you list my files?" → can, you, list, my, files. "don't", "file.txt", "v1.2",
 *   "3.14", "1,000", "snake_case" and "user:message" are single words; "e-mail" and "a@b" are two.
 * - Scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) are split further with
 *   `Intl.Segmenter` (UAX #29 with ICU's dictionaries): "我想列出我的文件" → 我想, 列出, 我的, 文件. Only those runs go
 *   through the segmenter: it is about a hundred times slower than the regular expression on Latin text.
 * - No stemming: "file" does not match "files".
 */
export function textWords(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  const seen = new Set<string>();
  for (const word of segmentWords(text)) {
    if (seen.size >= limit) break;
    seen.add(word);
  }
  return [...seen];
}

/**
 * The word a `contains_any` value stands for, or why it stands for none: the value must hold exactly one word
 * (punctuation around it is ignored, so "list!" is the word "list").
 */
export function valueWord(value: string): { word: string } | { words: string[] } {
  const words = textWords(value, 2);
  return words.length === 1 && words[0] !== undefined ? { word: words[0] } : { words: textWords(value) };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The words of every text field of `context`, within `limits`. Only string fields reached through objects have
 * words; strings inside arrays do not, so on an array field `contains_any` keeps EventBridge's element equality.
 *
 * The event's limits ({@link EVENT_WORD_LIMITS}): at most {@link MAX_WORDS_PER_FIELD} distinct words per field and
 * {@link MAX_WORDS_BYTES} bytes of serialized words in all. Past either the list is cut and `truncated` is true;
 * the event then says `words_truncated: true`, which compiled `contains_any` conditions accept as "maybe", so the
 * executor's re-check (which derives words with {@link NO_WORD_LIMITS}) decides on the stored breadcrumb.
 */
export function contextWords(context: unknown, limits: WordLimits = EVENT_WORD_LIMITS): ContextWords {
  // Bytes so far of the serialized tree, counted as the fields are added (an estimate that never undercounts:
  // each word costs its JSON string length plus a comma, each field its quoted key, colon, brackets and comma).
  let bytes = 2;
  let truncated = false;
  const walk = (node: Record<string, unknown>): WordTree | undefined => {
    const out: WordTree = {};
    let any = false;
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === 'string') {
        const all = textWords(value, limits.perField + 1);
        if (all.length > limits.perField) truncated = true;
        const fieldCost = JSON.stringify(key).length + 4;
        if (bytes + fieldCost > limits.totalBytes) {
          if (all.length > 0) truncated = true;
          continue;
        }
        const kept: string[] = [];
        let cost = fieldCost;
        for (const word of all.slice(0, limits.perField)) {
          const wordCost = JSON.stringify(word).length + 1;
          if (bytes + cost + wordCost > limits.totalBytes) {
            truncated = true;
            break;
          }
          kept.push(word);
          cost += wordCost;
        }
        if (kept.length === 0) continue;
        bytes += cost;
        out[key] = kept;
        any = true;
      } else if (isPlainObject(value)) {
        const keyCost = JSON.stringify(key).length + 4;
        bytes += keyCost;
        const child = walk(value);
        if (child) {
          out[key] = child;
          any = true;
        } else {
          bytes -= keyCost;
        }
      }
    }
    return any ? out : undefined;
  };
  const words = isPlainObject(context) ? (walk(context) ?? {}) : {};
  return { words, truncated };
}
