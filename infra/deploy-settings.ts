/**
 * The deploy settings of how a stage is run and torn down, read from CDK context beside the rest of the app's
 * configuration (`config.ts`): what `cdk destroy` keeps, the front door's throttle, the API's reserved concurrency,
 * the embedding model and the default agent model. Each is checked once, so a bad value fails the synth naming its
 * key instead of deploying something that fails later.
 */
import type { Node } from 'constructs';
import { type EmbeddingsSetting, parseEmbeddingsSetting } from '#shared/domain/embeddings-setting.ts';
import { ModelAliasesSchema } from '#shared/domain/llm-model.ts';

export interface DeploySettings {
  /**
   * `crumbs:retainData` (optional, default false): whether `cdk destroy` keeps the breadcrumbs table (with deletion
   * protection) and the functions' log groups. Kept, they are adopted by the next deploy of the same stage with
   * `cdk deploy --import-existing-resources` (CloudFormation's import of existing resources, which finds them by
   * their names); not kept, destroy deletes them and a deploy creates them anew.
   */
  readonly retainData: boolean;
  /**
   * `crumbs:apiRateLimit` / `crumbs:apiBurstLimit` (optional, defaults `DEFAULT_API_THROTTLE`): the front door's
   * stage-wide throttle, requests per second and the burst above it, for every route together. Past it API Gateway
   * answers 429 itself, before any function runs.
   */
  readonly apiThrottle: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * `crumbs:apiReservedConcurrency` (optional, default none): concurrency reserved for the api function, which
   * executors can then never take from it (and which also caps it). Lambda refuses a reservation that leaves the
   * account fewer than 100 unreserved, so none is the default; `crumbs doctor` says what the account allows.
   */
  readonly apiReservedConcurrency?: number;
  /**
   * `crumbs:embeddings` (optional, default `bedrock/amazon.titan-embed-text-v2:0`): `none`, `bedrock/<model id>`,
   * or `openai-compatible/<model>` with `crumbs:embeddingsBaseUrl` (its key in Secrets Manager, `<llm secret
   * prefix>embeddings`).
   */
  readonly embeddings: EmbeddingsSetting;
  /**
   * `crumbs:defaultModel` (optional): the model an agent without a `model` runs, `<provider>/<model id>` (the
   * alias `default`). Absent: the default provider's default model.
   */
  readonly defaultModel?: string;
}

export const DEPLOY_SETTING_KEYS = {
  retainData: 'crumbs:retainData',
  apiRateLimit: 'crumbs:apiRateLimit',
  apiBurstLimit: 'crumbs:apiBurstLimit',
  apiReservedConcurrency: 'crumbs:apiReservedConcurrency',
  embeddings: 'crumbs:embeddings',
  embeddingsBaseUrl: 'crumbs:embeddingsBaseUrl',
  defaultModel: 'crumbs:defaultModel',
} as const;

/**
 * The stage's throttle when none is set: well under API Gateway's account-wide 10,000 requests per second (shared
 * by every API of the account and region), so one stage cannot take the account's whole quota.
 */
export const DEFAULT_API_THROTTLE = { rateLimit: 500, burstLimit: 1000 } as const;

export function readDeploySettings(node: Node): DeploySettings {
  const raw = (key: string): unknown => {
    const value: unknown = node.tryGetContext(key);
    return value === undefined || value === null || value === '' ? undefined : value;
  };
  const whole = (key: string, min: number, max: number): number | undefined => {
    const value = raw(key);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new Error(
        `CDK context "${key}" must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`,
      );
    }
    return n;
  };

  const retain = raw(DEPLOY_SETTING_KEYS.retainData);
  if (retain !== undefined && ![true, false, 'true', 'false'].includes(retain as string | boolean)) {
    throw new Error(
      `CDK context "${DEPLOY_SETTING_KEYS.retainData}" must be true or false, got ${JSON.stringify(retain)}`,
    );
  }
  const rateLimit = whole(DEPLOY_SETTING_KEYS.apiRateLimit, 1, 1_000_000) ?? DEFAULT_API_THROTTLE.rateLimit;
  const burstLimit =
    whole(DEPLOY_SETTING_KEYS.apiBurstLimit, 0, 1_000_000) ??
    Math.max(DEFAULT_API_THROTTLE.burstLimit, rateLimit);
  const reserved = whole(DEPLOY_SETTING_KEYS.apiReservedConcurrency, 0, 10_000);

  const embeddingsText = raw(DEPLOY_SETTING_KEYS.embeddings);
  const baseUrl = raw(DEPLOY_SETTING_KEYS.embeddingsBaseUrl);
  let embeddings: EmbeddingsSetting;
  try {
    embeddings = parseEmbeddingsSetting(
      embeddingsText === undefined ? undefined : String(embeddingsText),
      baseUrl === undefined ? undefined : String(baseUrl),
    );
  } catch (error) {
    throw new Error(`CDK context "${DEPLOY_SETTING_KEYS.embeddings}": ${(error as Error).message}`);
  }
  if (embeddings.kind === 'local') {
    throw new Error(
      `CDK context "${DEPLOY_SETTING_KEYS.embeddings}" cannot be "local" on AWS (the hashed embedder is for crumbs dev): choose none, bedrock/<model id> or openai-compatible/<model>`,
    );
  }

  const defaultModel = raw(DEPLOY_SETTING_KEYS.defaultModel);
  if (
    defaultModel !== undefined &&
    (typeof defaultModel !== 'string' || !ModelAliasesSchema.safeParse({ default: defaultModel }).success)
  ) {
    throw new Error(
      `CDK context "${DEPLOY_SETTING_KEYS.defaultModel}" must be <provider>/<model id> (e.g. bedrock/amazon.nova-lite-v1:0), got ${JSON.stringify(defaultModel)}`,
    );
  }
  return {
    retainData: retain === true || retain === 'true',
    apiThrottle: { rateLimit, burstLimit },
    ...(reserved !== undefined && reserved > 0 ? { apiReservedConcurrency: reserved } : {}),
    embeddings,
    ...(defaultModel !== undefined ? { defaultModel: String(defaultModel) } : {}),
  };
}
