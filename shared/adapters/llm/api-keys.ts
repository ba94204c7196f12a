/**
 * Provider API keys. On AWS (`CRUMBS_SECRET_PREFIX` set) a key is the Secrets Manager secret
 * `<prefix><provider>` (for example `crumbs/openrouter`), either the bare key or JSON `{"apiKey": "..."}`, read
 * once and cached for the life of the container. Locally the key comes from the provider's usual environment
 * variable (`OPENROUTER_API_KEY`, `OPENAI_API_KEY`, ...).
 */
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { asCrumbsError, NonRetriableError } from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';

/** The name the embeddings endpoint's key goes by: the secret `<prefix>embeddings` on AWS, `CRUMBS_EMBEDDINGS_API_KEY` locally. */
export const EMBEDDINGS_KEY_NAME = 'embeddings';

export const API_KEY_ENV: Record<string, string> = {
  openrouter: ENV.openrouterApiKey,
  openai: ENV.openaiApiKey,
  ollama: ENV.ollamaApiKey,
  'openai-compatible': ENV.openaiCompatibleApiKey,
  /** The OpenAI-compatible embeddings endpoint's key (`crumbs:embeddings=openai-compatible/<model>`). */
  [EMBEDDINGS_KEY_NAME]: ENV.embeddingsApiKey,
};

export interface ApiKeySource {
  /** The key for a provider, or `undefined` when none is configured. */
  apiKey(provider: string): Promise<string | undefined>;
}

let defaultSecretsClient: SecretsManagerClient | undefined;

export class SecretsManagerApiKeys implements ApiKeySource {
  private readonly cache = new Map<string, Promise<string | undefined>>();
  private readonly client: SecretsManagerClient;

  constructor(
    private readonly prefix: string,
    client?: SecretsManagerClient,
  ) {
    defaultSecretsClient ??= client ?? new SecretsManagerClient({});
    this.client = client ?? defaultSecretsClient;
  }

  apiKey(provider: string): Promise<string | undefined> {
    let cached = this.cache.get(provider);
    if (!cached) {
      cached = this.read(provider);
      // A failed read is not cached: the next invocation tries again.
      cached.catch(() => this.cache.delete(provider));
      this.cache.set(provider, cached);
    }
    return cached;
  }

  private async read(provider: string): Promise<string | undefined> {
    const name = `${this.prefix}${provider}`;
    try {
      const out = await this.client.send(new GetSecretValueCommand({ SecretId: name }));
      const text = out.SecretString?.trim();
      if (!text) return undefined;
      if (text.startsWith('{')) {
        const parsed = JSON.parse(text) as Record<string, unknown>;
        const key = parsed.apiKey ?? parsed.api_key ?? parsed.key;
        if (typeof key !== 'string') {
          throw new NonRetriableError(`secret ${name} is JSON without a string "apiKey" field`);
        }
        return key;
      }
      return text;
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return undefined;
      // Throttling and service faults are retried; access denied or a secret that is not JSON is not.
      throw asCrumbsError(error, `could not read secret ${name}: ${(error as Error).message}`);
    }
  }
}

export class EnvApiKeys implements ApiKeySource {
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  async apiKey(provider: string): Promise<string | undefined> {
    const name = API_KEY_ENV[provider];
    const value = name === undefined ? undefined : this.env[name];
    return value?.trim() ? value.trim() : undefined;
  }
}

/** Secrets Manager when a secret prefix is configured (AWS), the environment otherwise (local). */
export function apiKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ApiKeySource {
  const prefix = env[ENV.secretPrefix];
  return prefix ? new SecretsManagerApiKeys(prefix) : new EnvApiKeys(env);
}
