/**
 * The `llm` built-in tool's `config` (`tool.def.v1` with `implementation: "llm"`), checked when the definition is
 * written, and the rule for which model a call runs:
 *
 *   config: { model?, allowed_models?: [model, …], budget?: { max_tokens_per_request?, max_cost_usd_per_request? } }
 *
 * - The definition chooses the model: `config.model` (absent: the stack's default model, `default`). A request's
 *   `input.model` may name it again, or one of `config.allowed_models` — the list the definition allows a caller to
 *   pick from; any other is refused naming `input.model`, so a caller (a model writing tool calls among them)
 *   cannot run the tool on a model the definition did not choose. Models are compared as written.
 * - `config.budget`: each request's model call answers to it before it is made, as an agent's `budget` does
 *   (`shared/domain/budget.ts`); a request's `budget` (the share a caller passes on) can only lower it.
 */
import { AgentBudgetSchema, agentLimits, type BudgetLimits } from './budget.ts';
import { DEFAULT_MODEL_ID } from './llm-model.ts';
import * as z from './zod.ts';

/** At most this many models in `config.allowed_models`. */
export const MAX_ALLOWED_MODELS = 50;

const ModelString = z
  .string({
    error: 'expected a model string (<provider>/<model id>, or a model id for the default provider)',
  })
  .check(z.minLength(1, 'expected a model string, not empty'), z.maxLength(200, 'at most 200 characters'));

export const LlmToolConfigSchema = z.object({
  model: z.optional(ModelString),
  allowed_models: z.optional(
    z
      .array(ModelString, { error: 'expected a list of model strings' })
      .check(
        z.minLength(1, 'list at least one model, or leave allowed_models out'),
        z.maxLength(MAX_ALLOWED_MODELS, `at most ${MAX_ALLOWED_MODELS} models`),
      ),
  ),
  budget: z.optional(AgentBudgetSchema),
});
export type LlmToolConfig = z.output<typeof LlmToolConfigSchema>;

/** The config as written, or an empty one when it does not parse (a definition that did is refused on write). */
export function llmToolConfig(config: Record<string, unknown>): LlmToolConfig {
  const parsed = LlmToolConfigSchema.safeParse(config);
  return parsed.success ? parsed.data : {};
}

/** The model a request runs, or why not (the message names `input.model`). */
export function llmToolModel(
  config: LlmToolConfig,
  requested: string | undefined,
): { model: string } | { refused: string } {
  const configured = config.model ?? DEFAULT_MODEL_ID;
  if (requested === undefined || requested === configured) return { model: configured };
  if (config.allowed_models?.includes(requested)) return { model: requested };
  const allowed = config.allowed_models;
  return {
    refused:
      `input.model "${requested}" is not allowed: this tool runs ${config.model !== undefined ? `config.model "${configured}"` : "the stack's default model (no config.model)"}` +
      (allowed !== undefined
        ? ` or one of config.allowed_models (${allowed.join(', ')})`
        : '; the definition may list the models a request may choose in config.allowed_models'),
  };
}

/** The request budget of an `llm` tool's call: its `config.budget`. */
export function llmToolLimits(config: LlmToolConfig): BudgetLimits {
  return agentLimits(config.budget);
}
