/**
 * Fields of a definition crumbs does not know. Definitions tolerate unknown keys (annotated RCRT definitions must
 * keep loading, definitions.ts), and zod strips them silently — so a field written in the wrong place (an api
 * agent's `request_transform` beside `yaml` instead of inside it) did nothing and said nothing. Like Kubernetes'
 * field validation in its default `Warn` mode, the definition is accepted and the writer is told which fields are
 * ignored: in the status breadcrumb, the API's answer (`Warning` headers and `warnings`), `crumbs apply`/`put` and
 * `crumbs explain`.
 *
 * Why a walk of the schema instead of a strict copy of it: zod has no "strict everywhere" switch, and a strict copy
 * would fail the parse where we only want to warn. The walk follows the value through the schema's objects,
 * arrays, records, optionals, defaults, pipes (their input side) and unions (the first option that accepts the
 * value), and reports every key an object's shape does not have (objects with a catchall take any key).
 */
import { definitionSchemas, isDefinitionSchema } from './definitions.ts';
import type { FieldIssue } from './errors.ts';
import { SCHEDULE_DEFINITION_SCHEMA, ScheduleDefinitionSchema } from './schedule-definition.ts';
import type * as z from './zod.ts';

/** Enough of zod's internal definition to walk it (zod v4 `_zod.def`). */
interface Def {
  readonly type: string;
  readonly shape?: Record<string, z.ZodMiniType>;
  readonly catchall?: z.ZodMiniType;
  readonly innerType?: z.ZodMiniType;
  readonly in?: z.ZodMiniType;
  readonly element?: z.ZodMiniType;
  readonly valueType?: z.ZodMiniType;
  readonly options?: readonly z.ZodMiniType[];
  readonly getter?: () => z.ZodMiniType;
}

const MAX_REPORTED = 50;
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'nonoptional', 'readonly', 'catch']);

function defOf(schema: z.ZodMiniType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

function walk(schema: z.ZodMiniType, value: unknown, path: string, found: string[], depth: number): void {
  if (found.length >= MAX_REPORTED || depth > 64) return;
  const def = defOf(schema);
  if (WRAPPERS.has(def.type) && def.innerType !== undefined) {
    walk(def.innerType, value, path, found, depth + 1);
    return;
  }
  switch (def.type) {
    case 'pipe':
      if (def.in !== undefined) walk(def.in, value, path, found, depth + 1);
      return;
    case 'lazy':
      if (def.getter !== undefined) walk(def.getter(), value, path, found, depth + 1);
      return;
    case 'union': {
      const option = def.options?.find((o) => o.safeParse(value).success);
      if (option !== undefined) walk(option, value, path, found, depth + 1);
      return;
    }
    case 'array':
      if (Array.isArray(value) && def.element !== undefined) {
        for (const [i, item] of value.entries()) walk(def.element, item, join(path, i), found, depth + 1);
      }
      return;
    case 'record':
      if (isObject(value) && def.valueType !== undefined) {
        for (const [key, item] of Object.entries(value))
          walk(def.valueType, item, join(path, key), found, depth + 1);
      }
      return;
    case 'object': {
      if (!isObject(value) || def.shape === undefined) return;
      for (const [key, item] of Object.entries(value)) {
        const field = def.shape[key];
        if (field !== undefined) walk(field, item, join(path, key), found, depth + 1);
        else if (def.catchall === undefined && found.length < MAX_REPORTED) found.push(join(path, key));
      }
      return;
    }
  }
}

/** The paths of the fields of `value` that `schema` does not know (and would strip), at most 50. */
export function unknownFields(schema: z.ZodMiniType, value: unknown): string[] {
  const found: string[] = [];
  walk(schema, value, '', found, 0);
  return found;
}

/** Warnings (FieldIssue shape) for unknown fields: what a writer is told, the definition being accepted. */
export function unknownFieldWarnings(schema: z.ZodMiniType, value: unknown): FieldIssue[] {
  return unknownFields(schema, value).map((path) => ({
    path,
    message: 'unknown field: crumbs does not read it (is it misspelled, or in the wrong place?)',
  }));
}

// The structural schemas have the same fields as the checked ones (`definition-validation.ts` adds checks, not
// fields), so the API can warn without loading the expression checks.
const SCHEMAS = definitionSchemas();

/**
 * What a writer should hear about a definition that is still accepted: the fields crumbs does not know and strips.
 * Empty for a schema that is not a definition's.
 */
export function definitionWarnings(schemaName: string, context: unknown): FieldIssue[] {
  if (schemaName === SCHEDULE_DEFINITION_SCHEMA)
    return unknownFieldWarnings(ScheduleDefinitionSchema, context);
  if (!isDefinitionSchema(schemaName)) return [];
  return unknownFieldWarnings(SCHEMAS[schemaName], context);
}

/** The warnings as an HTTP `Warning` header (RFC 9111 syntax, code 299 as Kubernetes sends them), or undefined. */
export function warningHeader(warnings: readonly FieldIssue[]): string | undefined {
  if (warnings.length === 0) return undefined;
  return warnings.map((w) => `299 - ${JSON.stringify(`${w.path}: ${w.message}`)}`).join(', ');
}
