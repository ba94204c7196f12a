/**
 * Environment configuration, parsed once at cold start with zod into frozen typed objects. Required keys have no
 * defaults; functions that read env take `env = process.env` so tests pass their own.
 */
import * as z from 'zod';
import { ValidationError } from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';

export function parseEnv<S extends z.ZodType>(
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

const jsonObject = z.string().transform((text, ctx) => {
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'expected a JSON object' });
    return z.NEVER;
  }
});

export const TableEnvSchema = z.object({ [ENV.tableName]: z.string().min(1) });

export const ApiEnvSchema = TableEnvSchema.extend({
  [ENV.workspacesClaim]: z.string().min(1).default('crumbs:workspaces'),
  [ENV.localEndpoints]: jsonObject.optional(),
});

export const PublisherEnvSchema = TableEnvSchema.extend({ [ENV.busName]: z.string().min(1) });

/** JSON object of executor kind → SQS queue ARN (every kind must be present). */
const executorQueueArns = jsonObject.pipe(
  z.object({
    agent: z.string().min(1),
    tool: z.string().min(1),
    workflow: z.string().min(1),
    'context-builder': z.string().min(1),
  }),
);

export const RuleManagerEnvSchema = TableEnvSchema.extend({
  [ENV.busName]: z.string().min(1),
  [ENV.ruleNamePrefix]: z.string().min(1),
  [ENV.executorQueueArns]: executorQueueArns,
});
