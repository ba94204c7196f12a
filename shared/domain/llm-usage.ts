/**
 * What a model call costs, and the record of the calls an executor invocation made (`llm_usage` in the context of
 * one breadcrumb that invocation writes anyway: the answer, the tool request of a tool round, the conversation, a
 * plan or deliverable). The stream consumer sums these records into totals (`shared/core/stream/usage-totals.ts`).
 *
 * Prices are USD per million tokens per `<provider>/<model id>` (or `<provider>/*`), from a default table with the
 * page each figure comes from, overridden by the operator (`CRUMBS_LLM_PRICES`). A call's cost is kept in whole
 * nano-dollars, rounded once per call, so totals are exact integer sums of the calls (floats would drift).
 */
import * as z from './zod.ts';

export interface ModelPrice {
  /** USD per million input tokens not read from a prompt cache. */
  readonly input: number;
  /** USD per million output tokens. */
  readonly output: number;
  /** USD per million input tokens read from the provider's prompt cache; absent: the input price. */
  readonly cached_input?: number | undefined;
  /** Where the figures come from. */
  readonly source?: string | undefined;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

const BEDROCK = 'https://aws.amazon.com/bedrock/pricing/ (on-demand, us-east-1)';
const OPENAI = 'https://openai.com/api/pricing/';

/** The models this project names (README, docs, `PROVIDER_DEFAULT_MODELS`), at list prices. */
export const DEFAULT_PRICES: PriceTable = {
  'bedrock/amazon.nova-lite-v1:0': { input: 0.06, output: 0.24, cached_input: 0.015, source: BEDROCK },
  'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0': {
    input: 0.8,
    output: 4,
    cached_input: 0.08,
    source: BEDROCK,
  },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6, cached_input: 0.075, source: OPENAI },
  'openai/gpt-4o': { input: 2.5, output: 10, cached_input: 1.25, source: OPENAI },
  // OpenRouter passes the provider's price through: https://openrouter.ai/openai/gpt-4o-mini, …/gpt-4o
  'openrouter/openai/gpt-4o-mini': {
    input: 0.15,
    output: 0.6,
    cached_input: 0.075,
    source: 'https://openrouter.ai/openai/gpt-4o-mini',
  },
  'openrouter/openai/gpt-4o': {
    input: 2.5,
    output: 10,
    cached_input: 1.25,
    source: 'https://openrouter.ai/openai/gpt-4o',
  },
  // The offline model runs in the function itself; a local server (ollama) costs its own hardware.
  'offline/*': { input: 0, output: 0, source: 'runs in the function: no charge' },
  'ollama/*': { input: 0, output: 0, source: 'a local server: no per-token charge' },
};

/** At most this many entries in the operator's table: it rides in every model-calling function's environment. */
export const MAX_PRICE_ENTRIES = 200;

const usdPerMillion = z.number().check(z.minimum(0, 'at least 0'), z.maximum(10_000, 'at most 10000'));

/** `CRUMBS_LLM_PRICES`: `{ "<provider>/<model id>" | "<provider>/*": { input, output, cached_input?, source? } }`. */
export const PriceTableSchema = z
  .record(
    z.string().check(z.regex(/^[a-z-]+\/\S{1,200}$/, 'expected "<provider>/<model id>" or "<provider>/*"')),
    z.strictObject({
      input: usdPerMillion,
      output: usdPerMillion,
      cached_input: z.optional(usdPerMillion),
      source: z.optional(z.string().check(z.maxLength(500))),
    }),
  )
  .check(
    z.refine((table) => Object.keys(table).length <= MAX_PRICE_ENTRIES, {
      error: `at most ${MAX_PRICE_ENTRIES} entries`,
    }),
  );

/** The operator's entries over the defaults. */
export function priceTable(overrides: PriceTable = {}): PriceTable {
  return { ...DEFAULT_PRICES, ...overrides };
}

/** The price of `<provider>/<model>`: its own entry, else its provider's `*` entry; undefined when unpriced. */
export function priceOf(model: string, table: PriceTable): ModelPrice | undefined {
  const own = table[model];
  if (own) return own;
  const slash = model.indexOf('/');
  return slash > 0 ? table[`${model.slice(0, slash)}/*`] : undefined;
}

/** One model call as recorded: tokens, and its cost (absent when the model has no price). */
export interface LlmCallRecord {
  model: string;
  /** All input tokens, cached ones included. */
  input_tokens: number;
  output_tokens: number;
  /** Of the input tokens, those read from the provider's prompt cache. */
  cached_tokens: number;
  /** Whole nano-dollars (1e-9 USD); absent when the model is not in the price table. */
  cost_nusd?: number;
  /** How many calls the entry sums (past `MAX_RECORDED_CALLS` the rest are summed in one); absent: 1. */
  calls?: number;
}

/** What an invocation's calls are attributed to; the record on the breadcrumb (`llm_usage`). */
export interface LlmUsageRecord {
  agent_id: string;
  request_id?: string;
  run_id?: string;
  thread?: string;
  calls: LlmCallRecord[];
}

/** The context field the record rides in. */
export const LLM_USAGE_FIELD = 'llm_usage';

/** A context without its `llm_usage` record (one copied from an earlier write would be counted again). */
export function withoutUsageRecord(context: Record<string, unknown>): Record<string, unknown> {
  const { [LLM_USAGE_FIELD]: _recorded, ...rest } = context;
  return rest;
}

/** At most this many calls are itemised on one breadcrumb (an invocation makes a handful). */
export const MAX_RECORDED_CALLS = 50;

export function callRecord(
  model: string,
  usage: {
    inputTokens?: number | undefined;
    outputTokens?: number | undefined;
    cachedInputTokens?: number | undefined;
  },
  table: PriceTable,
): LlmCallRecord {
  const count = (n: number | undefined) =>
    Number.isFinite(n) && (n as number) > 0 ? Math.floor(n as number) : 0;
  const input = count(usage.inputTokens);
  const output = count(usage.outputTokens);
  const cached = Math.min(count(usage.cachedInputTokens), input);
  const price = priceOf(model, table);
  const record: LlmCallRecord = { model, input_tokens: input, output_tokens: output, cached_tokens: cached };
  if (price) {
    // USD per million tokens × tokens = micro-dollars; × 1000 = nano-dollars, rounded once for the call.
    const micro =
      (input - cached) * price.input + cached * (price.cached_input ?? price.input) + output * price.output;
    record.cost_nusd = Math.round(micro * 1000);
  }
  return record;
}

/** A record read back from a breadcrumb's context, or undefined when it is not one (anyone may write context). */
export function usageRecordOf(context: unknown): LlmUsageRecord | undefined {
  if (context === null || typeof context !== 'object') return undefined;
  const parsed = LlmUsageRecordSchema.safeParse((context as Record<string, unknown>)[LLM_USAGE_FIELD]);
  return parsed.success ? (parsed.data as LlmUsageRecord) : undefined;
}

/**
 * The record of a write made by crumbs' own writers (`agent:`, `tool:` principals), the only ones believed: a person
 * can write any context, so a record in what a person wrote counts nothing.
 */
export function writtenUsageOf(record: { updated_by: string; context: unknown }): LlmUsageRecord | undefined {
  const writer = record.updated_by;
  if (!writer.startsWith('agent:') && !writer.startsWith('tool:')) return undefined;
  return usageRecordOf(record.context);
}

const tokens = z.int().check(z.minimum(0), z.maximum(100_000_000));
const id = z.string().check(z.minLength(1), z.maxLength(256));
const LlmUsageRecordSchema = z.object({
  agent_id: id,
  request_id: z.optional(id),
  run_id: z.optional(id),
  thread: z.optional(id),
  calls: z
    .array(
      z.object({
        model: z.string().check(z.minLength(1), z.maxLength(300)),
        input_tokens: tokens,
        output_tokens: tokens,
        cached_tokens: tokens,
        cost_nusd: z.optional(z.int().check(z.minimum(0), z.maximum(1e15))),
        calls: z.optional(z.int().check(z.minimum(1), z.maximum(100_000))),
      }),
    )
    .check(z.minLength(1), z.maxLength(MAX_RECORDED_CALLS)),
});

/** What an invocation's model calls used, summed: the executors' metrics (`ModelInputTokens`, …). */
export interface ModelUsageSum {
  input_tokens: number;
  output_tokens: number;
  /** Nano-dollars of the calls whose model is priced. */
  cost_nusd: number;
}

/** The sum of the `llm_usage` records these contexts carry (none: zeros). */
export function usageSumOf(contexts: readonly unknown[]): ModelUsageSum {
  const sum: ModelUsageSum = { input_tokens: 0, output_tokens: 0, cost_nusd: 0 };
  for (const context of contexts) {
    for (const call of usageRecordOf(context)?.calls ?? []) {
      sum.input_tokens += call.input_tokens;
      sum.output_tokens += call.output_tokens;
      sum.cost_nusd += call.cost_nusd ?? 0;
    }
  }
  return sum;
}
