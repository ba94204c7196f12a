/**
 * `llm_hints`: how a breadcrumb reads in its *context view* (what LLMs and executors see), as in RCRT.
 *
 *   { include?: [paths], exclude?: [paths], transform?: { <key>: rule }, mode?: "replace" | "merge" }
 *
 * rules:  { type: "template", template: "{{a.b}} of {{c}}" }      Handlebars syntax (`lang/template.ts`)
 *         { type: "extract",  value: "$.a[0].b" }                 RFC 9535 JSONPath (`lang/json-path.ts`): one
 *                                                                 match → the value, none → null, several → array
 *         { type: "format",   format: "{a.b} of {c}" }            `{path}` placeholders
 *         { type: "literal",  literal: <a JSON value> }
 *
 * The rule: templates and paths are parsed when written, so a bad one is refused with its position; reading
 * never fails. A rule that fails at read time (data written around the API, a template over a render limit) yields
 * `{ "error": "…" }` under its key. Order and defaults: `applyLlmHints`, `mergeHints`.
 */
import { JsonPathSyntaxError, TemplateSyntaxError } from './errors.ts';
import { parseJsonPath, queryJsonPath } from './lang/json-path.ts';
import { parseTemplate, renderTemplate, type StepBudget, type Template } from './lang/template.ts';
import * as z from './zod.ts';

const PathSchema = z
  .string()
  .check(z.minLength(1), z.regex(/^(\$\.)?[^.\s][^\s]*$/, 'expected a dotted path like "a.b" or "$.a.b"'));

/** A string `parse` accepts; its syntax error (with line and column) becomes the issue `<what>: <error>`. */
function parsedBy(parse: (source: string) => unknown, what: string) {
  return z.string().check(
    z.superRefine((source, ctx) => {
      try {
        parse(source);
      } catch (error) {
        if (!(error instanceof TemplateSyntaxError || error instanceof JsonPathSyntaxError)) throw error;
        ctx.addIssue({ code: 'custom', message: `${what}: ${error.message}` });
      }
    }),
  );
}

export const TransformRuleSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('template'), template: parsedBy(parsedTemplate, 'invalid template') }),
    z.object({ type: z.literal('extract'), value: parsedBy(parseJsonPath, 'invalid JSONPath') }),
    z.object({ type: z.literal('format'), format: z.string() }),
    z.object({ type: z.literal('literal'), literal: z.unknown() }),
  ],
  { error: 'expected a rule with type "template", "extract", "format" or "literal"' },
);
export type TransformRule = z.infer<typeof TransformRuleSchema>;

export const LlmHintsSchema = z.strictObject({
  include: z.optional(z.array(PathSchema)),
  exclude: z.optional(z.array(PathSchema)),
  transform: z.optional(z.record(z.string().check(z.minLength(1)), TransformRuleSchema)),
  mode: z.optional(z.enum(['replace', 'merge'])),
});
export type LlmHints = z.infer<typeof LlmHintsSchema>;

/**
 * Schema-level defaults come from `schema.def.v1` breadcrumbs tagged `defines:<schema>`; instance hints win over
 * them field by field, and transform rules merge key by key.
 */
export function mergeHints(
  schemaDefaults: LlmHints | undefined,
  instance: LlmHints | undefined,
): LlmHints | undefined {
  if (!schemaDefaults) return instance;
  if (!instance) return schemaDefaults;
  const transform =
    schemaDefaults.transform || instance.transform
      ? { ...schemaDefaults.transform, ...instance.transform }
      : undefined;
  return {
    ...((instance.include ?? schemaDefaults.include)
      ? { include: instance.include ?? schemaDefaults.include }
      : {}),
    ...((instance.exclude ?? schemaDefaults.exclude)
      ? { exclude: instance.exclude ?? schemaDefaults.exclude }
      : {}),
    ...(transform ? { transform } : {}),
    ...((instance.mode ?? schemaDefaults.mode) ? { mode: instance.mode ?? schemaDefaults.mode } : {}),
  };
}

/**
 * Applies hints to a stored context. Pure; never throws for a valid LlmHints value. Transforms are computed from
 * the *stored* context; include then exclude select from it; then `replace` (the default when there are
 * transforms) answers only the transformed keys, `merge` answers the selected context with them on top.
 * `budget`: steps the templates may take together with those of the other views of the same read (a template past
 * it yields its `{ error }` as one past its own limit does).
 */
export function applyLlmHints(
  context: Record<string, unknown>,
  hints: LlmHints | undefined,
  budget?: StepBudget,
): unknown {
  if (!hints) return context;
  let selected: Record<string, unknown> = context;
  if (hints.include) selected = pick(context, hints.include);
  if (hints.exclude) selected = omit(selected, hints.exclude);
  if (!hints.transform || Object.keys(hints.transform).length === 0) return selected;

  const transformed: Record<string, unknown> = {};
  for (const [key, rule] of Object.entries(hints.transform))
    setOwn(transformed, key, applyRule(rule, context, budget));
  const mode = hints.mode ?? 'replace';
  if (mode !== 'merge') return transformed;
  const merged = { ...selected };
  for (const [key, value] of Object.entries(transformed)) setOwn(merged, key, value);
  return merged;
}

function applyRule(rule: TransformRule, context: Record<string, unknown>, budget?: StepBudget): unknown {
  try {
    switch (rule.type) {
      case 'literal':
        return rule.literal;
      case 'format':
        return rule.format.replace(/\{([^{}\s]+)\}/g, (_, path: string) => stringify(getPath(context, path)));
      case 'extract': {
        const matches = queryJsonPath(rule.value, context);
        return matches.length === 1 ? matches[0] : matches.length === 0 ? null : matches;
      }
      case 'template':
        return renderTemplate(parsedTemplate(rule.template), context, budget ? { budget } : {});
    }
  } catch (error) {
    return { error: `${rule.type} rule failed: ${(error as Error).message}` };
  }
}

// Parsed templates by source. Hints are validated on write and, for schema defaults, again on read; sharing
// the cache with rendering means a warm Lambda parses each template once. Bounded: the oldest entry goes first.
const TEMPLATE_CACHE_SIZE = 500;
const templateCache = new Map<string, Template>();
function parsedTemplate(source: string): Template {
  let parsed = templateCache.get(source);
  if (!parsed) {
    parsed = parseTemplate(source);
    const oldest = templateCache.keys().next();
    if (templateCache.size >= TEMPLATE_CACHE_SIZE && !oldest.done) templateCache.delete(oldest.value);
    templateCache.set(source, parsed);
  }
  return parsed;
}

function stringify(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function splitPath(path: string): string[] {
  return (path.startsWith('$.') ? path.slice(2) : path).split('.');
}

/**
 * Reads `a.b` from stored data, own properties only: a step named `constructor`, `prototype` or `__proto__` is a key
 * like any other and never reaches `Object` or a prototype (an exclude of `__proto__.toString` once deleted
 * `Object.prototype.toString` from the whole process).
 */
export function getPath(value: unknown, path: string): unknown {
  let current = value;
  for (const part of splitPath(path)) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** Sets an own property, whatever its name (`__proto__` included), never a prototype. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function pick(context: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of paths) {
    const value = getPath(context, path);
    if (value === undefined) continue;
    const parts = splitPath(path);
    let target = out;
    for (const part of parts.slice(0, -1)) {
      const next = Object.hasOwn(target, part) ? target[part] : undefined;
      if (next === null || typeof next !== 'object') setOwn(target, part, {});
      target = target[part] as Record<string, unknown>;
    }
    setOwn(target, parts[parts.length - 1] as string, value);
  }
  return out;
}

function omit(context: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  const out = structuredClone(context);
  for (const path of paths) {
    const parts = splitPath(path);
    let target: unknown = out;
    for (const part of parts.slice(0, -1)) {
      target =
        target !== null && typeof target === 'object' && Object.hasOwn(target, part)
          ? (target as Record<string, unknown>)[part]
          : undefined;
    }
    const last = parts.at(-1) as string;
    if (target !== null && typeof target === 'object' && Object.hasOwn(target, last))
      delete (target as Record<string, unknown>)[last];
  }
  return out;
}
