/**
 * Which provider and model a model string means. A definition's `model` is either `<provider>/<model id>`
 * (`bedrock/anthropic.claude-3-5-haiku-20241022-v1:0`, `openrouter/openai/gpt-4o-mini`, `offline/crumbs`) or a
 * bare model id without a slash (seed 002's `gpt-4`), which runs on the stack's configured default provider
 * (`CRUMBS_DEFAULT_LLM_PROVIDER`: `offline` in the local stack, the CDK context value `crumbs:defaultLlmProvider`
 * on AWS, see docs/deploy.md). An agent without a model runs the default provider's `default` model.
 *
 * A string whose part before the first slash is not a provider (`antrhopic/claude-3`) is an error, never a
 * silent fallback: the rule manager reports it as an `invalid` definition at apply time, and the definition's
 * status says which provider and model will run (`llm: { provider, model }`). The LLM router resolves model
 * strings with this same function at call time.
 */
import { ENV } from '#shared/topology.ts';
import { ValidationError } from './errors.ts';
import * as z from './zod.ts';

export const LLM_PROVIDERS = [
  'bedrock',
  'openrouter',
  'openai',
  'ollama',
  'openai-compatible',
  'offline',
] as const;
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

export const LlmProviderSchema = z.enum(LLM_PROVIDERS, {
  error: `expected one of ${LLM_PROVIDERS.join(', ')}`,
});

/** The model an agent without `model` runs: its provider's default. */
export const DEFAULT_MODEL_ID = 'default';

export interface ResolvedModel {
  provider: LlmProvider;
  /** The provider's own model id (the part after `<provider>/`). */
  model: string;
}

/**
 * Resolves a model string (or its absence) against the default provider. Throws ValidationError at `path` for an
 * unknown provider, or for a bare model id when no default provider is configured.
 */
export function resolveModel(
  model: string | undefined,
  defaultProvider: LlmProvider | undefined,
  path = 'model',
): ResolvedModel {
  const text = model?.trim() ?? '';
  const slash = text.indexOf('/');
  if (slash >= 0) {
    const prefix = text.slice(0, slash);
    if (!(LLM_PROVIDERS as readonly string[]).includes(prefix)) {
      throw new ValidationError([
        {
          path,
          message:
            `"${text}" names the provider "${prefix}", which is not one of ${LLM_PROVIDERS.join(', ')}; ` +
            'write <provider>/<model id>, or a model id without a slash for the default provider',
        },
      ]);
    }
    return { provider: prefix as LlmProvider, model: text.slice(slash + 1) || DEFAULT_MODEL_ID };
  }
  if (defaultProvider === undefined) {
    throw new ValidationError([
      {
        path,
        message:
          `"${text || DEFAULT_MODEL_ID}" names no provider and this stack has no default provider ` +
          `(${ENV.defaultLlmProvider}); write <provider>/<model id>`,
      },
    ]);
  }
  return { provider: defaultProvider, model: text || DEFAULT_MODEL_ID };
}
