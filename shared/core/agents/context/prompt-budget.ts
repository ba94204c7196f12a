/**
 * The prompt budget: fitting a context agent's prompt into its budget in tokens (seed 004, flow 1: "optimize
 * context to token budget").
 *
 * The prompt is the system prompt and the `context` markdown (always kept: they are the agent), then the
 * assembled sources in priority order — the context builder's formatted context first, then each context
 * selector's section in the order the definition lists them. When the whole does not fit, sources are dropped
 * from the lowest priority up until it does (what is kept is always the highest-priority ones); the first one
 * that does not fit whole is cut at a token boundary rather than dropped when at least a quarter of it fits.
 * What was dropped or cut is reported, so the answer can say so.
 *
 * Counting uses the model family's tokenizer (tiktoken.ts), with 10 % held back when it is only the nearest
 * family's. It is loaded only when needed: a BPE token is at least one byte, so a prompt of at most `budget`
 * UTF-8 bytes fits without counting (most prompts).
 */
import type { Tokenizer, Tokenizers } from '#shared/ports/tokenizer.ts';

export interface ContextSource {
  readonly key: string;
  readonly text: string;
}

export interface FittedContext {
  /** The sources kept, in priority order (the last may be cut). */
  readonly sources: readonly ContextSource[];
  readonly dropped: readonly string[];
  readonly cut?: string;
  /** Tokens counted (undefined when the byte bound made counting unnecessary). */
  readonly tokens?: number;
  readonly encoding?: string;
}

const INEXACT_MARGIN = 0.9;
const SEPARATOR = '\n\n';

export async function fitContext(
  fixed: readonly string[],
  sources: readonly ContextSource[],
  budgetTokens: number,
  model: string,
  tokenizers: Tokenizers,
): Promise<FittedContext> {
  const bytes = [...fixed, ...sources.map((s) => s.text)].reduce(
    (n, t) => n + Buffer.byteLength(t, 'utf8') + SEPARATOR.length,
    0,
  );
  if (bytes <= budgetTokens) return { sources, dropped: [] };

  const tokenizer = await tokenizers.forModel(model);
  const budget = Math.floor(budgetTokens * (tokenizer.exact ? 1 : INEXACT_MARGIN));
  const fixedTokens = fixed.reduce((n, t) => n + tokenizer.count(t) + 1, 0);
  const kept: ContextSource[] = [];
  const dropped: string[] = [];
  let used = fixedTokens;
  let cut: string | undefined;
  let full = false;
  for (const source of sources) {
    if (full) {
      dropped.push(source.key);
      continue;
    }
    const tokens = tokenizer.count(source.text) + 1;
    if (used + tokens <= budget) {
      kept.push(source);
      used += tokens;
      continue;
    }
    full = true;
    const room = budget - used - 1;
    if (room >= tokens / 4) {
      kept.push({
        key: source.key,
        text: `${cutToTokens(source.text, room, tokenizer)}\n…(cut to fit the token budget)`,
      });
      used = budget;
      cut = source.key;
    } else {
      dropped.push(source.key);
    }
  }
  return {
    sources: kept,
    dropped,
    ...(cut !== undefined ? { cut } : {}),
    tokens: used,
    encoding: tokenizer.encoding,
  };
}

/** The longest prefix of `text` (on a line or word boundary when one is near) with at most `tokens` tokens. */
function cutToTokens(text: string, tokens: number, tokenizer: Tokenizer): string {
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (tokenizer.count(text.slice(0, mid)) <= tokens) lo = mid;
    else hi = mid - 1;
  }
  const prefix = text.slice(0, lo);
  const boundary = Math.max(prefix.lastIndexOf('\n'), prefix.lastIndexOf(' '));
  return boundary > lo * 0.8 ? prefix.slice(0, boundary) : prefix;
}
