/**
 * The Tokenizers port on `js-tiktoken` (the maintained JavaScript port of OpenAI's tiktoken).
 *
 * Encodings by model family:
 *   o200k_base   OpenAI gpt-4o, gpt-4.1, gpt-5, o1/o3/o4 (exact)
 *   cl100k_base  OpenAI gpt-4 and gpt-3.5 (exact), and every other family — Claude, Llama, Mistral, Titan, the
 *                offline model — for which no maintained JavaScript tokenizer exists. It is a 100k-token BPE like
 *                theirs; counts differ by some percent, which the budget's 10 % margin for inexact families
 *                (`exact: false`) absorbs. It is still a real tokenizer, not characters divided by four.
 *
 * Load time: the rank tables are big (cl100k 1.1 MB, o200k 2.3 MB of JavaScript). They are imported on first use,
 * not at cold start, and the agent functions leave `js-tiktoken` out of the bundle (installed beside it), so the
 * tables cost nothing until a context is large enough to need counting (see prompt-budget.ts: a text of at most
 * N UTF-8 bytes has at most N tokens, so small contexts are never tokenized). Loaded encodings are kept per
 * container.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import type { Tokenizer, Tokenizers } from '#shared/ports/tokenizer.ts';

export type EncodingName = 'o200k_base' | 'cl100k_base';

const loaders: Record<EncodingName, () => Promise<{ default: ConstructorParameters<typeof Tiktoken>[0] }>> = {
  o200k_base: () => import('js-tiktoken/ranks/o200k_base'),
  cl100k_base: () => import('js-tiktoken/ranks/cl100k_base'),
};

/** The encoding for a model string (`provider/model` or a bare id), and whether it is that family's own. */
export function encodingFor(model: string): { encoding: EncodingName; exact: boolean } {
  const id = (model.includes('/') ? model.slice(model.lastIndexOf('/') + 1) : model).toLowerCase();
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o)/.test(id))
    return { encoding: 'o200k_base', exact: true };
  if (/^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)/.test(id))
    return { encoding: 'cl100k_base', exact: true };
  return { encoding: 'cl100k_base', exact: false };
}

export class TiktokenTokenizers implements Tokenizers {
  private readonly loaded = new Map<EncodingName, Promise<Tiktoken>>();

  async forModel(model: string): Promise<Tokenizer> {
    const { encoding, exact } = encodingFor(model);
    let tiktoken = this.loaded.get(encoding);
    if (!tiktoken) {
      tiktoken = loaders[encoding]().then((ranks) => new Tiktoken(ranks.default));
      tiktoken.catch(() => this.loaded.delete(encoding));
      this.loaded.set(encoding, tiktoken);
    }
    const enc = await tiktoken;
    return {
      encoding,
      exact,
      // Special-token text in user content ("<|endoftext|>") is counted as ordinary text, never rejected.
      count: (text) => enc.encode(text, [], []).length,
    };
  }
}
