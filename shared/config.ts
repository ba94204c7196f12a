/**
 * Environment configuration, parsed once at cold start with zod into frozen typed objects. Required keys have no
 * defaults; functions that read env take `env = process.env` so tests pass their own.
 */
import { ValidationError } from '#shared/domain/errors.ts';
import { LlmProviderSchema } from '#shared/domain/llm-model.ts';
import * as z from '#shared/domain/zod.ts';
import { ENV, EXECUTOR_RUNNERS, type ExecutorRunner, TENANT_LIMITS, topology } from '#shared/topology.ts';

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

/** `CRUMBS_ALLOW_PRIVATE_NETWORK`: `1`/`true` lets definitions ask for private addresses; unset on AWS. */
export const NetworkEnvSchema = z.object({
  [ENV.allowPrivateNetwork]: z._default(
    z.pipe(
      z.enum(['', '0', '1', 'false', 'true'], { error: 'expected 1 or 0 (true or false)' }),
      z.transform((v) => v === '1' || v === 'true'),
    ),
    false,
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

/** The breadth budget the publisher counts (`TENANT_LIMITS`, `shared/core/breadth-budget.ts`). */
export const BreadthEnvSchema = z.object({
  [ENV.threadBudget]: wholeNumber(1, 10_000_000, TENANT_LIMITS.threadBudget),
  [ENV.workspaceEventRate]: wholeNumber(1, 100_000_000, TENANT_LIMITS.workspaceEventRate),
  [ENV.workspaceEventWindowSeconds]: wholeNumber(1, 86_400, TENANT_LIMITS.workspaceEventWindowSeconds),
});

export const PublisherEnvSchema = z.extend(z.extend(TableEnvSchema, BusPoolEnv), BreadthEnvSchema.shape);

/** The longest `timeout_ms` a definition may ask for (`TENANT_LIMITS.timeoutCeilingMs`): rule manager, executors. */
export const TimeoutCeilingEnvSchema = z.object({
  [ENV.timeoutCeilingMs]: wholeNumber(10, 900_000, TENANT_LIMITS.timeoutCeilingMs),
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

/** Functions that resolve model strings (`uses.llm` in the topology). */
export const LlmEnvSchema = z.object({ [ENV.defaultLlmProvider]: LlmProviderSchema });

export const RuleManagerEnvSchema = z.extend(TableEnvSchema, {
  ...BusPoolEnv,
  [ENV.ruleNamePrefix]: z.string().check(z.minLength(1)),
  [ENV.executorQueueArns]: executorQueueArns,
  [ENV.defaultLlmProvider]: LlmProviderSchema,
  [ENV.ruleTargetsDlqArn]: z.string().check(z.minLength(1)),
  ...TimeoutCeilingEnvSchema.shape,
});

/** Functions with `uses.timers` (workflow executor, rule manager): where schedules go and who delivers them. */
export const TimersEnvSchema = z.object({
  [ENV.scheduleGroup]: z.string().check(z.minLength(1)),
  [ENV.timersQueueArn]: z.string().check(z.minLength(1)),
  [ENV.timersDlqArn]: z.optional(z.string().check(z.minLength(1))),
  [ENV.schedulerRoleArn]: z.string().check(z.minLength(1)),
});
