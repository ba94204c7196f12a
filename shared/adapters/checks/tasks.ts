/**
 * The checks of a definition's data, as tasks a worker thread or the caller's own thread can run: a value against a
 * JSON Schema, a JSONata expression over data, and the context views of a read (llm_hints: templates, JSONPath).
 * A task is plain data (it crosses to a worker by structured clone) and so is its outcome; errors travel as
 * `CarriedError` and are rebuilt as the same classes on the other side.
 *
 * Each task runs in one of two sizes:
 * - `slice`: the caller's thread, with a budget of a few milliseconds (CHECK_SLICE). Nearly every check ends
 *   within it; one that does not answers `{ slice: true }` having changed nothing, and is run again in full.
 * - `full`: the task's own limits (JSON_SCHEMA_LIMITS.maxWork, the expression's timeout, TEMPLATE_LIMITS), in a
 *   worker of the check pool (`check-pool.ts`), or on the caller's thread where there is no pool.
 */
import type { ContextView } from '#shared/domain/breadcrumb.ts';
import {
  InvalidJsonSchemaError,
  JsonSchemaWorkLimitError,
  NonRetriableError,
  RetriableError,
} from '#shared/domain/errors.ts';
import {
  compileJsonSchema,
  isCompiledJsonSchema,
  JSON_SCHEMA_LIMITS,
} from '#shared/domain/lang/json-schema.ts';
import { type StepBudget, TEMPLATE_LIMITS } from '#shared/domain/lang/template.ts';
import { toContextView } from '#shared/domain/record-rules.ts';
import type { ExpressionCheck, SchemaCheck, ViewItem } from '#shared/ports/checks.ts';

/**
 * What the caller's thread may spend on one check before it goes to a worker: about 5 ms of one core each
 * (`npm run bench:checks`), so a burst of heavy requests holds the event loop for a few milliseconds each.
 */
export const CHECK_SLICE = Object.freeze({
  /** JSON Schema steps (JSON_SCHEMA_LIMITS): about 1,500 subschema applications. */
  schemaWork: 50_000,
  /**
   * Expression nodes of a JSONata evaluation (a count, so a busy machine does not push checks to the pool), and
   * its milliseconds at most (a native call over a large value is one node).
   */
  jsonataNodes: 1_000,
  jsonataMs: 50,
  /** Template steps of one read's views, and milliseconds for the read's views in all (JSONPath included). */
  viewSteps: 100_000,
  viewMs: 5,
  /** Values of a schema compiled in the slice; a larger one is compiled in a worker. */
  compiledSchemaValues: 2_000,
});

export type SchemaTask = SchemaCheck & { readonly kind: 'schema' };
export type JsonataTask = ExpressionCheck & { readonly kind: 'jsonata' };
export interface ViewsTask {
  readonly kind: 'views';
  readonly items: readonly ViewItem[];
}

export type CheckTask = SchemaTask | JsonataTask | ViewsTask;

/** An error as it crosses between threads. */
export type CarriedError =
  | { readonly type: 'invalid-schema'; readonly what: string; readonly problem: string }
  | { readonly type: 'schema-work'; readonly what: string; readonly limit: number }
  | { readonly type: 'non-retriable'; readonly message: string }
  /** The check was not run (its caller left while it waited): worth asking again. */
  | { readonly type: 'retriable'; readonly message: string };

export type CheckOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: CarriedError }
  /** The slice ran out before the check ended; nothing was decided. */
  | { readonly ok: false; readonly slice: true };

const SLICE_SPENT: CheckOutcome = { ok: false, slice: true };

/** Runs `task` in `size`; never throws for what the task's data does (that is an outcome). */
export async function runCheck(task: CheckTask, size: 'slice' | 'full'): Promise<CheckOutcome> {
  try {
    switch (task.kind) {
      case 'schema':
        return runSchema(task, size);
      case 'jsonata':
        return await runJsonata(task, size);
      case 'views':
        return runViews(task, size);
    }
  } catch (error) {
    return { ok: false, error: carried(error) };
  }
}

function runSchema(task: SchemaTask, size: 'slice' | 'full'): CheckOutcome {
  // Compiling is linear in the schema, once per definition version; a large one is compiled in a worker (a
  // 9,000-entry enum took the caller's thread 90 ms to compile).
  if (
    size === 'slice' &&
    !isCompiledJsonSchema(task.cacheKey) &&
    !hasAtMost(task.schema, CHECK_SLICE.compiledSchemaValues)
  ) {
    return SLICE_SPENT;
  }
  const validator = compileJsonSchema(task.cacheKey, task.schema, task.what);
  const budget = size === 'slice' ? CHECK_SLICE.schemaWork : JSON_SCHEMA_LIMITS.maxWork;
  try {
    return { ok: true, value: validator.validate(task.value, task.root ?? '', budget) };
  } catch (error) {
    if (size === 'slice' && error instanceof JsonSchemaWorkLimitError) return SLICE_SPENT;
    throw error;
  }
}

/**
 * JSONata, loaded at the first expression evaluated: most functions that carry the checks evaluate none, and its
 * module (83 KB) would otherwise initialise at every cold start (`npm run bench:bundles`).
 */
let jsonataModule: Promise<typeof import('#shared/domain/lang/jsonata.ts')> | undefined;

async function runJsonata(task: JsonataTask, size: 'slice' | 'full'): Promise<CheckOutcome> {
  jsonataModule ??= import('#shared/domain/lang/jsonata.ts');
  const { evaluateJsonata, JsonataTimeoutError, JsonataWorkLimitError } = await jsonataModule;
  const full = task.timeoutMs ?? 1000;
  const timeoutMs = size === 'slice' ? Math.min(CHECK_SLICE.jsonataMs, full) : full;
  const bindings: Record<string, unknown> = { ...task.bindings };
  if (task.now !== undefined) {
    const iso = task.now;
    const ms = Date.parse(iso);
    bindings.now = () => iso;
    bindings.millis = () => ms;
  }
  const maxNodes = size === 'slice' ? CHECK_SLICE.jsonataNodes : undefined;
  try {
    return {
      ok: true,
      value: await evaluateJsonata(task.expression, task.data, bindings, {
        timeoutMs,
        ...(maxNodes !== undefined ? { maxNodes } : {}),
      }),
    };
  } catch (error) {
    // Stopped by the slice, not by the expression's own limit: run it again in full.
    if (size === 'slice' && error instanceof JsonataWorkLimitError) return SLICE_SPENT;
    if (size === 'slice' && timeoutMs < full && error instanceof JsonataTimeoutError) return SLICE_SPENT;
    throw error;
  }
}

function runViews(task: ViewsTask, size: 'slice' | 'full'): CheckOutcome {
  // Without template or JSONPath rules a view is a linear copy: nothing to move off the thread.
  const slice = size === 'slice' && task.items.some(({ hints }) => rulesRun(hints));
  const budget: StepBudget = {
    left: slice ? CHECK_SLICE.viewSteps : TEMPLATE_LIMITS.maxStepsPerRead,
    spent: false,
    what: `the templates of one read (TEMPLATE_LIMITS.maxStepsPerRead: ${TEMPLATE_LIMITS.maxStepsPerRead} steps in all)`,
  };
  const started = Date.now();
  const views: ContextView[] = [];
  for (const { record, hints } of task.items) {
    if (slice && Date.now() - started > CHECK_SLICE.viewMs) return SLICE_SPENT;
    views.push(toContextView(record, hints, budget));
    if (slice && budget.spent) return SLICE_SPENT;
  }
  return { ok: true, value: views };
}

/**
 * A task as it crosses to a worker: its data as JSON text, which postMessage copies as one block (a structured
 * clone of a 9,000-entry enum and its value took the sending thread 30 to 100 ms), and which the worker parses
 * there. A schema's text is kept per cache key, so a definition's schema is serialized once.
 */
export interface WireTask {
  readonly kind: CheckTask['kind'];
  /** The task without its data fields, as JSON. */
  readonly head: string;
  /** The data fields (schema, value, data, bindings, items) as JSON. */
  readonly body: string;
}

const schemaTexts = new Map<string, string>();
const MAX_SCHEMA_TEXTS = 500;

export function toWire(task: CheckTask): WireTask {
  switch (task.kind) {
    case 'schema': {
      const { schema, value, ...head } = task;
      let text = schemaTexts.get(task.cacheKey);
      if (text === undefined) {
        text = JSON.stringify(schema);
        if (schemaTexts.size >= MAX_SCHEMA_TEXTS)
          schemaTexts.delete(schemaTexts.keys().next().value as string);
        schemaTexts.set(task.cacheKey, text);
      }
      // The schema's text is spliced in as it is (a JSON value); undefined fields are left out as JSON would.
      return {
        kind: task.kind,
        head: JSON.stringify(head),
        body: `[${text},${JSON.stringify(value) ?? 'null'}]`,
      };
    }
    case 'jsonata': {
      const { data, bindings, ...head } = task;
      return {
        kind: task.kind,
        head: JSON.stringify(head),
        body: JSON.stringify([data ?? null, bindings ?? {}]),
      };
    }
    case 'views':
      return { kind: task.kind, head: '{}', body: JSON.stringify(task.items) };
  }
}

export function fromWire(wire: WireTask): CheckTask {
  const head = JSON.parse(wire.head) as Record<string, unknown>;
  const body = JSON.parse(wire.body) as unknown;
  switch (wire.kind) {
    case 'schema': {
      const [schema, value] = body as [SchemaTask['schema'], unknown];
      return { ...(head as Omit<SchemaTask, 'schema' | 'value'>), kind: 'schema', schema, value };
    }
    case 'jsonata': {
      const [data, bindings] = body as [unknown, Record<string, unknown>];
      return { ...(head as Omit<JsonataTask, 'data' | 'bindings'>), kind: 'jsonata', data, bindings };
    }
    case 'views':
      return { kind: 'views', items: body as ViewItem[] };
  }
}

/** Whether `hints` run a template or a JSONPath: the rules whose work depends on what data they are given. */
function rulesRun(hints: ViewItem['hints']): boolean {
  return Object.values(hints?.transform ?? {}).some(
    (rule) => rule.type === 'template' || rule.type === 'extract',
  );
}

/** Whether `value` holds at most `limit` values (itself included); stops counting past it. */
function hasAtMost(value: unknown, limit: number): boolean {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (++count > limit) return false;
    if (node !== null && typeof node === 'object') for (const child of Object.values(node)) stack.push(child);
  }
  return true;
}

/** `error` as it can cross to another thread: our own classes by their fields, anything else by its message. */
export function carried(error: unknown): CarriedError {
  if (error instanceof JsonSchemaWorkLimitError) {
    return { type: 'schema-work', what: error.what, limit: error.limit };
  }
  if (error instanceof InvalidJsonSchemaError) {
    return { type: 'invalid-schema', what: error.what, problem: error.problem };
  }
  return { type: 'non-retriable', message: error instanceof Error ? error.message : String(error) };
}

/** The error `carried` describes, as its own class again. */
export function rebuilt(error: CarriedError): Error {
  switch (error.type) {
    case 'schema-work':
      return new JsonSchemaWorkLimitError(error.what, error.limit);
    case 'invalid-schema':
      return new InvalidJsonSchemaError(error.what, error.problem);
    case 'non-retriable':
      return new NonRetriableError(error.message);
    case 'retriable':
      return new RetriableError(error.message);
  }
}
