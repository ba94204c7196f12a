import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { LlmEnvSchema, parseEnv } from '#shared/config.ts';
import { pricedLlm } from '#shared/core/executor/usage-record.ts';
import { type LlmProvider, type ModelAliases, resolveModel } from '#shared/domain/llm-model.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import { ENV } from '#shared/topology.ts';

/**
 * Every model string resolved as the rule manager resolved it for the definition's status (`resolveModel` with the
 * operator's aliases, `CRUMBS_MODEL_ALIASES`), then handed on spelled out, `<provider>/<model id>`: so an alias and
 * a provider's `default` model mean at call time exactly what the status said when the definition was applied.
 */
export function withModelAliases(
  llm: LlmClient,
  defaultProvider: LlmProvider,
  aliases: ModelAliases,
): LlmClient {
  return {
    generate(request) {
      const { provider, model } = resolveModel(request.model, defaultProvider, 'model', aliases);
      return llm.generate({ ...request, model: `${provider}/${model}` });
    },
  };
}

/**
 * The LLM client of a function with `uses.llm`: the router on the stack's default provider, with its aliases, each
 * call priced from the operator's table (`CRUMBS_LLM_PRICES`) and recorded by a `metered` executor kind.
 */
export function llmFromEnv(env: NodeJS.ProcessEnv = process.env): LlmClient {
  const settings = parseEnv(LlmEnvSchema, env);
  const defaultProvider = settings[ENV.defaultLlmProvider];
  return pricedLlm(
    withModelAliases(
      new LlmRouter({ defaultProvider, offlineStreamDelayMs: settings[ENV.offlineStreamDelayMs] }),
      defaultProvider,
      settings[ENV.modelAliases],
    ),
    settings[ENV.llmPrices],
  );
}
