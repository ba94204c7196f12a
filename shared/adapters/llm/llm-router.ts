/**
 * The LlmClient adapter: routes each call to a provider by the model string's prefix and speaks that provider's
 * API directly (no LLM SDK: Converse goes through the AWS SDK the bundle has anyway; the others are one fetch).
 *
 *   bedrock/<modelId>            Amazon Bedrock Converse (through the AWS SDK client: IAM role credentials)
 *   openrouter/<model>           OpenRouter   (OPENROUTER_BASE_URL, default https://openrouter.ai/api/v1)
 *   openai/<model>               OpenAI       (OPENAI_BASE_URL, default https://api.openai.com/v1)
 *   ollama/<model>               Ollama       (OLLAMA_BASE_URL, default http://127.0.0.1:11434/v1)
 *   openai-compatible/<model>    vLLM, LM Studio, ... (OPENAI_COMPATIBLE_BASE_URL, required)
 *   offline/<name>               the deterministic offline model (no network; see offline-model.ts)
 *
 * The rule: a bare model id (`gpt-4`, as in the seeds) goes to the stack's default provider
 * (`CRUMBS_DEFAULT_LLM_PROVIDER`); an unknown prefix is an error, never a fallback (`#shared/domain/llm-model.ts`).
 * Tool calls come back as data, never executed here; tool names are encoded for providers that accept only
 * `[a-zA-Z0-9_-]` (`context.build` → `context__build`) and decoded on the way back (tool-wire.ts).
 * Keys: api-keys.ts. A request with `onDelta` streams on every provider and still answers the whole response.
 */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { NonRetriableError } from '#shared/domain/errors.ts';
import {
  LLM_PROVIDERS,
  type LlmProvider,
  LlmProviderSchema,
  resolveModel,
} from '#shared/domain/llm-model.ts';
import type { LlmClient, LlmRequest, LlmResponse } from '#shared/ports/llm.ts';
import { ENV } from '#shared/topology.ts';
import { type ApiKeySource, apiKeysFromEnv } from './api-keys.ts';
import { bedrockConverse } from './bedrock-converse.ts';
import { abortedError } from './call-errors.ts';
import {
  DEFAULT_OFFLINE_STREAM_DELAY_MS,
  generateOffline,
  OFFLINE_PROVIDER,
  streamOffline,
} from './offline-model.ts';
import { openAiChat } from './openai-chat.ts';

const BASE_URLS: Record<
  'openrouter' | 'openai' | 'ollama' | 'openai-compatible',
  { env: string; default?: string }
> = {
  openrouter: { env: ENV.openrouterBaseUrl, default: 'https://openrouter.ai/api/v1' },
  openai: { env: ENV.openaiBaseUrl, default: 'https://api.openai.com/v1' },
  ollama: { env: ENV.ollamaBaseUrl, default: 'http://127.0.0.1:11434/v1' },
  'openai-compatible': { env: ENV.openaiCompatibleBaseUrl },
};

/** The default provider named by `CRUMBS_DEFAULT_LLM_PROVIDER` in `env`; undefined when unset. */
export function defaultProviderFromEnv(env: NodeJS.ProcessEnv): LlmProvider | undefined {
  const raw = env[ENV.defaultLlmProvider]?.trim();
  if (!raw) return undefined;
  const parsed = LlmProviderSchema.safeParse(raw);
  if (!parsed.success) {
    throw new NonRetriableError(
      `${ENV.defaultLlmProvider} is "${raw}"; expected one of ${LLM_PROVIDERS.join(', ')}`,
    );
  }
  return parsed.data;
}

export interface LlmRouterOptions {
  env?: NodeJS.ProcessEnv;
  /** Where a bare model id runs. @default `CRUMBS_DEFAULT_LLM_PROVIDER` in `env`; none: bare ids are refused */
  defaultProvider?: LlmProvider;
  apiKeys?: ApiKeySource;
  /** The Bedrock runtime client Converse requests go through. @default one per container */
  bedrockClient?: BedrockRuntimeClient;
  /** fetch for the OpenAI-compatible providers (tests). @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /**
   * Retries inside the call for throttling, 5xx and network errors before the error goes back to SQS: by our
   * fetch loop for the OpenAI-compatible providers, by the default Bedrock client's `maxAttempts` for Bedrock.
   * A stream (`onDelta`) that breaks off mid-way is started again as often, on every provider.
   * @default 1
   */
  maxRetries?: number;
  /** The offline model's pause between streamed words (`CRUMBS_OFFLINE_STREAM_DELAY_MS`). @default 25 */
  offlineStreamDelayMs?: number;
}

/** Default Bedrock clients, one per region and attempt count, created once per container. */
const defaultBedrockClients = new Map<string, BedrockRuntimeClient>();

export class LlmRouter implements LlmClient {
  private readonly env: NodeJS.ProcessEnv;
  private readonly apiKeys: ApiKeySource;
  private readonly options: LlmRouterOptions;
  private readonly maxRetries: number;

  constructor(options: LlmRouterOptions = {}) {
    this.options = options;
    this.env = options.env ?? process.env;
    this.apiKeys = options.apiKeys ?? apiKeysFromEnv(this.env);
    this.maxRetries = options.maxRetries ?? 1;
  }

  async generate(request: LlmRequest): Promise<LlmResponse> {
    const defaultProvider = this.options.defaultProvider ?? defaultProviderFromEnv(this.env);
    const { provider, model: modelId } = resolveModel(request.model, defaultProvider);
    switch (provider) {
      case OFFLINE_PROVIDER: {
        const response = generateOffline(request, modelId);
        if (request.onDelta === undefined) return response;
        return streamOffline(response, request.onDelta, {
          delayMs: this.options.offlineStreamDelayMs ?? DEFAULT_OFFLINE_STREAM_DELAY_MS,
          signal: request.signal,
          onAbort: (reason) => abortedError(response.model, reason),
        });
      }
      case 'bedrock':
        return bedrockConverse(this.bedrockClient(), modelId, request, this.maxRetries);
      default: {
        const base = BASE_URLS[provider];
        const baseURL = this.env[base.env]?.trim() || base.default;
        if (!baseURL) {
          throw new NonRetriableError(
            `model ${provider}/${modelId} needs ${base.env} (the server's base URL)`,
          );
        }
        const apiKey = await this.apiKeys.apiKey(provider);
        if (!apiKey && (provider === 'openrouter' || provider === 'openai')) {
          throw new NonRetriableError(
            `no API key for ${provider}: set ${provider === 'openai' ? ENV.openaiApiKey : ENV.openrouterApiKey} ` +
              `locally, or the Secrets Manager secret <${ENV.secretPrefix}><provider> on AWS`,
          );
        }
        return openAiChat(
          {
            provider,
            modelId,
            baseURL,
            apiKey,
            jsonSchemaFormat: provider === 'openai' || provider === 'openrouter',
            maxCompletionTokens: provider === 'openai',
            // Looked up per call so a test (or a wrapper installed later) replacing globalThis.fetch is used.
            fetch: this.options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
            maxRetries: this.maxRetries,
          },
          request,
        );
      }
    }
  }

  private bedrockClient(): BedrockRuntimeClient {
    if (this.options.bedrockClient) return this.options.bedrockClient;
    const region = this.env.AWS_REGION ?? this.env.AWS_DEFAULT_REGION;
    const maxAttempts = this.maxRetries + 1;
    const key = `${region ?? ''}|${maxAttempts}`;
    let client = defaultBedrockClients.get(key);
    if (!client) {
      // Without a region in `env` the SDK resolves it as usual (AWS_REGION in the Lambda environment).
      client = new BedrockRuntimeClient({ maxAttempts, ...(region ? { region } : {}) });
      defaultBedrockClients.set(key, client);
    }
    return client;
  }
}
