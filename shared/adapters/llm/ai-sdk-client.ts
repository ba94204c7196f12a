/**
 * The LlmClient adapter on the Vercel AI SDK (`generateText`, native tool calling). The provider is chosen from
 * the model string's prefix:
 *
 *   bedrock/<modelId>            Amazon Bedrock Converse (through the AWS SDK client: IAM role credentials)
 *   openrouter/<model>           OpenRouter   (OPENROUTER_BASE_URL, default https://openrouter.ai/api/v1)
 *   openai/<model>               OpenAI       (OPENAI_BASE_URL, default https://api.openai.com/v1)
 *   ollama/<model>               Ollama       (OLLAMA_BASE_URL, default http://127.0.0.1:11434/v1)
 *   openai-compatible/<model>    vLLM, LM Studio, ... (OPENAI_COMPATIBLE_BASE_URL, required)
 *   offline/<name>               the deterministic offline model (no network; see offline-model.ts)
 *
 * A model without a known prefix (`gpt-4`, as in the seeds) goes to `CRUMBS_DEFAULT_LLM_PROVIDER` (default
 * `offline`, so nothing leaves the machine unless a provider is configured). Keys: see api-keys.ts.
 *
 * Tools are offered without `execute`, so a tool call ends the step and comes back as data. Tool names are
 * encoded for providers that accept only `[a-zA-Z0-9_-]` (`context.build` → `context__build`) and decoded on the
 * way back, so the caller only ever sees crumbs names.
 */

import { createAmazonBedrock } from '@ai-sdk/amazon-bedrock';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
} from '@aws-sdk/client-bedrock-runtime';
import {
  APICallError,
  generateText,
  jsonSchema,
  type LanguageModel,
  type ModelMessage,
  type OutputInterface,
  type ToolSet,
  tool,
} from 'ai';
import { NonRetriableError, RetriableError } from '#shared/domain/errors.ts';
import type {
  LlmClient,
  LlmFinishReason,
  LlmMessage,
  LlmRequest,
  LlmResponse,
  LlmToolCall,
} from '#shared/ports/llm.ts';
import { type ApiKeySource, apiKeysFromEnv } from './api-keys.ts';
import { OFFLINE_PROVIDER, OfflineLanguageModel } from './offline-model.ts';

export const PROVIDERS = [
  'bedrock',
  'openrouter',
  'openai',
  'ollama',
  'openai-compatible',
  OFFLINE_PROVIDER,
] as const;
export type Provider = (typeof PROVIDERS)[number];

const BASE_URLS: Record<
  'openrouter' | 'openai' | 'ollama' | 'openai-compatible',
  { env: string; default?: string }
> = {
  openrouter: { env: 'OPENROUTER_BASE_URL', default: 'https://openrouter.ai/api/v1' },
  openai: { env: 'OPENAI_BASE_URL', default: 'https://api.openai.com/v1' },
  ollama: { env: 'OLLAMA_BASE_URL', default: 'http://127.0.0.1:11434/v1' },
  'openai-compatible': { env: 'OPENAI_COMPATIBLE_BASE_URL' },
};

/** Splits `provider/model`; a string without a known provider prefix uses the default provider. */
export function parseModel(
  model: string,
  env: NodeJS.ProcessEnv = process.env,
): { provider: Provider; modelId: string } {
  const slash = model.indexOf('/');
  const prefix = slash > 0 ? model.slice(0, slash) : '';
  if ((PROVIDERS as readonly string[]).includes(prefix)) {
    return { provider: prefix as Provider, modelId: model.slice(slash + 1) || 'default' };
  }
  const fallback = env.CRUMBS_DEFAULT_LLM_PROVIDER?.trim() || OFFLINE_PROVIDER;
  if (!(PROVIDERS as readonly string[]).includes(fallback)) {
    throw new NonRetriableError(
      `CRUMBS_DEFAULT_LLM_PROVIDER is "${fallback}"; expected one of ${PROVIDERS.join(', ')}`,
    );
  }
  return { provider: fallback as Provider, modelId: model || 'default' };
}

export interface AiSdkLlmClientOptions {
  env?: NodeJS.ProcessEnv;
  apiKeys?: ApiKeySource;
  /** The Bedrock runtime client Converse requests go through. @default one per container */
  bedrockClient?: BedrockRuntimeClient;
  /** fetch for the OpenAI-compatible providers (tests). @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** Retries inside the AI SDK for 429/5xx before the error goes back to SQS. @default 1 */
  maxRetries?: number;
}

let defaultBedrockClient: BedrockRuntimeClient | undefined;

export class AiSdkLlmClient implements LlmClient {
  private readonly env: NodeJS.ProcessEnv;
  private readonly apiKeys: ApiKeySource;
  private readonly options: AiSdkLlmClientOptions;

  constructor(options: AiSdkLlmClientOptions = {}) {
    this.options = options;
    this.env = options.env ?? process.env;
    this.apiKeys = options.apiKeys ?? apiKeysFromEnv(this.env);
  }

  async generate(request: LlmRequest): Promise<LlmResponse> {
    const { provider, modelId } = parseModel(request.model, this.env);
    const model = await this.languageModel(provider, modelId);
    const names = new ToolNames();
    const tools: ToolSet = {};
    for (const spec of request.tools ?? []) {
      tools[names.encode(spec.name)] = tool({
        description: spec.description,
        inputSchema: jsonSchema(spec.inputSchema),
      });
    }
    const hasTools = Object.keys(tools).length > 0;
    try {
      const result = await generateText({
        model,
        system: request.system,
        messages: toModelMessages(request.messages, names),
        ...(hasTools ? { tools } : {}),
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(request.maxOutputTokens !== undefined ? { maxOutputTokens: request.maxOutputTokens } : {}),
        ...(request.responseSchema !== undefined ? { output: rawJsonOutput(request.responseSchema) } : {}),
        ...(request.signal !== undefined ? { abortSignal: request.signal } : {}),
        maxRetries: this.options.maxRetries ?? 1,
      });
      const toolCalls: LlmToolCall[] = result.toolCalls.map((c) => ({
        id: c.toolCallId,
        name: names.decode(c.toolName),
        input: c.input,
      }));
      return {
        text: result.text,
        toolCalls,
        finishReason: toolCalls.length > 0 ? 'tool-calls' : finishReason(result.finishReason),
        usage: { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens },
        model: `${provider}/${modelId}`,
      };
    } catch (error) {
      throw classify(error, `${provider}/${modelId}`, request.signal);
    }
  }

  private bedrockClient(): BedrockRuntimeClient {
    if (this.options.bedrockClient) return this.options.bedrockClient;
    defaultBedrockClient ??= new BedrockRuntimeClient({});
    return defaultBedrockClient;
  }

  private async languageModel(provider: Provider, modelId: string): Promise<Exclude<LanguageModel, string>> {
    switch (provider) {
      case OFFLINE_PROVIDER:
        return new OfflineLanguageModel(modelId);
      case 'bedrock': {
        const client = this.bedrockClient();
        const bedrock = createAmazonBedrock({
          region: this.env.AWS_REGION ?? this.env.AWS_DEFAULT_REGION ?? 'us-east-1',
          // The request is sent by the AWS SDK client (which signs it with the function's role), not by fetch:
          // the bearer key here only makes the AI SDK skip its own signing, and the bridge drops it.
          apiKey: 'signed-by-aws-sdk',
          fetch: converseThroughSdk(client),
        });
        return bedrock(modelId);
      }
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
            `no API key for ${provider}: set ${provider === 'openai' ? 'OPENAI_API_KEY' : 'OPENROUTER_API_KEY'} ` +
              'locally, or the Secrets Manager secret <CRUMBS_SECRET_PREFIX><provider> on AWS',
          );
        }
        const compatible = createOpenAICompatible({
          name: provider,
          baseURL,
          ...(apiKey ? { apiKey } : {}),
          // OpenAI and OpenRouter take `json_schema` response formats; other servers get `json_object` plus the
          // schema in the prompt (the safe common denominator of Ollama, vLLM, LM Studio).
          supportsStructuredOutputs: provider === 'openai' || provider === 'openrouter',
          ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
        });
        return compatible.chatModel(modelId);
      }
    }
  }
}

/** Structured output: send the schema as the response format and return the raw text (the caller validates). */
function rawJsonOutput(schema: Record<string, unknown>): OutputInterface<string, string, never> {
  return {
    name: 'object',
    responseFormat: Promise.resolve({ type: 'json', schema: jsonSchema(schema).jsonSchema as never }),
    parseCompleteOutput: async ({ text }) => text,
    parsePartialOutput: async ({ text }) => ({ partial: text }),
    createElementStreamTransform: () => undefined,
  };
}

class ToolNames {
  private readonly toProvider = new Map<string, string>();
  private readonly toCrumbs = new Map<string, string>();

  encode(name: string): string {
    const known = this.toProvider.get(name);
    if (known !== undefined) return known;
    let encoded = name
      .replace(/\./g, '__')
      .replace(/[^a-zA-Z0-9_-]/g, '_')
      .slice(0, 64);
    while (this.toCrumbs.has(encoded)) encoded = `${encoded.slice(0, 60)}_${this.toCrumbs.size}`;
    this.toProvider.set(name, encoded);
    this.toCrumbs.set(encoded, name);
    return encoded;
  }

  decode(encoded: string): string {
    return this.toCrumbs.get(encoded) ?? encoded;
  }
}

function toModelMessages(messages: LlmMessage[], names: ToolNames): ModelMessage[] {
  return messages.map((m): ModelMessage => {
    switch (m.role) {
      case 'user':
        return { role: 'user', content: m.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: [
            ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
            ...(m.toolCalls ?? []).map((c) => ({
              type: 'tool-call' as const,
              toolCallId: c.id,
              toolName: names.encode(c.name),
              input: c.input,
            })),
          ],
        };
      default:
        return {
          role: 'tool',
          content: m.results.map((r) => ({
            type: 'tool-result' as const,
            toolCallId: r.toolCallId,
            toolName: names.encode(r.toolName),
            output: r.isError
              ? {
                  type: 'error-text' as const,
                  value: typeof r.output === 'string' ? r.output : JSON.stringify(r.output),
                }
              : { type: 'json' as const, value: (r.output ?? null) as never },
          })),
        };
    }
  });
}

function finishReason(reason: string): LlmFinishReason {
  return (
    (['stop', 'tool-calls', 'length', 'content-filter', 'error'] as const).find((r) => r === reason) ??
    'other'
  );
}

/** Throttling, 5xx and timeouts retry via SQS; everything else (bad key, bad request) answers with an error. */
function classify(error: unknown, model: string, signal: AbortSignal | undefined): Error {
  if (error instanceof RetriableError || error instanceof NonRetriableError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (
    signal?.aborted ||
    (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))
  ) {
    return new RetriableError(`${model}: the call was aborted (timeout): ${message}`, { cause: error });
  }
  const apiError = findApiCallError(error);
  if (apiError) {
    const status = apiError.statusCode ?? 0;
    const text = `${model} answered ${status || 'no status'}: ${apiError.message}`;
    return apiError.isRetryable || status === 429 || status >= 500
      ? new RetriableError(text, { cause: error })
      : new NonRetriableError(text, { cause: error });
  }
  return new NonRetriableError(`${model}: ${message}`, { cause: error });
}

function findApiCallError(error: unknown): APICallError | undefined {
  if (APICallError.isInstance(error)) return error;
  // RetryError wraps the last attempt's error.
  const last = (error as { lastError?: unknown } | null)?.lastError;
  return APICallError.isInstance(last) ? last : undefined;
}

/**
 * A fetch that hands the AI SDK's Converse request to the AWS SDK's BedrockRuntimeClient: the SDK signs with the
 * function's role credentials (no keys in env), retries throttling with its own policy, and is what
 * `aws-sdk-client-mock` intercepts in tests. The request and response bodies are the Converse JSON shapes.
 */
export function converseThroughSdk(client: BedrockRuntimeClient): typeof globalThis.fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const match = /\/model\/([^/]+)\/converse$/.exec(url.pathname);
    if (!match?.[1]) {
      return jsonResponse(400, {
        message: `crumbs only sends Converse requests to Bedrock, not ${url.pathname}`,
      });
    }
    const body = JSON.parse(typeof init?.body === 'string' ? init.body : '{}') as Omit<
      ConverseCommandInput,
      'modelId'
    >;
    try {
      const out: ConverseCommandOutput = await client.send(
        new ConverseCommand({ ...body, modelId: decodeURIComponent(match[1]) }),
        init?.signal ? { abortSignal: init.signal } : {},
      );
      const { $metadata: _metadata, ...payload } = out;
      return jsonResponse(200, payload);
    } catch (error) {
      const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'AbortError') throw error;
      const status = e.$metadata?.httpStatusCode ?? 500;
      return jsonResponse(status, { message: `${e.name ?? 'Error'}: ${e.message ?? String(error)}` });
    }
  };
}

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}
