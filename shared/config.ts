/**
 * Environment configuration, parsed once at cold start with zod into frozen typed objects. Required keys have no
 * defaults; functions that read env take `env = process.env` so tests pass their own.
 */
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import type { DefinitionLimits } from '#shared/domain/definition-validation.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { LlmProviderSchema, ModelAliasesSchema } from '#shared/domain/llm-model.ts';
import { PriceTableSchema, priceTable } from '#shared/domain/llm-usage.ts';
import { DEFAULT_MAX_RESPONSE_BYTES } from '#shared/domain/outbound-limits.ts';
import * as z from '#shared/domain/zod.ts';
import {
  ENV,
  EXECUTOR_RUNNERS,
  type ExecutorRunner,
  TENANT_LIMITS,
  topology,
  workspaceQuotaDefaults,
} from '#shared/topology.ts';

export function parseEnv<S extends z.ZodMiniType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.output<S>> {
  const result = schema.safeParse(env);
  if (!result.success) {
    throw new ValidationError(
      result.error.issues.map((i) => ({ path: i.path.join('.'), message: `environment: ${i.message}` })),
    );
  }
  return Object.freeze(result.data);
}

const jsonObject = z.pipe(
  z.string(),
  z.transform((text, ctx) => {
    try {
      const value: unknown = JSON.parse(text);
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw new Error('not an object');
      return value as Record<string, unknown>;
    } catch {
      ctx.issues.push({ code: 'custom', message: 'expected a JSON object', input: text });
      return z.NEVER;
    }
  }),
);

/** The operator's ceiling on any response body a definition's request reads (`ENV.maxResponseBytes`). */

/**
 * `CRUMBS_ALLOW_PRIVATE_NETWORK`: `1`/`true` lets definitions ask for private addresses; unset on AWS.
 * `CRUMBS_MAX_RESPONSE_BYTES`: the most any response body a definition's request reads may be (default 5 MiB).
 */
export const NetworkEnvSchema = z.object({
  [ENV.allowPrivateNetwork]: z._default(
    z.pipe(
      z.enum(['', '0', '1', 'false', 'true'], { error: 'expected 1 or 0 (true or false)' }),
      z.transform((v) => v === '1' || v === 'true'),
    ),
    false,
  ),
  [ENV.maxResponseBytes]: z._default(
    z.coerce
      .number({ error: 'expected a whole number of bytes' })
      .check(
        z.int('expected a whole number of bytes'),
        z.minimum(1024, 'at least 1024 bytes'),
        z.maximum(1024 * 1024 * 1024, 'at most 1 GiB (bodies are read into memory)'),
      ),
    DEFAULT_MAX_RESPONSE_BYTES,
  ),
});

export const TableEnvSchema = z.object({ [ENV.tableName]: z.string().check(z.minLength(1)) });

export const ApiEnvSchema = z.extend(TableEnvSchema, {
  [ENV.workspacesClaim]: z._default(z.string().check(z.minLength(1)), 'crumbs:workspaces'),
  [ENV.localEndpoints]: z.optional(jsonObject),
  /** Defaults suit AWS (index propagation is usually well under a second); the local stack sets shorter ones. */
  [ENV.changesSettleMs]: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(10_000)), 1500),
  [ENV.changesPollMs]: z._default(z.coerce.number().check(z.int(), z.minimum(50), z.maximum(5000)), 500),
});

/**
 * The delta channel (`shared/core/streaming/`): both URLs or neither (nothing streams). `AWS_REGION` signs the
 * publishes (the Lambda runtime and the local stack set it).
 */
export const DeltaChannelEnvSchema = z
  .object({
    [ENV.eventsHttpUrl]: z.optional(z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' })),
    [ENV.eventsRealtimeUrl]: z.optional(z.url({ protocol: /^wss?$/, error: 'expected a ws(s) URL' })),
    AWS_REGION: z.optional(z.string().check(z.minLength(1))),
  })
  .check(
    z.refine((env) => (env[ENV.eventsHttpUrl] === undefined) === (env[ENV.eventsRealtimeUrl] === undefined), {
      error: `${ENV.eventsHttpUrl} and ${ENV.eventsRealtimeUrl} are set together`,
    }),
  );

/**
 * The protocol servers (MCP, A2A): the API's settings and the API's public base URL (`ENV.apiUrl`), which the URLs
 * they publish are built from.
 */
export const ProtocolServerEnvSchema = z.extend(ApiEnvSchema, {
  [ENV.apiUrl]: z.pipe(
    z.url({ protocol: /^https?$/, error: "expected the API's http(s) base URL" }),
    z.transform((url) => url.replace(/\/+$/, '')),
  ),
});

export const McpEnvSchema = z.extend(ProtocolServerEnvSchema, {
  [ENV.jwtIssuer]: z.optional(z.url()),
});

/**
 * How people sign in (`shared/core/api/sign-in.ts`, served to the dashboard and `crumbs login`): the issuer, the
 * public client, and the endpoints where they are known without the issuer's discovery document (their shape is
 * checked where they are read).
 */
export const SignInEnvSchema = z.object({
  [ENV.jwtIssuer]: z.optional(z.url({ protocol: /^https?$/, error: 'expected an http(s) issuer URL' })),
  [ENV.signInClientId]: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
  [ENV.signInEndpoints]: z.optional(jsonObject),
  [ENV.workspacesClaim]: z._default(z.string().check(z.minLength(1)), 'crumbs:workspaces'),
});

/** JSON array of distinct bus names (`ENV.busPool`). */
const busNameList = z.pipe(
  z.string(),
  z.transform((text, ctx) => {
    try {
      const value: unknown = JSON.parse(text);
      if (
        !Array.isArray(value) ||
        value.length === 0 ||
        !value.every((v) => typeof v === 'string' && v.length > 0) ||
        new Set(value).size !== value.length
      )
        throw new Error('not a list of bus names');
      return value as string[];
    } catch {
      ctx.issues.push({
        code: 'custom',
        message: 'expected a JSON array of distinct bus names',
        input: text,
      });
      return z.NEVER;
    }
  }),
);

/** The bus pool (`topology.bus.pool`): what the publisher routes to and the rule manager places rules in. */
const BusPoolEnv = {
  [ENV.busName]: z.string().check(z.minLength(1)),
  [ENV.busPool]: z.optional(busNameList),
  [ENV.busPlacementCacheMs]: z._default(
    z.coerce.number().check(z.int(), z.minimum(0), z.maximum(60_000)),
    topology.bus.pool.placementCacheSeconds * 1000,
  ),
};

/** The pool's buses, the first bus first: `CRUMBS_EVENT_BUS_POOL`, or the one bus `CRUMBS_EVENT_BUS_NAME`. */
export function busPoolOf(env: { [ENV.busName]: string; [ENV.busPool]?: string[] | undefined }): string[] {
  const pool = env[ENV.busPool] ?? [env[ENV.busName]];
  if (pool[0] !== env[ENV.busName]) {
    throw new ValidationError([
      {
        path: ENV.busPool,
        message: `environment: the first bus must be ${env[ENV.busName]} (${ENV.busName})`,
      },
    ]);
  }
  return pool;
}

const wholeNumber = (min: number, max: number, fallback: number) =>
  z._default(z.coerce.number().check(z.int(), z.minimum(min), z.maximum(max)), fallback);

/** The breadth budget the publisher counts (`TENANT_LIMITS`, `shared/core/stream/breadth-budget.ts`). */
export const BreadthEnvSchema = z.object({
  [ENV.threadBudget]: wholeNumber(1, 10_000_000, TENANT_LIMITS.threadBudget),
  [ENV.workspaceEventRate]: wholeNumber(1, 100_000_000, TENANT_LIMITS.workspaceEventRate),
  [ENV.workspaceEventWindowSeconds]: wholeNumber(1, 86_400, TENANT_LIMITS.workspaceEventWindowSeconds),
});

export const PublisherEnvSchema = z.extend(
  z.extend(z.extend(TableEnvSchema, BusPoolEnv), BreadthEnvSchema.shape),
  {
    [ENV.changePublishTimeoutMs]: wholeNumber(100, 10_000, 1000),
  },
);

/** The per-workspace request rate (`TENANT_LIMITS`, `shared/core/api/request-rate.ts`): API, MCP and A2A servers. */
export const RequestRateEnvSchema = z.object({
  [ENV.workspaceRequestRate]: wholeNumber(0, 1_000_000, TENANT_LIMITS.workspaceRequestRate),
  [ENV.workspaceRequestBurst]: wholeNumber(1, 10_000_000, TENANT_LIMITS.workspaceRequestBurst),
});

/** The longest `timeout_ms` a definition may ask for (`TENANT_LIMITS.timeoutCeilingMs`): rule manager, executors. */
export const TimeoutCeilingEnvSchema = z.object({
  [ENV.timeoutCeilingMs]: wholeNumber(10, 900_000, TENANT_LIMITS.timeoutCeilingMs),
});

/** Where the checks of definitions' data run (`shared/adapters/checks/`): absent, the pool's default size. */
export const ChecksEnvSchema = z.object({
  [ENV.checkWorkers]: z.optional(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(64))),
});

/** A workspace's share of one executor function (`TENANT_LIMITS`): executors and the local SQS pollers. */
export const WorkspaceShareEnvSchema = z.object({
  [ENV.workspaceInFlight]: wholeNumber(1, 10_000, TENANT_LIMITS.inFlightPerWorkspace),
  [ENV.workspaceInFlightGraceMs]: wholeNumber(0, 900_000, TENANT_LIMITS.inFlightGraceMs),
});

/** JSON object of executor runner → SQS queue ARN (every runner must be present). */
const executorQueueArns = z.pipe(
  jsonObject,
  z.object(
    Object.fromEntries(
      EXECUTOR_RUNNERS.map((runner) => [runner, z.string().check(z.minLength(1))]),
    ) as Record<ExecutorRunner, z.ZodMiniString>,
  ),
);

/** `ENV.modelAliases`: the operator's model aliases (JSON); absent or blank, none. */
const modelAliases = z._default(
  z.pipe(
    z.pipe(
      z.string(),
      z.transform((text) => (text.trim() === '' ? '{}' : text)),
    ),
    z.pipe(jsonObject, ModelAliasesSchema),
  ),
  {},
);

/** `ENV.llmPrices`: the operator's model prices (JSON) over the defaults; absent or blank, the defaults. */
const llmPrices = z._default(
  z.pipe(
    z.pipe(
      z.string(),
      z.transform((text) => (text.trim() === '' ? '{}' : text)),
    ),
    z.pipe(
      z.pipe(jsonObject, PriceTableSchema),
      z.transform((overrides) => priceTable(overrides)),
    ),
  ),
  priceTable(),
);

const dailyUsd = z
  .number({ error: 'expected a number of US dollars per day' })
  .check(z.minimum(0, 'at least 0'), z.maximum(1_000_000, 'at most 1000000'));

/** `ENV.dailyBudgets`: USD per UTC day, a default and per-workspace overrides; absent or blank, none. */
export const DailyBudgetsSchema = z.strictObject(
  {
    default: z.optional(dailyUsd),
    workspaces: z.optional(
      z
        .record(z.string().check(z.regex(WORKSPACE_PATTERN, 'expected a workspace name')), dailyUsd)
        .check(z.refine((m) => Object.keys(m).length <= 1000, { error: 'at most 1000 workspaces' })),
    ),
  },
  { error: 'expected { default?: usd, workspaces?: { "<workspace>": usd } }' },
);

const dailyBudgets = z._default(
  z.pipe(
    z.pipe(
      z.string(),
      z.transform((text) => (text.trim() === '' ? '{}' : text)),
    ),
    z.pipe(jsonObject, DailyBudgetsSchema),
  ),
  {},
);

/** Functions that resolve model strings (`uses.llm` in the topology). */
export const LlmEnvSchema = z.object({
  [ENV.defaultLlmProvider]: LlmProviderSchema,
  [ENV.modelAliases]: modelAliases,
  [ENV.llmPrices]: llmPrices,
  [ENV.dailyBudgets]: dailyBudgets,
  // The default is the offline model's own (DEFAULT_OFFLINE_STREAM_DELAY_MS in shared/adapters/llm/offline-model.ts).
  [ENV.offlineStreamDelayMs]: z._default(
    z.coerce
      .number({ error: 'expected a number of milliseconds' })
      .check(z.int('expected a whole number'), z.minimum(0, 'at least 0'), z.maximum(1000, 'at most 1000')),
    25,
  ),
});

/** A per-workspace quota: a whole number from 1 (0 would make every definition invalid). */
const quotaCount = z.coerce
  .number({ error: 'expected a whole number' })
  .check(
    z.int('expected a whole number'),
    z.minimum(1, 'at least 1'),
    z.maximum(1_000_000, 'at most 1000000'),
  );

/**
 * `ENV.embedSchemas`: the schemas that get embeddings, comma-separated (`*` for all). Absent or blank: undefined
 * (the caller's defaults).
 */
export const EmbedSchemasEnvSchema = z.object({
  [ENV.embedSchemas]: z.optional(
    z.pipe(
      z.string(),
      z.transform((text) =>
        text.trim()
          ? text
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : undefined,
      ),
    ),
  ),
});

/** `ENV.workspaceQuotas`: quotas of single workspaces the operator set apart. */
export const WorkspaceQuotasEnvSchema = z.object({
  [ENV.workspaceQuotas]: z.optional(
    z.pipe(
      jsonObject,
      z.record(
        z.string().check(z.regex(WORKSPACE_PATTERN, 'expected a workspace name')),
        z.object({
          definitions: z.optional(quotaCount),
          rules: z.optional(quotaCount),
          /** Requests per second of the API, MCP and A2A servers (0 = no limit), over `ENV.workspaceRequestRate`. */
          requestRate: z.optional(
            z.coerce
              .number({ error: 'expected a whole number' })
              .check(z.int(), z.minimum(0), z.maximum(1_000_000)),
          ),
          requestBurst: z.optional(quotaCount),
        }),
      ),
    ),
  ),
});

export const RuleManagerEnvSchema = z.extend(TableEnvSchema, {
  ...WorkspaceQuotasEnvSchema.shape,
  ...BusPoolEnv,
  [ENV.ruleNamePrefix]: z.string().check(z.minLength(1)),
  [ENV.executorQueueArns]: executorQueueArns,
  ...LlmEnvSchema.shape,
  [ENV.ruleTargetsDlqArn]: z.string().check(z.minLength(1)),
  [ENV.maxDefinitionsPerWorkspace]: z.optional(quotaCount),
  [ENV.maxRulesPerWorkspace]: z.optional(quotaCount),
  ...TimeoutCeilingEnvSchema.shape,
});

/** Quotas of one workspace that the operator set apart from every other's (`ENV.workspaceQuotas`). */
export type WorkspaceQuotaOverrides = Readonly<
  Record<
    string,
    {
      readonly definitions?: number | undefined;
      readonly rules?: number | undefined;
      readonly requestRate?: number | undefined;
      readonly requestBurst?: number | undefined;
    }
  >
>;

/** The request rate limits of the API and protocol servers: the general one and single workspaces' own. */
export function requestRateLimitsOf(env: NodeJS.ProcessEnv = process.env): {
  requestsPerSecond: number;
  burst: number;
  workspaces: Record<string, { requestsPerSecond?: number; burst?: number }>;
} {
  const general = parseEnv(RequestRateEnvSchema, env);
  const own = parseEnv(WorkspaceQuotasEnvSchema, env)[ENV.workspaceQuotas] ?? {};
  const workspaces: Record<string, { requestsPerSecond?: number; burst?: number }> = {};
  for (const [ws, q] of Object.entries(own)) {
    if (q.requestRate === undefined && q.requestBurst === undefined) continue;
    workspaces[ws] = {
      ...(q.requestRate !== undefined ? { requestsPerSecond: q.requestRate } : {}),
      ...(q.requestBurst !== undefined ? { burst: q.requestBurst } : {}),
    };
  }
  return {
    requestsPerSecond: general[ENV.workspaceRequestRate],
    burst: general[ENV.workspaceRequestBurst],
    workspaces,
  };
}

/** The per-workspace quotas of the rule manager: the operator's settings, else the defaults of its bus pool. */
export function workspaceQuotasOf(env: {
  [ENV.busName]: string;
  [ENV.busPool]?: string[] | undefined;
  [ENV.maxDefinitionsPerWorkspace]?: number | undefined;
  [ENV.maxRulesPerWorkspace]?: number | undefined;
  [ENV.workspaceQuotas]?: WorkspaceQuotaOverrides | undefined;
}): { definitions: number; rules: number; workspaces: WorkspaceQuotaOverrides } {
  const defaults = workspaceQuotaDefaults(busPoolOf(env).length);
  return {
    definitions: env[ENV.maxDefinitionsPerWorkspace] ?? defaults.definitions,
    rules: env[ENV.maxRulesPerWorkspace] ?? defaults.rules,
    workspaces: env[ENV.workspaceQuotas] ?? {},
  };
}

/** Functions with `uses.timers` (workflow executor, rule manager): where schedules go and who delivers them. */
export const TimersEnvSchema = z.object({
  [ENV.scheduleGroup]: z.string().check(z.minLength(1)),
  [ENV.timersQueueArn]: z.string().check(z.minLength(1)),
  [ENV.timersDlqArn]: z.optional(z.string().check(z.minLength(1))),
  [ENV.schedulerRoleArn]: z.string().check(z.minLength(1)),
});

/** The API (`uses.timers: 'cancel'`): the schedule group whose schedules a workspace's deletion cancels. */
export const TimerCancelEnvSchema = z.object({
  [ENV.scheduleGroup]: z.optional(z.string().check(z.minLength(1))),
});

/**
 * Where `secret_ref`s are read (`shared/adapters/secrets/secret-source.ts`): Secrets Manager under the prefix on
 * AWS; locally the per-workspace mapping of `CRUMBS_SECRETS` and the file `CRUMBS_SECRETS_FILE`.
 */
export const DEFAULT_AGENT_SECRET_PREFIX = 'crumbs/agents/';

export const SecretsEnvSchema = z.object({
  [ENV.secretSource]: z.optional(
    z.enum(['secretsmanager'], { error: 'expected "secretsmanager" or nothing' }),
  ),
  [ENV.agentSecretPrefix]: z._default(
    z.string().check(z.regex(/^[A-Za-z0-9/_+=.@-]{1,256}\/$/, 'expected a secret name prefix ending in "/"')),
    DEFAULT_AGENT_SECRET_PREFIX,
  ),
  [ENV.localSecrets]: z.optional(z.string()),
  [ENV.localSecretsFile]: z.optional(z.string().check(z.minLength(1))),
});

/** The limits a definition is checked against in this process: the rule manager's on AWS, the stack's or the CLI's locally. */
export function definitionLimits(env: NodeJS.ProcessEnv = process.env): DefinitionLimits {
  return { maxResponseBytes: parseEnv(NetworkEnvSchema, env)[ENV.maxResponseBytes] };
}
