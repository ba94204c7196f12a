/**
 * The app's configuration, read from CDK context (`cdk.json`, or `-c key=value` on the command line) and checked
 * once, so a bad value fails the synth with a clear message instead of deploying an API nobody can call. Who may
 * call: an operator's own OIDC issuer (`crumbs:jwtIssuer` with its audiences), or — with no issuer — a Cognito
 * user pool the stack creates, whose groups are workspaces (`userPool`).
 */
import type { Node } from 'constructs';
import {
  LlmEnvSchema,
  parseEnv,
  type WorkspaceQuotaOverrides,
  WorkspaceQuotasEnvSchema,
} from '#shared/config.ts';
import { COGNITO_GROUPS_CLAIM, DEFAULT_WORKSPACES_CLAIM } from '#shared/core/api/http.ts';
import { LLM_PROVIDERS, type LlmProvider, type ModelAliases } from '#shared/domain/llm-model.ts';
import { ENV, TENANT_LIMITS, topology, workspaceQuotaDefaults } from '#shared/topology.ts';
import type { OtlpSetting } from './constructs/crumbs-function.ts';
import { DEPLOY_SETTING_KEYS, type DeploySettings, readDeploySettings } from './deploy-settings.ts';

export type TenantLimits = { readonly [K in keyof typeof TENANT_LIMITS]: number };

export interface CrumbsConfig extends DeploySettings {
  /** `crumbs:stage`: suffix of stack and resource names, so stages can share an account. */
  readonly stage: string;
  /**
   * `crumbs:jwtIssuer` (optional): issuer URL of the JWTs the API accepts. Absent: the stack creates a Cognito user
   * pool and its app client (`userPool`), and takes their tokens.
   */
  readonly jwtIssuer?: string;
  /**
   * `crumbs:jwtAudience`: accepted audiences of `jwtIssuer`'s tokens (a list, or one string with commas); required
   * with an issuer, refused without one (the pool's app client is the audience then). Empty with the user pool.
   */
  readonly jwtAudience: readonly string[];
  /**
   * `crumbs:workspacesClaim`: the JWT claim listing the workspaces a caller may use (default `crumbs:workspaces`);
   * `cognito:groups` with the user pool, whose groups are the workspaces.
   */
  readonly workspacesClaim: string;
  /**
   * `crumbs:signInClientId` (optional, with `jwtIssuer` only): a public client of that issuer (authorization code +
   * PKCE, `topology.signIn.cliCallbackUrl` and the dashboard registered as redirect URIs) that `crumbs login` and the
   * dashboard sign in with. It must be one of `jwtAudience`. Absent: people bring tokens of their own.
   */
  readonly signInClientId?: string;
  /**
   * Present when there is no `jwtIssuer`: the stack's own user pool. `tokenValidityMinutes` (`crumbs:tokenValidityMinutes`,
   * 5 to 1440, default `topology.signIn.defaultTokenValidityMinutes`): how long an access or ID token stays good,
   * which is also how long an already issued token outlives `crumbs users revoke`.
   */
  readonly userPool?: { readonly tokenValidityMinutes: number };
  /** `crumbs:llmSecretName` (optional): name prefix of the LLM provider key secrets, `<prefix><provider>`. */
  readonly llmSecretPrefix: string;
  /**
   * `crumbs:defaultLlmProvider` (optional, default `bedrock`): where a model id without a provider (seed 002's
   * `gpt-4`) runs. Given to the functions that call models and to the rule manager, whose definition status says
   * which provider and model each agent will run.
   */
  readonly defaultLlmProvider: LlmProvider;
  /**
   * `crumbs:modelAliases` (optional, a JSON object or its text): model ids without a provider → `<provider>/<model
   * id>`, e.g. `{"gpt-4":"openai/gpt-4o","default":"bedrock/anthropic.claude-3-5-haiku-20241022-v1:0"}`. Given
   * with the default provider; checked at synth as the functions will read it.
   */
  readonly modelAliases: ModelAliases;
  /**
   * `crumbs:llmPrices` (optional, a JSON object or its text): `<provider>/<model id>` (or `<provider>/*`) → `{ input,
   * output, cached_input?, source? }` in USD per million tokens, over the defaults (`shared/domain/llm-usage.ts`).
   * Kept as the checked JSON text the functions read (`CRUMBS_LLM_PRICES`); absent: the defaults.
   */
  readonly llmPrices?: string;
  /**
   * `crumbs:dailyBudgets` (optional, a JSON object or its text): `{ "default"?: usd, "workspaces"?: { "<ws>": usd }
   * }`, each workspace's budget for model calls per UTC day. Kept as the checked JSON text the functions read
   * (`CRUMBS_DAILY_BUDGETS`); absent: none.
   */
  readonly dailyBudgets?: string;
  /**
   * `crumbs:buses` (optional, default 1, at most `topology.bus.pool.maxSize`): event buses that definitions' rules
   * are spread over. One bus takes the account's "Rules per event bus" quota (300 by default) of definitions, less
   * the two system rules; add buses rather than raise the quota past what one bus's throughput should carry.
   */
  readonly buses: number;
  /**
   * `crumbs:maxDefinitionsPerWorkspace` and `crumbs:maxRulesPerWorkspace` (optional; defaults
   * `workspaceQuotaDefaults` of the pool: a quarter of buses × 300 rules, and twice that in definitions): what one
   * workspace may hold of the capacity all share. Past either, a workspace's new definition is `invalid`.
   */
  readonly workspaceQuotas: {
    readonly definitions: number;
    readonly rules: number;
    /** `crumbs:workspaceQuotas` (optional): single workspaces' own quotas, `{ "<ws>": { definitions?, rules? } }`. */
    readonly workspaces?: WorkspaceQuotaOverrides;
  };
  /**
   * `crumbs:maxResponseBytes` (optional, default 5 MiB, from 1024 bytes to 1 GiB): the most bytes any response
   * body a definition's request reads may have (`CRUMBS_MAX_RESPONSE_BYTES`); definitions may ask for less.
   */
  readonly maxResponseBytes?: number;
  /**
   * `crumbs:tenantLimits` (optional): an object overriding any of `TENANT_LIMITS` (whole numbers), e.g.
   * `{"threadBudget": 500, "inFlightPerWorkspace": 8}`; set as env vars on the functions that apply them.
   */
  readonly tenantLimits: TenantLimits;
  /**
   * Where every function sends its OpenTelemetry spans. `crumbs:otlpEndpoint` (optional, default `xray`): `xray`
   * (X-Ray's OTLP endpoint of the stack's region, SigV4-signed; needs CloudWatch Transaction Search on), `none`, or
   * an https OTLP/HTTP traces URL (Langfuse, Honeycomb, Grafana, a collector). `crumbs:otlpHeadersSecret`
   * (optional, with a URL): the name or ARN of a Secrets Manager secret whose value is a JSON object of the headers
   * to send (an API key) — never the headers themselves, which would sit in plain text in the template.
   * `crumbs:otelCaptureContent` (optional, default false): prompts and completions on model calls' spans.
   */
  readonly otlp: OtlpSetting;
}

/** On AWS, bare model ids run on Bedrock unless `crumbs:defaultLlmProvider` says otherwise (IAM, no key). */
export const DEFAULT_LLM_PROVIDER: LlmProvider = 'bedrock';

/** LLM provider keys are secrets named `crumbs/llm/<provider>` unless `crumbs:llmSecretName` says otherwise. */
export const DEFAULT_LLM_SECRET_PREFIX = 'crumbs/llm/';

export const CONTEXT_KEYS = {
  stage: 'crumbs:stage',
  jwtIssuer: 'crumbs:jwtIssuer',
  jwtAudience: 'crumbs:jwtAudience',
  workspacesClaim: 'crumbs:workspacesClaim',
  signInClientId: 'crumbs:signInClientId',
  tokenValidityMinutes: 'crumbs:tokenValidityMinutes',
  llmSecretName: 'crumbs:llmSecretName',
  defaultLlmProvider: 'crumbs:defaultLlmProvider',
  modelAliases: 'crumbs:modelAliases',
  llmPrices: 'crumbs:llmPrices',
  dailyBudgets: 'crumbs:dailyBudgets',
  buses: 'crumbs:buses',
  maxDefinitionsPerWorkspace: 'crumbs:maxDefinitionsPerWorkspace',
  maxRulesPerWorkspace: 'crumbs:maxRulesPerWorkspace',
  workspaceQuotas: 'crumbs:workspaceQuotas',
  maxResponseBytes: 'crumbs:maxResponseBytes',
  tenantLimits: 'crumbs:tenantLimits',
  otlpEndpoint: 'crumbs:otlpEndpoint',
  otlpHeadersSecret: 'crumbs:otlpHeadersSecret',
  otelCaptureContent: 'crumbs:otelCaptureContent',
} as const;

/**
 * Context keys crumbs does not read: functions bundle Powertools and the AWS SDK and run with no layer (see
 * `CRUMBS_BUNDLING` in `constructs/bundling-options.ts`), so these would mean nothing; a synth that sets one fails
 * instead of quietly ignoring it.
 */
export const RETIRED_CONTEXT_KEYS: Readonly<Record<string, string>> = {
  'crumbs:powertools': 'Powertools is bundled into every function, with no layer',
  'crumbs:powertoolsLayerArn': 'functions run with no Powertools layer',
};

export function readConfig(node: Node): CrumbsConfig {
  for (const [key, why] of Object.entries(RETIRED_CONTEXT_KEYS)) {
    if (node.tryGetContext(key) !== undefined) {
      throw new Error(`CDK context "${key}" is no longer read: ${why}. Remove it (docs/deploy.md)`);
    }
  }
  const text = (key: string, required: boolean): string | undefined => {
    const value: unknown = node.tryGetContext(key);
    if (value === undefined || value === null || value === '') {
      if (required)
        throw new Error(`CDK context "${key}" is required (set it in cdk.json or pass -c ${key}=...)`);
      return undefined;
    }
    if (typeof value !== 'string')
      throw new Error(`CDK context "${key}" must be a string, got ${JSON.stringify(value)}`);
    return value.trim();
  };
  const stage = text(CONTEXT_KEYS.stage, true) ?? '';
  if (!/^[a-z0-9-]{1,16}$/.test(stage)) {
    throw new Error(`CDK context "${CONTEXT_KEYS.stage}" must be 1-16 of a-z, 0-9 and "-", got "${stage}"`);
  }
  const auth = authOf(node, text);
  const defaultLlmProvider = text(CONTEXT_KEYS.defaultLlmProvider, false) ?? DEFAULT_LLM_PROVIDER;
  if (!(LLM_PROVIDERS as readonly string[]).includes(defaultLlmProvider)) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.defaultLlmProvider}" must be one of ${LLM_PROVIDERS.join(', ')}, got "${defaultLlmProvider}"`,
    );
  }
  const rawBuses: unknown = node.tryGetContext(CONTEXT_KEYS.buses);
  const buses =
    rawBuses === undefined || rawBuses === null || rawBuses === ''
      ? topology.bus.pool.defaultSize
      : Number(rawBuses);
  if (!Number.isInteger(buses) || buses < 1 || buses > topology.bus.pool.maxSize) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.buses}" must be a whole number from 1 to ${topology.bus.pool.maxSize}, got ${JSON.stringify(rawBuses)}`,
    );
  }
  const rawMaxBytes: unknown = node.tryGetContext(CONTEXT_KEYS.maxResponseBytes);
  const maxResponseBytes =
    rawMaxBytes === undefined || rawMaxBytes === null || rawMaxBytes === '' ? undefined : Number(rawMaxBytes);
  if (
    maxResponseBytes !== undefined &&
    (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1024 || maxResponseBytes > 1024 * 1024 * 1024)
  ) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.maxResponseBytes}" must be a whole number of bytes from 1024 to 1073741824, got ${JSON.stringify(rawMaxBytes)}`,
    );
  }
  const defaults = workspaceQuotaDefaults(buses);
  const quota = (key: string, fallback: number): number => {
    const raw: unknown = node.tryGetContext(key);
    if (raw === undefined || raw === null || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 1_000_000) {
      throw new Error(
        `CDK context "${key}" must be a whole number from 1 to 1000000, got ${JSON.stringify(raw)}`,
      );
    }
    return n;
  };
  const rawLimits: unknown = node.tryGetContext(CONTEXT_KEYS.tenantLimits) ?? {};
  const limitsObject: unknown = typeof rawLimits === 'string' ? JSON.parse(rawLimits) : rawLimits;
  if (limitsObject === null || typeof limitsObject !== 'object' || Array.isArray(limitsObject))
    throw new Error(`CDK context "${CONTEXT_KEYS.tenantLimits}" must be an object of limits`);
  const tenantLimits: Record<string, number> = { ...TENANT_LIMITS };
  for (const [key, value] of Object.entries(limitsObject)) {
    if (!(key in TENANT_LIMITS))
      throw new Error(
        `CDK context "${CONTEXT_KEYS.tenantLimits}" has no limit "${key}" (known: ${Object.keys(TENANT_LIMITS).join(', ')})`,
      );
    if (!Number.isInteger(value) || (value as number) < 0)
      throw new Error(
        `CDK context "${CONTEXT_KEYS.tenantLimits}.${key}" must be a whole number, got ${JSON.stringify(value)}`,
      );
    tenantLimits[key] = value as number;
  }
  const settings = readDeploySettings(node);
  const aliases = modelAliasesOf(
    node.tryGetContext(CONTEXT_KEYS.modelAliases),
    defaultLlmProvider as LlmProvider,
  );
  if (
    settings.defaultModel !== undefined &&
    aliases.default !== undefined &&
    aliases.default !== settings.defaultModel
  ) {
    throw new Error(
      `CDK context "${DEPLOY_SETTING_KEYS.defaultModel}" and the alias "default" of "${CONTEXT_KEYS.modelAliases}" disagree: set one`,
    );
  }
  return {
    ...settings,
    stage,
    buses,
    tenantLimits: tenantLimits as TenantLimits,
    ...(maxResponseBytes !== undefined ? { maxResponseBytes } : {}),
    workspaceQuotas: {
      definitions: quota(CONTEXT_KEYS.maxDefinitionsPerWorkspace, defaults.definitions),
      rules: quota(CONTEXT_KEYS.maxRulesPerWorkspace, defaults.rules),
      ...workspaceQuotaOverrides(node.tryGetContext(CONTEXT_KEYS.workspaceQuotas)),
    },
    ...auth,
    llmSecretPrefix: text(CONTEXT_KEYS.llmSecretName, false) ?? DEFAULT_LLM_SECRET_PREFIX,
    defaultLlmProvider: defaultLlmProvider as LlmProvider,
    modelAliases:
      settings.defaultModel !== undefined ? { ...aliases, default: settings.defaultModel } : aliases,
    ...llmPricesOf(node.tryGetContext(CONTEXT_KEYS.llmPrices), defaultLlmProvider as LlmProvider),
    ...dailyBudgetsOf(node.tryGetContext(CONTEXT_KEYS.dailyBudgets), defaultLlmProvider as LlmProvider),
    otlp: otlpOf(node),
  };
}

/** `crumbs:otlpEndpoint`, `crumbs:otlpHeadersSecret`, `crumbs:otelCaptureContent`, checked at synth. */
function otlpOf(node: Node): OtlpSetting {
  const endpoint = node.tryGetContext(CONTEXT_KEYS.otlpEndpoint) ?? 'xray';
  const secret = node.tryGetContext(CONTEXT_KEYS.otlpHeadersSecret);
  const capture = node.tryGetContext(CONTEXT_KEYS.otelCaptureContent) ?? false;
  if (typeof endpoint !== 'string' || endpoint.trim() === '') {
    throw new Error(`CDK context "${CONTEXT_KEYS.otlpEndpoint}" must be "xray", "none" or an https URL`);
  }
  if (endpoint !== 'xray' && endpoint !== 'none') {
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      url = undefined;
    }
    if (url?.protocol !== 'https:') {
      throw new Error(
        `CDK context "${CONTEXT_KEYS.otlpEndpoint}" must be "xray", "none" or an https URL; got ${JSON.stringify(endpoint)}`,
      );
    }
    if (url.username !== '' || url.password !== '' || url.search !== '') {
      throw new Error(
        `CDK context "${CONTEXT_KEYS.otlpEndpoint}" must not carry credentials (user, password or query): put ` +
          `the headers in a Secrets Manager secret and name it in "${CONTEXT_KEYS.otlpHeadersSecret}"`,
      );
    }
  }
  if (
    secret !== undefined &&
    (typeof secret !== 'string' || !/^(arn:[\w-]+:secretsmanager:.+|[\w/+=.@-]{1,512})$/.test(secret))
  ) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.otlpHeadersSecret}" must be a Secrets Manager secret name or ARN`,
    );
  }
  if (secret !== undefined && (endpoint === 'xray' || endpoint === 'none')) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.otlpHeadersSecret}" goes with an endpoint URL in "${CONTEXT_KEYS.otlpEndpoint}"`,
    );
  }
  if (capture !== true && capture !== false && capture !== 'true' && capture !== 'false') {
    throw new Error(`CDK context "${CONTEXT_KEYS.otelCaptureContent}" must be true or false`);
  }
  return {
    endpoint,
    ...(secret !== undefined ? { headersSecret: secret as string } : {}),
    captureContent: capture === true || capture === 'true',
  };
}

type AuthConfig = Pick<
  CrumbsConfig,
  'jwtIssuer' | 'jwtAudience' | 'workspacesClaim' | 'signInClientId' | 'userPool'
>;

/**
 * Who may call: an issuer with its audiences, or (no issuer) the stack's own user pool. Settings that belong to the
 * other case are refused rather than ignored, so a typo cannot silently deploy a pool nobody meant.
 */
function authOf(node: Node, text: (key: string, required: boolean) => string | undefined): AuthConfig {
  const jwtIssuer = text(CONTEXT_KEYS.jwtIssuer, false);
  const rawAudience: unknown = node.tryGetContext(CONTEXT_KEYS.jwtAudience);
  const jwtAudience = (Array.isArray(rawAudience) ? rawAudience : String(rawAudience ?? '').split(','))
    .map((a) => String(a).trim())
    .filter((a) => a.length > 0);
  const claim = text(CONTEXT_KEYS.workspacesClaim, false);
  const signInClientId = text(CONTEXT_KEYS.signInClientId, false);
  const rawMinutes: unknown = node.tryGetContext(CONTEXT_KEYS.tokenValidityMinutes);
  const minutesGiven = rawMinutes !== undefined && rawMinutes !== null && rawMinutes !== '';

  if (jwtIssuer === undefined) {
    const withoutIssuer = (key: string, why: string) =>
      new Error(
        `CDK context "${key}" ${why}; without "${CONTEXT_KEYS.jwtIssuer}" the stack creates a Cognito user pool ` +
          'and its app client, whose tokens it takes (docs/deploy.md). Remove it, or set the issuer',
      );
    if (jwtAudience.length > 0) throw withoutIssuer(CONTEXT_KEYS.jwtAudience, 'names audiences of an issuer');
    if (signInClientId !== undefined)
      throw withoutIssuer(CONTEXT_KEYS.signInClientId, 'names a client of an issuer');
    if (claim !== undefined && claim !== COGNITO_GROUPS_CLAIM) {
      throw withoutIssuer(
        CONTEXT_KEYS.workspacesClaim,
        `is "${claim}", but the user pool's workspaces are its groups (${COGNITO_GROUPS_CLAIM})`,
      );
    }
    const tokenValidityMinutes = minutesGiven
      ? Number(rawMinutes)
      : topology.signIn.defaultTokenValidityMinutes;
    if (!Number.isInteger(tokenValidityMinutes) || tokenValidityMinutes < 5 || tokenValidityMinutes > 1440) {
      throw new Error(
        `CDK context "${CONTEXT_KEYS.tokenValidityMinutes}" must be a whole number of minutes from 5 to 1440, got ${JSON.stringify(rawMinutes)}`,
      );
    }
    return {
      jwtAudience: [],
      workspacesClaim: COGNITO_GROUPS_CLAIM,
      userPool: { tokenValidityMinutes },
    };
  }

  if (!jwtIssuer.startsWith('https://')) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.jwtIssuer}" must be an https:// issuer URL, got "${jwtIssuer}"`,
    );
  }
  if (jwtAudience.length === 0) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.jwtAudience}" is required with "${CONTEXT_KEYS.jwtIssuer}": one audience or a comma-separated list`,
    );
  }
  if (minutesGiven) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.tokenValidityMinutes}" applies only to the user pool crumbs creates without "${CONTEXT_KEYS.jwtIssuer}"; your issuer sets its own token lifetimes`,
    );
  }
  if (signInClientId !== undefined && !jwtAudience.includes(signInClientId)) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.signInClientId}" is "${signInClientId}", which is not one of "${CONTEXT_KEYS.jwtAudience}" (${jwtAudience.join(', ')}): the API would refuse the tokens it signs in with`,
    );
  }
  return {
    jwtIssuer,
    jwtAudience,
    workspacesClaim: claim ?? DEFAULT_WORKSPACES_CLAIM,
    ...(signInClientId !== undefined ? { signInClientId } : {}),
  };
}

/** `crumbs:dailyBudgets`, a JSON object (or its text, from `-c`), checked as the functions will read it. */
function dailyBudgetsOf(raw: unknown, defaultLlmProvider: LlmProvider): { dailyBudgets?: string } {
  if (raw === undefined || raw === null || raw === '') return {};
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  try {
    parseEnv(LlmEnvSchema, { [ENV.defaultLlmProvider]: defaultLlmProvider, [ENV.dailyBudgets]: text });
    return { dailyBudgets: text };
  } catch (error) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.dailyBudgets}" must be a JSON object {"default"?: usd, "workspaces"?: {"<workspace>": usd}} (USD per UTC day): ${(error as Error).message}`,
    );
  }
}

/** `crumbs:llmPrices`, a JSON object (or its text, from `-c`), checked as the functions will read it. */
function llmPricesOf(raw: unknown, defaultLlmProvider: LlmProvider): { llmPrices?: string } {
  if (raw === undefined || raw === null || raw === '') return {};
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  try {
    parseEnv(LlmEnvSchema, { [ENV.defaultLlmProvider]: defaultLlmProvider, [ENV.llmPrices]: text });
    return { llmPrices: text };
  } catch (error) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.llmPrices}" must be a JSON object {"<provider>/<model id>": {"input": n, "output": n, "cached_input"?: n}} (USD per million tokens): ${(error as Error).message}`,
    );
  }
}

/** `crumbs:modelAliases`, a JSON object (or its text, from `-c`), checked as the functions will read it. */
function modelAliasesOf(raw: unknown, defaultLlmProvider: LlmProvider): ModelAliases {
  if (raw === undefined || raw === null || raw === '') return {};
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  try {
    return parseEnv(LlmEnvSchema, { [ENV.defaultLlmProvider]: defaultLlmProvider, [ENV.modelAliases]: text })[
      ENV.modelAliases
    ];
  } catch (error) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.modelAliases}" must be a JSON object {"<model id>": "<provider>/<model id>"}: ${(error as Error).message}`,
    );
  }
}

/** `crumbs:workspaceQuotas`, a JSON object (or its text, from `-c`), checked as the rule manager will read it. */
function workspaceQuotaOverrides(raw: unknown): { workspaces?: WorkspaceQuotaOverrides } {
  if (raw === undefined || raw === null || raw === '') return {};
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw);
  try {
    const env = parseEnv(WorkspaceQuotasEnvSchema, { [ENV.workspaceQuotas]: text });
    const workspaces = env[ENV.workspaceQuotas];
    return workspaces === undefined ? {} : { workspaces };
  } catch (error) {
    throw new Error(
      `CDK context "${CONTEXT_KEYS.workspaceQuotas}" must be a JSON object {"<workspace>": {"definitions"?: n, "rules"?: n}}: ${(error as Error).message}`,
    );
  }
}
