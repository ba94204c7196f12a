import { DynamoBudgetCounters } from '#shared/adapters/dynamodb/budget-counters.ts';
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { LlmEnvSchema, parseEnv, TableEnvSchema } from '#shared/config.ts';
import { dailyBudget } from '#shared/core/model-calls/daily-budget.ts';
import { governedLlm, invocationWorkspace } from '#shared/core/model-calls/governed-llm.ts';
import { type LlmProvider, type ModelAliases, resolveModel } from '#shared/domain/llm-model.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import type { Log } from '#shared/ports/log.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { withAttachmentData } from '#shared/rooms/attachments/model-input.ts';
import { attachmentSourceFromEnv } from '#shared/rooms/attachments/spill-from-env.ts';
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

export interface LlmWiring {
  /** Counts prompts for the request budgets; without it they count UTF-8 bytes. */
  readonly tokenizers?: Tokenizers;
  readonly log?: Log;
}

/**
 * The LLM client of a function with `uses.llm`: the router on the stack's default provider, with its aliases, and
 * every call on the one governed path (`shared/core/model-calls/`): checked against the invocation's request
 * budget and reserved from the workspace's daily budget (`CRUMBS_DAILY_BUDGETS`, counted in the table) before it
 * is made, priced from the operator's table (`CRUMBS_LLM_PRICES`) and recorded by a `metered` executor kind after.
 */
export function llmFromEnv(env: NodeJS.ProcessEnv = process.env, wiring: LlmWiring = {}): LlmClient {
  const settings = parseEnv(LlmEnvSchema, env);
  const defaultProvider = settings[ENV.defaultLlmProvider];
  // The day's counters live in the table; without a daily budget nothing is read or written.
  const budgets = settings[ENV.dailyBudgets];
  const daily =
    budgets.default === undefined && Object.keys(budgets.workspaces ?? {}).length === 0
      ? undefined
      : dailyBudget(budgets, {
          counters: new DynamoBudgetCounters(parseEnv(TableEnvSchema, env)[ENV.tableName]),
          clock: systemClock,
          log: wiring.log,
        });
  const router = new LlmRouter({ defaultProvider, offlineStreamDelayMs: settings[ENV.offlineStreamDelayMs] });
  // Attachments are read and checked against the provider's limits after the budgets, just before the provider.
  const attachments = attachmentSourceFromEnv(env);
  return withModelAliases(
    governedLlm(attachments ? withAttachmentData(router, attachments, invocationWorkspace) : router, {
      prices: settings[ENV.llmPrices],
      daily,
      tokenizers: wiring.tokenizers,
      traceContent: { capture: env[ENV.otelCaptureContent] === 'true' },
    }),
    defaultProvider,
    settings[ENV.modelAliases],
  );
}
