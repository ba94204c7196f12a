/**
 * The checks of a definition's data — a value against a JSON Schema, a JSONata expression, the llm_hints views of
 * a read — each bounded by its own budget and run where it cannot hold other requests back: a few milliseconds on
 * the caller's thread, the rest in a pool of worker threads shared fairly between workspaces. The adapter is
 * `shared/adapters/checks/` (`dataChecks()`).
 */
import type { Breadcrumb, ContextView } from '#shared/domain/breadcrumb.ts';
import type { FieldIssue } from '#shared/domain/errors.ts';
import type { JsonSchemaDocument } from '#shared/domain/lang/json-schema.ts';
import type { LlmHints } from '#shared/domain/llm-hints.ts';

export interface SchemaCheck {
  /** compileJsonSchema's cache key: changes when the schema does (definition id and version). */
  readonly cacheKey: string;
  readonly schema: JsonSchemaDocument;
  /** Whose schema, for errors ("echo's input_schema"). */
  readonly what: string;
  readonly value: unknown;
  /** Path prefix of the issues (`input`); default "". */
  readonly root?: string;
}

export interface ExpressionCheck {
  readonly expression: string;
  readonly data: unknown;
  /** JSON values bound as `$name`. */
  readonly bindings?: Readonly<Record<string, unknown>>;
  /** `$now()` and `$millis()` answer this instant (ISO 8601) instead of the clock's. */
  readonly now?: string;
  /** The evaluation's time limit; default 1000 ms. */
  readonly timeoutMs?: number;
}

export interface ViewItem {
  readonly record: Breadcrumb;
  /** The hints its view applies: the schema's defaults merged with its own. */
  readonly hints: LlmHints | undefined;
}

/**
 * Each check may take the caller's abort signal: a check that waits for a worker leaves the queue when its caller
 * has gone (it is answered with an error nobody reads).
 */
export interface DataChecks {
  /**
   * Every way the value breaks the schema (empty when it conforms). Throws InvalidJsonSchemaError for a schema that
   * cannot be used, JsonSchemaWorkLimitError past JSON_SCHEMA_LIMITS.maxWork, and a RetriableError when the
   * workspace has too many checks waiting.
   */
  validate(workspace: string, check: SchemaCheck, signal?: AbortSignal): Promise<FieldIssue[]>;
  /** The expression's value; NonRetriableError when it fails or runs out of time (naming the expression). */
  evaluate(workspace: string, check: ExpressionCheck, signal?: AbortSignal): Promise<unknown>;
  /** The context views of one read's records, its templates within TEMPLATE_LIMITS.maxStepsPerRead together. */
  views(workspace: string, items: readonly ViewItem[]): Promise<ContextView[]>;
}
