/**
 * What a workflow's expressions see, and how they are evaluated.
 *
 * Scope: `{ input, steps, run, trigger, context }`, plus `item` and `index` inside a map item.
 * - `steps.<id>` is a step's output (null when it was skipped or failed and the run continued). Inside a map item,
 *   the item's own nested steps shadow same-named outer ones.
 * - `run` is `{ id, workflow, status, depth, started_at, steps }` with `steps` the full step states (status,
 *   attempts, by, …).
 * - `trigger` (the breadcrumb that started the run: a request's context, or the subscribed breadcrumb's) and
 *   `context` (the workflow's context selectors, assembled on each hop) serve definitions written without `input` expressions.
 *
 * `$now()` and `$millis()` are the transition's `now`, so re-applying a transition (after a write conflict) gives
 * the same values. Evaluation is time-boxed and depth-limited (`shared/domain/lang/jsonata.ts`).
 */
import { NonRetriableError } from '#shared/domain/errors.ts';

/**
 * JSONata, loaded at the first expression a run evaluates: the orchestrating agents' functions carry the engine,
 * and most of their invocations evaluate nothing, so its module (83 KB) is not initialised at their cold start
 * (`npm run bench:bundles`). JSONata has no zod schemas, so the deferred init is safe inside one esbuild bundle.
 */
let jsonataModule: Promise<typeof import('#shared/domain/lang/jsonata.ts')> | undefined;
async function evaluateJsonata(
  ...args: Parameters<typeof import('#shared/domain/lang/jsonata.ts')['evaluateJsonata']>
): Promise<unknown> {
  jsonataModule ??= import('#shared/domain/lang/jsonata.ts');
  return (await jsonataModule).evaluateJsonata(...args);
}

import type { Run } from './run.ts';

export interface Frame {
  /** The current map item, inside a map. */
  readonly item?: unknown;
  readonly index?: number;
  /** The key prefix of the steps nested in the current map item ("" outside maps). */
  readonly prefix: string;
}

export const TOP_FRAME: Frame = { prefix: '' };

function isTopLevelKey(key: string): boolean {
  return !key.includes('[');
}

function outputsOf(run: Run, prefix: string): Record<string, unknown> {
  const steps: Record<string, unknown> = {};
  for (const [key, state] of Object.entries(run.steps)) {
    if (isTopLevelKey(key)) steps[key] = state.output ?? null;
  }
  if (prefix !== '') {
    for (const [key, state] of Object.entries(run.steps)) {
      const rest = key.startsWith(prefix) ? key.slice(prefix.length) : undefined;
      if (rest !== undefined && !rest.includes('.') && !rest.includes('['))
        steps[rest] = state.output ?? null;
    }
  }
  return steps;
}

/** The trigger as expressions see it: a request's context, or the subscribed breadcrumb's. */
export function scopeOf(run: Run, frame: Frame, context: Record<string, unknown>): Record<string, unknown> {
  return {
    input: run.input,
    steps: outputsOf(run, frame.prefix),
    run: {
      id: run.run_id,
      workflow: run.workflow,
      status: run.status,
      depth: run.depth,
      started_at: run.started_at,
      steps: run.steps,
    },
    trigger: run.trigger.context,
    context,
    ...(frame.index !== undefined ? { item: frame.item ?? null, index: frame.index } : {}),
  };
}

/**
 * Evaluates an expression over a scope with `$now()` / `$millis()` at `now` (ISO 8601): the run workspace's data
 * checks (`shared/ports/checks.ts`) in the executors, JSONata on this thread by default.
 */
export type Evaluate = (expression: string, scope: Record<string, unknown>, now: string) => Promise<unknown>;

const evaluateHere: Evaluate = (expression, scope, now) => {
  const ms = Date.parse(now);
  return evaluateJsonata(expression, scope, { now: () => now, millis: () => ms });
};

export class Evaluator {
  private readonly now: string;
  private readonly evaluate: Evaluate;

  constructor(now: Date, evaluate: Evaluate = evaluateHere) {
    this.now = now.toISOString();
    this.evaluate = evaluate;
  }

  /** A bare expression (`when`, `map.items`; a leading "=" is accepted). */
  expression(expression: string, scope: Record<string, unknown>): Promise<unknown> {
    const bare = expression.startsWith('=') ? expression.slice(1) : expression;
    return this.evaluate(bare, scope, this.now);
  }

  /** A value whose strings starting with "=" (at any depth) are expressions; other values are kept. */
  async resolve(value: unknown, scope: Record<string, unknown>): Promise<unknown> {
    if (typeof value === 'string') {
      return value.startsWith('=') ? this.evaluate(value.slice(1), scope, this.now) : value;
    }
    if (Array.isArray(value)) return Promise.all(value.map((v) => this.resolve(v, scope)));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, v] of Object.entries(value)) out[key] = await this.resolve(v, scope);
      return out;
    }
    return value;
  }

  /** `resolve` for a text (a message, a prompt): a non-string result is written as JSON. */
  async text(value: string, scope: Record<string, unknown>): Promise<string> {
    const resolved = await this.resolve(value, scope);
    return typeof resolved === 'string' ? resolved : JSON.stringify(resolved);
  }
}

/** An expression that failed: the step fails with this message (a rerun would fail the same way). */
export function expressionFailure(error: unknown): string | undefined {
  return error instanceof NonRetriableError ? error.message : undefined;
}
