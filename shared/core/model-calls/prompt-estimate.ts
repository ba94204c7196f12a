/**
 * How many input tokens a model call will be billed, estimated before it is made, two ways:
 *
 * - `promptTokens`: the request budgets' estimate (`shared/domain/budget.ts` `callRefusal`): the model family's
 *   tokenizer when there is one (10 % more when it is only the nearest family's), else the UTF-8 bytes.
 * - `promptTokenBound`: the daily budget's reservation (`daily-budget.ts`), which must be an upper bound, so the
 *   day's spend cannot pass its limit through many calls each a little over their estimate: the UTF-8 bytes of
 *   everything sent (a BPE token is at least one byte), plus what a provider adds around it — a few tokens of chat
 *   framing per message, and its own tool-use instructions when tools are offered (a few hundred tokens).
 */
import type { LlmMessage, LlmToolSpec } from '#shared/ports/llm.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';

export interface PromptParts {
  readonly model: string;
  readonly system: string;
  readonly messages: readonly LlmMessage[];
  readonly tools?: readonly LlmToolSpec[] | undefined;
}

/** Chat framing a provider adds per message (role markers, separators): generous for every template we know. */
export const FRAMING_TOKENS_PER_MESSAGE = 8;
/** What a provider adds to a prompt that offers tools (its tool-use instructions). */
export const TOOL_USE_TOKENS = 512;

function texts(parts: PromptParts): string[] {
  const tools = parts.tools ?? [];
  return [
    parts.system,
    ...parts.messages.map((m) => JSON.stringify(m)),
    ...(tools.length > 0 ? [JSON.stringify(tools)] : []),
  ];
}

/**
 * The prompt's tokens, over-counted rather than under: each message as its JSON, a few tokens of framing each, and
 * 10 % more when the tokenizer is only the nearest family's; without a tokenizer its UTF-8 bytes.
 */
export async function promptTokens(parts: PromptParts, tokenizers: Tokenizers | undefined): Promise<number> {
  const all = texts(parts);
  if (tokenizers === undefined) return all.reduce((n, t) => n + Buffer.byteLength(t, 'utf8'), 0);
  const tokenizer = await tokenizers.forModel(parts.model);
  const counted = all.reduce((n, t) => n + tokenizer.count(t) + 4, 0);
  return Math.ceil(tokenizer.exact ? counted : counted / 0.9);
}

/** An upper bound of the input tokens any provider bills for this prompt (see the header). */
export function promptTokenBound(parts: PromptParts): number {
  const bytes = texts(parts).reduce((n, t) => n + Buffer.byteLength(t, 'utf8'), 0);
  const framing = (parts.messages.length + 1) * FRAMING_TOKENS_PER_MESSAGE;
  return bytes + framing + ((parts.tools ?? []).length > 0 ? TOOL_USE_TOKENS : 0);
}
