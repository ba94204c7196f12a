/**
 * JSONata evaluation with limits. Expressions come from definitions and tool inputs (data, not code we wrote),
 * so every evaluation is time-boxed and depth-limited: a runaway recursion fails with a clear error instead of
 * burning the Lambda's time. JSONata has no access to JavaScript globals, so it is safe to run untrusted.
 */
import jsonata from 'jsonata';
import { NonRetriableError } from '#shared/domain/errors.ts';

export interface JsonataLimits {
  /** Milliseconds of evaluation. */
  timeoutMs?: number;
  /** Maximum evaluation stack depth. */
  stack?: number;
}

const cache = new Map<string, jsonata.Expression>();

function compile(expression: string, limits: JsonataLimits): jsonata.Expression {
  const key = `${limits.timeoutMs ?? 1000}:${limits.stack ?? 500}:${expression}`;
  let compiled = cache.get(key);
  if (!compiled) {
    try {
      compiled = jsonata(expression, { timeout: limits.timeoutMs ?? 1000, stack: limits.stack ?? 500 });
    } catch (error) {
      throw new NonRetriableError(
        `invalid JSONata expression ${JSON.stringify(expression)}: ${describe(error)}`,
        {
          cause: error,
        },
      );
    }
    if (cache.size > 500) cache.clear();
    cache.set(key, compiled);
  }
  return compiled;
}

/** Evaluates `expression` over `data`; errors name the expression and JSONata's message. */
export async function evaluateJsonata(
  expression: string,
  data: unknown,
  bindings: Record<string, unknown> = {},
  limits: JsonataLimits = {},
): Promise<unknown> {
  const compiled = compile(expression, limits);
  try {
    const result: unknown = await compiled.evaluate(data, bindings);
    // JSONata marks result sequences with extra properties; a JSON round trip gives plain values.
    return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as unknown);
  } catch (error) {
    throw new NonRetriableError(
      `JSONata expression ${JSON.stringify(expression)} failed: ${describe(error)}`,
      {
        cause: error,
      },
    );
  }
}

function describe(error: unknown): string {
  if (error !== null && typeof error === 'object' && 'message' in error) {
    const e = error as { message: unknown; position?: unknown };
    return `${String(e.message)}${typeof e.position === 'number' ? ` (at position ${e.position})` : ''}`;
  }
  return String(error);
}
