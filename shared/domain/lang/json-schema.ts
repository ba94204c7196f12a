/**
 * JSON Schema validation for all of crumbs: tool `input_schema` / `output_schema`, built-in tools' own schemas,
 * workflow step inputs and agents' `response_schema`. One module, so every place reports the same messages.
 *
 * Built on @cfworker/json-schema, which interprets the schema (~23 KB, no `new Function`) where Ajv generates code
 * (~130 KB per bundle). Draft 2020-12 unless `$schema` names another draft; every error is collected, in Ajv's
 * wording (`input.items[2].name: must be string`); compiling checks the schema's shapes and `$ref`s, which
 * @cfworker does not; and since tenants write schemas, validation is bounded (JSON_SCHEMA_LIMITS: patterns on
 * `linear-regex.ts`, `$ref` loops and expansions refused, a budget of subschema applications per validation).
 * Each decision and its reason: `json-schema.md` beside this file.
 */
import { dereference, type Schema, type SchemaDraft, validate } from '@cfworker/json-schema';
import { type FieldIssue, InvalidJsonSchemaError, JsonSchemaWorkLimitError } from '../errors.ts';
import { linearRegexProblem, withLinearRegExp } from './linear-regex.ts';

export const JSON_SCHEMA_LIMITS = Object.freeze({
  /**
   * Subschemas applied to one value without stepping into it (through allOf / anyOf / oneOf / not / if / $ref).
   * Hand-written schemas stay far below; a dozen two-way anyOf $refs nested in each other do not.
   */
  maxInPlaceExpansion: 10_000,
  /**
   * Steps of work in one validation, all of it counted: `applicationCost` per subschema applied, and one per value
   * an `enum`, `const` or `uniqueItems` comparison may visit (an enum entry of 5 values costs 5 each time it is
   * tried, a const its size each time it is applied, an item read under uniqueItems `meteredReadCost` plus its
   * size). A second of one core or less (`npm run bench:expressions`), and several steps per value of the largest
   * request body (400 KB).
   */
  maxWork: 6_400_000,
  /**
   * Steps per subschema applied: @cfworker reads some 45 keywords and builds locations for each application,
   * about 30 times the time of comparing one value (`npm run bench:expressions`).
   */
  applicationCost: 32,
  /**
   * Steps per item read from an array (besides the item's size) when the schema uses uniqueItems: the read goes
   * through the meter's proxy, which takes about twice the time of comparing one value.
   */
  meteredReadCost: 2,
  /** Nesting of the value validated (objects and arrays in each other). */
  maxInstanceDepth: 256,
});
/** A JSON Schema document: an object, or `true` / `false`. */
export type JsonSchemaDocument = Readonly<Record<string, unknown>> | boolean;

export interface JsonSchemaValidator {
  /**
   * Every way `value` breaks the schema, empty when it conforms. Paths start at `root` (`input.items[2].name`);
   * with `root` "" a top-level problem has path "". Throws InvalidJsonSchemaError when the schema turns out to be
   * unusable while validating, and JsonSchemaWorkLimitError (one of those) when the validation would take more than
   * `maxWork` steps (default `JSON_SCHEMA_LIMITS.maxWork`; a caller may try a smaller slice first).
   */
  validate(value: unknown, root?: string, maxWork?: number): FieldIssue[];
}

/** Compiled schemas kept per cache key; beyond this the least recently used goes (definitions are many). */
export const MAX_COMPILED_SCHEMAS = 500;
const compiled = new Map<string, JsonSchemaValidator>();

/**
 * The validator for `schema`, compiled once per `cacheKey` (the caller's key must change when the schema does,
 * e.g. a definition id and version). `what` names the schema in errors ("the echo tool's input schema").
 */
export function compileJsonSchema(
  cacheKey: string,
  schema: JsonSchemaDocument,
  what: string,
): JsonSchemaValidator {
  const cached = compiled.get(cacheKey);
  if (cached) {
    // Re-inserting keeps the Map's order least-recently-used first.
    compiled.delete(cacheKey);
    compiled.set(cacheKey, cached);
    return cached;
  }
  const validator = compile(schema, what);
  if (compiled.size >= MAX_COMPILED_SCHEMAS) {
    const oldest = compiled.keys().next();
    if (!oldest.done) compiled.delete(oldest.value);
  }
  compiled.set(cacheKey, validator);
  return validator;
}

/** Whether `cacheKey`'s schema is compiled (validating with it will not compile it first). */
export function isCompiledJsonSchema(cacheKey: string): boolean {
  return compiled.has(cacheKey);
}

/** `input.n: must be integer; input: must have required property 'm'` (a root path shows as `(root)`). */
export function formatIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ');
}

// ---------------------------------------------------------------------------------------------------------------
// Compiling

type SchemaObject = Record<string, unknown>;
type Lookup = Record<string, Schema | boolean>;

function compile(schema: JsonSchemaDocument, what: string): JsonSchemaValidator {
  // @cfworker marks the schema objects it dereferences; a copy keeps callers' (possibly frozen, shared) schemas
  // untouched and stops marks from one compilation leaking into another.
  const own = structuredCloneSchema(schema, what);
  const draft = draftOf(own);
  const shapes: ShapeCheck = { draft, refs: [] };
  const problem = shapeProblem(own, '#', shapes);
  if (problem) throw new InvalidJsonSchemaError(what, problem);
  let lookup: Lookup;
  try {
    lookup = dereference(own as Schema | boolean);
  } catch (error) {
    const problem = /^Duplicate schema URI/.test(firstLine(error))
      ? `two subschemas have the same $id (${firstLine(error)})`
      : `an $id or $ref is not a URI (${firstLine(error)})`;
    throw new InvalidJsonSchemaError(what, problem, { cause: error });
  }
  for (const ref of shapes.refs) {
    const target = ref.schema.__absolute_ref__;
    if (typeof target !== 'string' || lookup[target] === undefined) {
      throw new InvalidJsonSchemaError(
        what,
        `${ref.at}: $ref "${String(ref.schema.$ref)}" does not resolve to a schema in this document ` +
          '(other documents are not fetched)',
      );
    }
  }
  const graph = applicationGraph(own, lookup);
  const unbounded = loopProblem(graph) ?? expansionProblem(graph);
  if (unbounded) throw new InvalidJsonSchemaError(what, unbounded);
  const meter: Meter = { left: 0, active: false };
  meterWork(graph, meter);
  const uniqueItems = graph.some((node) => node.schema.uniqueItems === true);
  return {
    validate(value, root = '', maxWork = JSON_SCHEMA_LIMITS.maxWork) {
      const depth = depthOf(value, JSON_SCHEMA_LIMITS.maxInstanceDepth);
      if (depth > JSON_SCHEMA_LIMITS.maxInstanceDepth) {
        return [
          {
            path: root,
            message: `must NOT be nested deeper than ${JSON_SCHEMA_LIMITS.maxInstanceDepth} levels (objects and arrays in each other)`,
          },
        ];
      }
      let instance: unknown;
      try {
        // Validate what would be stored: JSON drops undefined fields and calls toJSON (Dates), and @cfworker
        // throws on values JSON cannot hold.
        instance = JSON.parse(JSON.stringify(value) ?? 'null');
      } catch (error) {
        return [{ path: root, message: `must be JSON (${firstLine(error)})` }];
      }
      // @cfworker compares every item with every other for uniqueItems; reading an item through this meter
      // charges what comparing it can cost.
      const validated = uniqueItems ? meterArrays(instance, meter) : instance;
      let errors: Unit[];
      meter.left = maxWork;
      meter.active = true;
      try {
        errors = withLinearRegExp(
          () => validate(validated, own as Schema | boolean, draft, lookup, false).errors,
        );
      } catch (error) {
        if (error === BUDGET_SPENT) throw new JsonSchemaWorkLimitError(what, maxWork);
        throw new InvalidJsonSchemaError(what, firstLine(error), { cause: error });
      } finally {
        meter.active = false;
      }
      return issuesFrom(errors, { instance, root, schema: own, lookup });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Bounds: what a validation can cost

/** Thrown from inside @cfworker's recursion when a validation's budget is spent; never leaves this module. */
const BUDGET_SPENT = Symbol('json-schema budget spent');

interface SchemaNode {
  readonly schema: SchemaObject;
  /** Where it is written (`#/$defs/a/anyOf/0`), or the $ref that reached it. */
  readonly at: string;
  /** Subschemas applied to the same value: allOf / anyOf / oneOf / not / if / then / else / $ref / dependents. */
  readonly inPlace: SchemaNode[];
}

/** Every object subschema of the document, with the subschemas each applies to the same value. */
function applicationGraph(root: unknown, lookup: Lookup): SchemaNode[] {
  const nodes = new Map<SchemaObject, SchemaNode>();
  const pending: SchemaNode[] = [];
  const nodeOf = (schema: unknown, at: string): SchemaNode | undefined => {
    if (!isObject(schema)) return undefined;
    let node = nodes.get(schema);
    if (!node) {
      node = { schema, at, inPlace: [] };
      nodes.set(schema, node);
      pending.push(node);
    }
    return node;
  };
  nodeOf(root, '#');
  while (pending.length > 0) {
    const node = pending.pop() as SchemaNode;
    const s = node.schema;
    const here = (...segments: (string | number)[]) =>
      [node.at, ...segments.map((x) => escapeSegment(String(x)))].join('/');
    const inPlace = (schema: unknown, at: string) => {
      const child = nodeOf(schema, at);
      if (child) node.inPlace.push(child);
    };
    for (const keyword of ['not', 'if', 'then', 'else']) inPlace(s[keyword], here(keyword));
    for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
      const list = s[keyword];
      if (Array.isArray(list)) for (const [i, sub] of list.entries()) inPlace(sub, here(keyword, i));
    }
    for (const keyword of ['dependentSchemas', 'dependencies']) {
      const map = s[keyword];
      if (isObject(map)) for (const [k, sub] of Object.entries(map)) inPlace(sub, here(keyword, k));
    }
    for (const key of ['__absolute_ref__', '__absolute_recursive_ref__']) {
      const target = s[key];
      if (typeof target === 'string')
        inPlace(lookup[target], `${here()} → ${String(s.$ref ?? s.$recursiveRef)}`);
    }
    // Subschemas that apply to the value's members or items step into it: a loop through them ends with the value.
    for (const keyword of SCHEMA_KEYWORDS) nodeOf(s[keyword], here(keyword));
    if (Array.isArray(s.items)) for (const [i, sub] of s.items.entries()) nodeOf(sub, here('items', i));
    else nodeOf(s.items, here('items'));
    if (Array.isArray(s.prefixItems)) {
      for (const [i, sub] of s.prefixItems.entries()) nodeOf(sub, here('prefixItems', i));
    }
    for (const keyword of SCHEMA_MAP_KEYWORDS) {
      const map = s[keyword];
      if (isObject(map)) for (const [k, sub] of Object.entries(map)) nodeOf(sub, here(keyword, k));
    }
  }
  return [...nodes.values()];
}

/** A cycle of in-place applications: validating it would recurse on the same value until the stack runs out. */
function loopProblem(graph: readonly SchemaNode[]): string | undefined {
  const state = new Map<SchemaNode, 'open' | 'done'>();
  for (const start of graph) {
    if (state.has(start)) continue;
    // Iterative depth-first search: a deep chain of $refs must not overflow the stack here either.
    const stack: { node: SchemaNode; next: number }[] = [{ node: start, next: 0 }];
    state.set(start, 'open');
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { node: SchemaNode; next: number };
      const child = top.node.inPlace[top.next++];
      if (child === undefined) {
        state.set(top.node, 'done');
        stack.pop();
      } else if (state.get(child) === 'open') {
        const from = stack.findIndex((frame) => frame.node === child);
        const path = [...stack.slice(from).map((frame) => frame.node.at), child.at].join(' → ');
        return `${top.node.at}: this subschema applies itself to the same value again (${path}) without stepping into a property or item, so validation would never end`;
      } else if (!state.has(child)) {
        state.set(child, 'open');
        stack.push({ node: child, next: 0 });
      }
    }
  }
  return undefined;
}

/** A subschema whose in-place applications multiply past the budget (the graph has no cycles by now). */
function expansionProblem(graph: readonly SchemaNode[]): string | undefined {
  const limit = JSON_SCHEMA_LIMITS.maxInPlaceExpansion;
  const cost = new Map<SchemaNode, number>();
  // Post-order without recursion: a node's cost is 1 plus its in-place children's, saturating past the limit.
  const costOf = (root: SchemaNode): number => {
    const stack: { node: SchemaNode; next: number; sum: number }[] = [{ node: root, next: 0, sum: 1 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { node: SchemaNode; next: number; sum: number };
      const child = top.node.inPlace[top.next++];
      if (child === undefined) {
        cost.set(top.node, top.sum);
        stack.pop();
        const parent = stack[stack.length - 1];
        if (parent) parent.sum = Math.min(parent.sum + top.sum, limit + 1);
        continue;
      }
      const known = cost.get(child);
      if (known === undefined) stack.push({ node: child, next: 0, sum: 1 });
      else top.sum = Math.min(top.sum + known, limit + 1);
    }
    return cost.get(root) as number;
  };
  for (const node of graph) {
    if ((cost.get(node) ?? costOf(node)) > limit) {
      return `${node.at}: applying this subschema to one value means more than ${limit} subschema evaluations (nested anyOf / oneOf / allOf and $refs multiply); share fewer branches or flatten it`;
    }
  }
  return undefined;
}

/** A validation's budget of steps; it is charged only while `active` (reporting reads the schema too). */
interface Meter {
  left: number;
  active: boolean;
}

function charge(meter: Meter, steps: number): void {
  if (!meter.active) return;
  meter.left -= steps;
  if (meter.left < 0) throw BUDGET_SPENT;
}

/**
 * Makes every validation count its work, inside @cfworker's recursion (no option of the library offers a budget):
 * - Applications: @cfworker reads each keyword it knows from a schema object once each time it applies it (it
 *   destructures them), so an accessor on one of them is a counter that can stop it. The accessor goes on a
 *   keyword the schema does not use (usually the library's own `__absolute_recursive_ref__` marker),
 *   non-enumerable so copies and error reports never see it; on a keyword it uses, it keeps the value and its
 *   enumerability.
 * - `enum`: @cfworker tries the entries with `$enum.some(...)`, a deep comparison each; the array gets its own
 *   `some` that charges each entry's size before trying it (a comparison visits at most that many values).
 * - `const`: an accessor charges its size each time it is read, once per application.
 * (uniqueItems is charged on the value's side, `meterArrays`.)
 */
function meterWork(graph: readonly SchemaNode[], meter: Meter): void {
  const applicationCost = JSON_SCHEMA_LIMITS.applicationCost;
  for (const { schema } of graph) {
    if (Array.isArray(schema.enum)) schema.enum = meteredEnum(schema.enum, meter);
    if (Object.hasOwn(schema, 'const')) {
      const value = schema.const;
      const size = sizeOf(value);
      Object.defineProperty(schema, 'const', {
        enumerable: true,
        configurable: true,
        get() {
          charge(meter, size);
          return value;
        },
      });
    }
    const key = METER_KEYS.find((k) => Object.getOwnPropertyDescriptor(schema, k)?.configurable !== false);
    if (key === undefined) continue;
    const own = Object.getOwnPropertyDescriptor(schema, key);
    const value = own?.value as unknown;
    Object.defineProperty(schema, key, {
      enumerable: own?.enumerable ?? false,
      configurable: true,
      get() {
        charge(meter, applicationCost);
        return value;
      },
    });
  }
}

/** Keywords @cfworker destructures on every application; the first one a schema leaves free carries the meter. */
const METER_KEYS = ['__absolute_recursive_ref__', 'maxContains', 'minContains', 'unevaluatedItems', 'type'];

/** A copy of an `enum` list whose `some` (what @cfworker calls) charges each entry's size before trying it. */
function meteredEnum(entries: readonly unknown[], meter: Meter): unknown[] {
  const copy = [...entries];
  const sizes = copy.map(sizeOf);
  Object.defineProperty(copy, 'some', {
    enumerable: false,
    value(predicate: (value: unknown, index: number, array: unknown[]) => boolean): boolean {
      for (let i = 0; i < copy.length; i++) {
        charge(meter, sizes[i] as number);
        if (predicate(copy[i], i, copy)) return true;
      }
      return false;
    },
  });
  return copy;
}

/**
 * The value with each array (of its own copy) behind a proxy that charges, for every item read, the read and the
 * item's size: uniqueItems reads an item for each pair it compares, and a comparison visits at most that many
 * values. Other keywords read each item once per application, so they pay its size once more (linear in the
 * value). Only for schemas that use uniqueItems: the proxy makes every item read about a hundred times slower.
 */
function meterArrays(value: unknown, meter: Meter): unknown {
  const wrap = (node: unknown): unknown => {
    if (node === null || typeof node !== 'object') return node;
    if (!Array.isArray(node)) {
      const object = node as Record<string, unknown>;
      for (const key of Object.keys(object)) object[key] = wrap(object[key]);
      return object;
    }
    const items = node as unknown[];
    for (let i = 0; i < items.length; i++) items[i] = wrap(items[i]);
    const costs = items.map((item) => JSON_SCHEMA_LIMITS.meteredReadCost + sizeOf(item));
    return new Proxy(items, {
      get(target, key, receiver) {
        if (typeof key === 'string') {
          const index = Number(key);
          if (Number.isInteger(index) && index >= 0 && index < costs.length)
            charge(meter, costs[index] as number);
        }
        return Reflect.get(target, key, receiver);
      },
    });
  };
  // Iteration depth is bounded by maxInstanceDepth, checked before.
  return wrap(value);
}

/** Values in `value` (itself, and everything in it): what a deep comparison with it visits at most. */
function sizeOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 1;
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    size++;
    if (node !== null && typeof node === 'object') for (const child of Object.values(node)) stack.push(child);
  }
  return size;
}

/** How deeply `value` nests, counted up to just past `limit`; iterative, as the value may be deeper than the stack. */
function depthOf(value: unknown, limit: number): number {
  let depth = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, at] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (at + 1 > depth) depth = at + 1;
    if (depth > limit) break;
    for (const child of Object.values(node)) stack.push([child, at + 1]);
  }
  return depth;
}

function structuredCloneSchema(schema: unknown, what: string): unknown {
  if (typeof schema === 'boolean') return schema;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new InvalidJsonSchemaError(what, `a schema must be an object or a boolean, not ${kindOf(schema)}`);
  }
  try {
    return structuredClone(schema);
  } catch (error) {
    throw new InvalidJsonSchemaError(what, `it is not plain JSON (${firstLine(error)})`, { cause: error });
  }
}

function draftOf(schema: unknown): SchemaDraft {
  const declared = isObject(schema) && typeof schema.$schema === 'string' ? schema.$schema : '';
  if (declared.includes('draft-04')) return '4';
  // @cfworker has no draft 6; draft 7 only added keywords to it.
  if (declared.includes('draft-06') || declared.includes('draft-07')) return '7';
  if (declared.includes('2019-09')) return '2019-09';
  return '2020-12';
}

const JSON_TYPES = ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'];
const SCHEMA_KEYWORDS = [
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
];
const SCHEMA_LIST_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const COUNT_KEYWORDS = [
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minContains',
  'maxContains',
];

interface ShapeCheck {
  draft: SchemaDraft;
  /** The subschemas that use `$ref`, checked once the lookup exists. */
  refs: { at: string; schema: SchemaObject }[];
}

/** The first thing in `schema` that @cfworker would ignore or trip over: `<schema pointer>: <what is wrong>`. */
function shapeProblem(schema: unknown, at: string, check: ShapeCheck): string | undefined {
  if (typeof schema === 'boolean') return undefined;
  if (!isObject(schema)) return `${at}: a schema must be an object or a boolean, not ${kindOf(schema)}`;
  const s = schema;
  const here = (keyword: string) => `${at}/${escapeSegment(keyword)}`;

  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const bad = types.find((t) => typeof t !== 'string' || !JSON_TYPES.includes(t));
    if (bad !== undefined || types.length === 0) {
      const written = bad === undefined ? 'an empty list' : JSON.stringify(bad);
      return `${here('type')}: ${written} is not a JSON type (${JSON_TYPES.join(', ')})`;
    }
  }
  if (s.required !== undefined && !isStringList(s.required)) {
    return `${here('required')}: must be an array of property names, not ${kindOf(s.required)}`;
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) {
    return `${here('enum')}: must be an array of allowed values, not ${kindOf(s.enum)}`;
  }
  for (const keyword of COUNT_KEYWORDS) {
    const n = s[keyword];
    if (n !== undefined && !(Number.isInteger(n) && (n as number) >= 0)) {
      return `${here(keyword)}: must be a non-negative integer, not ${kindOf(n)}`;
    }
  }
  for (const keyword of ['minimum', 'maximum']) {
    const n = s[keyword];
    if (n !== undefined && typeof n !== 'number')
      return `${here(keyword)}: must be a number, not ${kindOf(n)}`;
  }
  for (const keyword of ['exclusiveMinimum', 'exclusiveMaximum']) {
    const n = s[keyword];
    // Draft 4 spells them as booleans beside minimum / maximum; later drafts as the bound itself.
    const expected = check.draft === '4' ? 'boolean' : 'number';
    if (n !== undefined && typeof n !== expected) {
      return `${here(keyword)}: must be a ${expected} in this draft, not ${kindOf(n)}`;
    }
  }
  if (s.multipleOf !== undefined && !(typeof s.multipleOf === 'number' && s.multipleOf > 0)) {
    return `${here('multipleOf')}: must be a number greater than 0, not ${kindOf(s.multipleOf)}`;
  }
  if (s.uniqueItems !== undefined && typeof s.uniqueItems !== 'boolean') {
    return `${here('uniqueItems')}: must be true or false, not ${kindOf(s.uniqueItems)}`;
  }
  if (s.format !== undefined && typeof s.format !== 'string') {
    return `${here('format')}: must be a format name, not ${kindOf(s.format)}`;
  }
  if (s.pattern !== undefined) {
    const bad = regexProblem(s.pattern);
    if (bad) return `${here('pattern')}: ${bad}`;
  }
  if (s.$ref !== undefined) {
    if (typeof s.$ref !== 'string') return `${here('$ref')}: must be a string, not ${kindOf(s.$ref)}`;
    check.refs.push({ at, schema: s });
  }
  if (s.dependentRequired !== undefined) {
    const map = s.dependentRequired;
    if (!isObject(map) || !Object.values(map).every(isStringList)) {
      return `${here('dependentRequired')}: must map property names to arrays of property names`;
    }
  }
  if (s.dependencies !== undefined) {
    if (!isObject(s.dependencies))
      return `${here('dependencies')}: must be an object, not ${kindOf(s.dependencies)}`;
    for (const [key, dependency] of Object.entries(s.dependencies)) {
      if (isStringList(dependency)) continue;
      const bad = shapeProblem(dependency, `${here('dependencies')}/${escapeSegment(key)}`, check);
      if (bad) return bad;
    }
  }

  for (const keyword of SCHEMA_KEYWORDS) {
    if (s[keyword] === undefined) continue;
    const bad = shapeProblem(s[keyword], here(keyword), check);
    if (bad) return bad;
  }
  if (s.items !== undefined) {
    // An array of schemas is the draft 4-2019-09 tuple form; 2020-12 calls it prefixItems.
    const bad = Array.isArray(s.items)
      ? listProblem(s.items, here('items'), check, false)
      : shapeProblem(s.items, here('items'), check);
    if (bad) return bad;
  }
  for (const keyword of SCHEMA_LIST_KEYWORDS) {
    if (s[keyword] === undefined) continue;
    // Every list of schemas is a non-empty schemaArray in the meta-schemas (prefixItems included).
    const bad = listProblem(s[keyword], here(keyword), check, true);
    if (bad) return bad;
  }
  for (const keyword of SCHEMA_MAP_KEYWORDS) {
    const map = s[keyword];
    if (map === undefined) continue;
    if (!isObject(map)) return `${here(keyword)}: must be an object of schemas, not ${kindOf(map)}`;
    for (const [key, sub] of Object.entries(map)) {
      if (keyword === 'patternProperties') {
        const badPattern = regexProblem(key);
        if (badPattern) return `${here(keyword)}: ${badPattern}`;
      }
      const bad = shapeProblem(sub, `${here(keyword)}/${escapeSegment(key)}`, check);
      if (bad) return bad;
    }
  }
  return undefined;
}

function listProblem(list: unknown, at: string, check: ShapeCheck, nonEmpty: boolean): string | undefined {
  if (!Array.isArray(list)) return `${at}: must be an array of schemas, not ${kindOf(list)}`;
  if (nonEmpty && list.length === 0) return `${at}: must list at least one schema`;
  for (const [i, sub] of list.entries()) {
    const bad = shapeProblem(sub, `${at}/${i}`, check);
    if (bad) return bad;
  }
  return undefined;
}

/**
 * Patterns are JavaScript regexes with the `u` flag (as @cfworker and Ajv read them) that the linear-time engine
 * can run: lookaround and backreferences are refused here, when the schema is compiled.
 */
function regexProblem(pattern: unknown): string | undefined {
  if (typeof pattern !== 'string') return `must be a regular expression string, not ${kindOf(pattern)}`;
  const problem = linearRegexProblem(pattern, 'u');
  return problem === undefined
    ? undefined
    : `${JSON.stringify(pattern)} is not a valid regular expression (${problem})`;
}

// ---------------------------------------------------------------------------------------------------------------
// Reporting

interface Unit {
  keyword: string;
  keywordLocation: string;
  instanceLocation: string;
  error: string;
}

interface Scope {
  instance: unknown;
  root: string;
  schema: unknown;
  lookup: Lookup;
}

/** The keywords that only say "a subschema had errors"; the subschema's own errors follow them. */
const WRAPPERS = new Set([
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  '$ref',
  '$recursiveRef',
  'allOf',
  'if',
  'dependentSchemas',
  'propertyNames',
]);

/**
 * Subschemas whose failures are part of a passing verdict (`not`, `contains` tries every item) or are reported by
 * the keyword itself: errors from inside them are not the instance's problem.
 */
const OPAQUE = new Set(['not', 'contains', 'if']);

function issuesFrom(errors: readonly Unit[], scope: Scope): FieldIssue[] {
  const lines = new Map<string, FieldIssue>();
  errors.forEach((unit, i) => {
    const issue = describe(unit, errors[i - 1], scope);
    if (!issue) return;
    // anyOf branches often repeat one another ("must be string" twice); once is enough.
    const line = `${issue.path}\n${issue.message}`;
    if (!lines.has(line)) lines.set(line, issue);
  });
  return [...lines.values()];
}

function describe(unit: Unit, previous: Unit | undefined, scope: Scope): FieldIssue | undefined {
  const segments = pointerSegments(unit.instanceLocation);
  const at = (path: readonly string[], message: string): FieldIssue => ({
    path: renderPath(scope.root, scope.instance, path),
    message,
  });
  const parent = segments.slice(0, -1);
  const last = segments.at(-1) ?? '';

  if (unit.keyword === 'false') {
    // A `false` subschema's error carries no keyword location (@cfworker sets it to the instance location), but
    // it directly follows the wrapper of the keyword that applied it.
    const from =
      previous &&
      `${previous.instanceLocation}/${unit.instanceLocation.split('/').at(-1)}` === unit.instanceLocation
        ? previous.keyword
        : undefined;
    switch (from) {
      case 'additionalProperties':
        return at(parent, `must NOT have additional properties (${JSON.stringify(last)})`);
      case 'unevaluatedProperties':
        return at(parent, `must NOT have unevaluated properties (${JSON.stringify(last)})`);
      case 'propertyNames':
        return at(parent, `must NOT have property ${JSON.stringify(last)}`);
      case 'items':
      case 'additionalItems': {
        // `items: false` after prefixItems (or `additionalItems: false` after tuple `items`) caps the length.
        const holder = previous ? walkKeywordLocation(previous.keywordLocation, scope).owner : undefined;
        const tuple = holder?.[from === 'items' ? 'prefixItems' : 'items'];
        if (Array.isArray(holder?.items) && from === 'items') return at(segments, 'boolean schema is false');
        return at(parent, `must NOT have more than ${Array.isArray(tuple) ? tuple.length : 0} items`);
      }
      case 'unevaluatedItems':
        return at(parent, `must NOT have unevaluated items (item ${last})`);
      default:
        return at(segments, 'boolean schema is false');
    }
  }

  const { keywords, owner } = walkKeywordLocation(unit.keywordLocation, scope);
  if (keywords.slice(0, -1).some((k) => OPAQUE.has(k))) return undefined;
  if (WRAPPERS.has(unit.keyword)) return undefined;
  const message = messageFor(unit, owner);
  if (message === undefined) return undefined;
  // Inside propertyNames the instance is the property's name, located (by @cfworker) as if it were its value.
  if (keywords.slice(0, -1).includes('propertyNames')) {
    return at(parent, `property name ${JSON.stringify(last)} ${message}`);
  }
  return at(segments, message);
}

/** Ajv's wording for one leaf error; undefined for a wrapper that only says its subschema failed. */
function messageFor(unit: Unit, owner: SchemaObject | undefined): string | undefined {
  const value = owner?.[unit.keyword];
  const known = value !== undefined;
  switch (unit.keyword) {
    case 'type':
      return known ? `must be ${[value].flat().join(',')}` : unit.error;
    case 'required': {
      const name = /required property "(.*)"\.$/s.exec(unit.error)?.[1];
      return name === undefined ? unit.error : `must have required property '${name}'`;
    }
    case 'enum':
      return `must be equal to one of the allowed values${known ? ` (${JSON.stringify(value)})` : ''}`;
    case 'const':
      return `must be equal to constant${known ? ` (${JSON.stringify(value)})` : ''}`;
    case 'minLength':
      return known ? `must NOT have fewer than ${value} characters` : unit.error;
    case 'maxLength':
      return known ? `must NOT have more than ${value} characters` : unit.error;
    case 'pattern':
      return `must match pattern${known ? ` ${JSON.stringify(value)}` : ''}`;
    case 'format':
      return known ? `must match format ${JSON.stringify(value)}` : unit.error;
    case 'minimum':
      // Draft 4: `exclusiveMinimum: true` beside `minimum` makes the bound exclusive.
      return known ? `must be ${owner?.exclusiveMinimum === true ? '>' : '>='} ${value}` : unit.error;
    case 'maximum':
      return known ? `must be ${owner?.exclusiveMaximum === true ? '<' : '<='} ${value}` : unit.error;
    case 'exclusiveMinimum':
      return known ? `must be > ${value}` : unit.error;
    case 'exclusiveMaximum':
      return known ? `must be < ${value}` : unit.error;
    case 'multipleOf':
      return known ? `must be multiple of ${value}` : unit.error;
    case 'minItems':
      return known ? `must NOT have fewer than ${value} items` : unit.error;
    case 'maxItems':
      return known ? `must NOT have more than ${value} items` : unit.error;
    case 'minProperties':
      return known ? `must NOT have fewer than ${value} properties` : unit.error;
    case 'maxProperties':
      return known ? `must NOT have more than ${value} properties` : unit.error;
    case 'uniqueItems': {
      const pair = /indexes (\d+) and (\d+)/.exec(unit.error);
      return `must NOT have duplicate items${pair ? ` (items ${pair[1]} and ${pair[2]} are identical)` : ''}`;
    }
    case 'anyOf':
      return 'must match a schema in anyOf';
    case 'oneOf': {
      const matches = Number(/\((\d+) matches\)/.exec(unit.error)?.[1] ?? 0);
      return `must match exactly one schema in oneOf${matches > 1 ? ` (it matches ${matches})` : ''}`;
    }
    case 'not':
      return 'must NOT be valid';
    case 'contains':
      return 'must contain at least 1 valid item(s)';
    case 'minContains':
      return known ? `must contain at least ${value} valid item(s)` : unit.error;
    case 'maxContains':
      return known ? `must contain at most ${value} valid item(s)` : unit.error;
    case 'dependentRequired':
    case 'dependencies': {
      // `dependencies` with a schema (not a list of names) is a wrapper; its subschema's errors follow.
      const names = /^Instance has "(.*)" but does not have "(.*)"\.$/s.exec(unit.error);
      return names ? `must have property '${names[2]}' when property '${names[1]}' is present` : undefined;
    }
    default:
      return unit.error;
  }
}

/**
 * Follows a keyword location (an evaluation path: it goes through `$ref`s) through the schema. Returns the
 * keywords on the way (property names and indexes left out) and the schema object holding the last keyword, or
 * undefined when the path cannot be followed (`$recursiveRef`).
 */
function walkKeywordLocation(
  location: string,
  scope: Scope,
): { keywords: string[]; owner: SchemaObject | undefined } {
  const keywords: string[] = [];
  let node: unknown = scope.schema;
  let owner: SchemaObject | undefined;
  let nameNext = false;
  for (const segment of pointerSegments(location)) {
    if (nameNext) {
      nameNext = false;
      node = child(node, segment);
      continue;
    }
    if (Array.isArray(node)) {
      node = node[Number(segment)];
      continue;
    }
    keywords.push(segment);
    owner = isObject(node) ? node : undefined;
    if (segment === '$ref') {
      const target = owner?.__absolute_ref__;
      node = typeof target === 'string' ? scope.lookup[target] : undefined;
    } else if (segment === '$recursiveRef') {
      node = undefined;
    } else {
      if (SCHEMA_MAP_KEYWORDS.includes(segment) || segment === 'dependencies') nameNext = true;
      node = child(node, segment);
    }
  }
  return { keywords, owner };
}

/** `input` + `#/items/2/name` → `input.items[2].name`; an index is `[n]` only where the value is an array. */
function renderPath(root: string, instance: unknown, segments: readonly string[]): string {
  let path = root;
  let node = instance;
  for (const segment of segments) {
    if (Array.isArray(node) && /^\d+$/.test(segment)) {
      path += `[${segment}]`;
      node = node[Number(segment)];
    } else {
      path += path === '' ? segment : `.${segment}`;
      node = child(node, segment);
    }
  }
  return path;
}

/** `#/a~1b/c%25d` → `['a/b', 'c%d']`: @cfworker percent-encodes JSON Pointer segments as a URI fragment. */
function pointerSegments(location: string): string[] {
  if (location === '#' || location === '') return [];
  return location
    .replace(/^#?\//, '')
    .split('/')
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // Not percent-encoded after all: the segment stands as written.
      }
      return decoded.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

function escapeSegment(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function child(node: unknown, key: string): unknown {
  if (Array.isArray(node)) return /^\d+$/.test(key) ? node[Number(key)] : undefined;
  return isObject(node) && Object.hasOwn(node, key) ? node[key] : undefined;
}

function isObject(value: unknown): value is SchemaObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** `an array`, `string "int"`, `null`: enough to see what was written instead. */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return `${typeof value} ${JSON.stringify(value)}`;
  }
  return typeof value;
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]?.trim() ?? text;
}
