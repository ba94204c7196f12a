/**
 * The OpenAPI 3.1 document, generated from the route table (`route-table.ts`) and its zod schemas with zod 4's own
 * JSON Schema output (`z.toJSONSchema`, draft 2020-12: OpenAPI 3.1's dialect), so there is no second description
 * to keep in step. Served at `GET /v1/openapi.json` and written to `docs/openapi.json` by `npm run openapi`.
 *
 * Why no `zod-openapi`: it targets classic zod's `.meta()`; crumbs uses `zod/mini`, whose schemas zod's own
 * converter reads as they are. Named schemas become `components.schemas` (`$ref`), every 4xx/5xx is a problem+json
 * body, and a 429 carries `Retry-After`.
 */
import * as z from '#shared/domain/zod.ts';
import {
  PATH_PARAMETERS,
  type Parameter,
  ROOM_CONTRACTS,
  ROUTE_TABLE,
  type RouteContract,
} from './route-table.ts';
import * as S from './schemas.ts';

export const OPENAPI_VERSION = '3.1.1';

/** Schemas shown by name (components), so the document and a generated client share their names. */
const NAMED: Record<string, z.ZodMiniType> = {};
/** Request bodies by name: converted as input (a field with a default is optional to send). */
const BODIES: Record<string, z.ZodMiniType> = {};
// Sorted: a module namespace's key order differs between loaders, and the document must not.
const exported = [S, ...ROOM_CONTRACTS].flatMap((module) => Object.entries(module));
for (const [key, value] of exported.sort(([a], [b]) => (a < b ? -1 : 1))) {
  if (!key.endsWith('Schema') || !(value instanceof z.core.$ZodType)) continue;
  const name = key.slice(0, -'Schema'.length);
  const schema = value as z.ZodMiniType;
  if (name.endsWith('Body') || name === 'JsonRpcRequest') BODIES[name] = schema;
  else NAMED[name] = schema;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'The request is not valid: `errors` names each bad field.',
  401: 'No valid bearer token.',
  403: 'The token may not use this workspace.',
  404: 'Not found.',
  405: 'Method not allowed.',
  406: 'Not acceptable.',
  409: 'Conflict with the current state.',
  410: 'The workspace is deleted (or being deleted): every write is refused.',
  412: 'The `If-Match` version is not the current one.',
  413: 'The body is too large.',
  415: 'Expected `application/json`.',
  422: 'The body is well-formed but not acceptable: `errors` names each bad field.',
  429: "Over the workspace's request rate: wait `Retry-After` seconds.",
  500: 'An unexpected error (logged).',
  503: 'Briefly unavailable: retry after `Retry-After` seconds.',
};

type Json = Record<string, unknown>;

export function openApiDocument(options: { serverUrl?: string } = {}): Json {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(NAMED)) registry.add(schema, { id });
  const converted = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }).schemas;
  const schemas: Json = {};
  for (const [id, schema] of Object.entries(converted)) schemas[id] = clean(schema);
  const requestNames = new Map<z.ZodMiniType, string>();
  for (const [name, schema] of Object.entries(BODIES)) {
    requestNames.set(schema, name);
    schemas[name] = withoutDefaults(clean(inline(schema, 'input')));
  }
  for (const route of ROUTE_TABLE) {
    if (route.body !== undefined && !requestNames.has(route.body.schema)) {
      throw new Error(
        `${route.method} ${route.path}: its body schema is not exported by schemas.ts as …BodySchema`,
      );
    }
  }

  const paths: Record<string, Json> = {};
  for (const route of ROUTE_TABLE) {
    const item = paths[route.path] ?? {};
    item[route.method.toLowerCase()] = operation(route, requestNames);
    paths[route.path] = item;
  }

  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'crumbs',
      version: '1',
      summary: 'Agents, tools and workflows defined as breadcrumbs, routed by EventBridge rules.',
      description:
        'Every data route is scoped to a workspace (`{ws}`) and needs a bearer JWT whose workspaces claim names it. ' +
        'Errors are RFC 9457 problem details. Listings are pages: pass `next_cursor` back as `cursor`. Over the ' +
        "workspace's request rate, 429 with `Retry-After`. MCP and A2A are JSON-RPC 2.0 endpoints on the same base URL.",
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      {
        url: '{baseUrl}',
        description:
          "The stack's base URL: `crumbs dev` prints it; on AWS the front door's stage URL (`…/prod`).",
        variables: { baseUrl: { default: options.serverUrl ?? 'http://127.0.0.1:4710' } },
      },
    ],
    security: [{ bearer: [] }],
    tags: [...new Set(ROUTE_TABLE.map((r) => r.tag))].map((name) => ({ name, description: TAG_TEXT[name] })),
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: "A JWT of the stack's issuer (`crumbs login`, or `crumbs token` under `crumbs dev`).",
        },
      },
      schemas,
      responses: Object.fromEntries(
        Object.keys(STATUS_TEXT).map((status) => [`Problem${status}`, problemResponse(Number(status))]),
      ),
      headers: {
        RetryAfter: {
          description: 'Seconds to wait before retrying.',
          schema: { type: 'integer', minimum: 0 },
        },
      },
    },
  };
}

const TAG_TEXT: Record<string, string> = {
  meta: 'The service itself.',
  breadcrumbs: 'Versioned JSON records: definitions, requests, answers, notes.',
  activity: 'Threads, the change stream, definitions with their rules, failures.',
  runs: 'Workflow runs.',
  approvals: 'Tool calls waiting for a person.',
  streams: 'Streamed answers.',
  usage: 'Model usage and cost.',
  workspaces: 'Export and deletion of a workspace.',
  mcp: 'The workspace MCP server (JSON-RPC 2.0 over Streamable HTTP).',
  a2a: 'Agents over A2A (JSON-RPC 2.0).',
  attachments: 'Files: stored per workspace, content-addressed, referred to from contexts.',
  memory: 'What agents remember about a person, across conversations.',
  guardrails: 'Policies on what goes into and comes out of models and tools.',
  evals: 'Datasets, scorers and experiments.',
};

function operation(route: RouteContract, requestNames: Map<z.ZodMiniType, string>): Json {
  const parameters: Json[] = [];
  for (const name of pathParameters(route.path))
    parameters.push(parameter(name, 'path', PATH_PARAMETERS[name]));
  for (const [name, p] of Object.entries(route.query ?? {})) parameters.push(parameter(name, 'query', p));
  for (const [name, p] of Object.entries(route.headers ?? {})) parameters.push(parameter(name, 'header', p));

  const responses: Json = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const type = r.contentType ?? 'application/json';
    responses[status] = {
      description: r.description,
      ...(r.schema !== undefined
        ? { content: { [type]: { schema: ref(r.schema) } } }
        : type === 'text/event-stream'
          ? { content: { [type]: { schema: { type: 'string' } } } }
          : {}),
    };
  }
  const errors = new Set<number>(route.errors);
  // Every route can meet the request rate (429) and a store briefly unavailable (503), both with Retry-After.
  for (const s of route.public ? [429, 503] : [401, 403, 429, 503]) errors.add(s);
  for (const status of [...errors].sort()) {
    responses[String(status)] = route.jsonRpcErrors?.includes(status)
      ? {
          description: `${STATUS_TEXT[status] ?? 'Error.'} The body is a JSON-RPC error.`,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/JsonRpcResponse' } } },
        }
      : { $ref: `#/components/responses/Problem${status}` };
  }

  return {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    ...(route.public ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body !== undefined
      ? {
          requestBody: {
            required: route.body.required,
            content: {
              [route.body.contentType ?? 'application/json']: {
                schema: { $ref: `#/components/schemas/${requestNames.get(route.body.schema)}` },
              },
            },
          },
        }
      : {}),
    responses: { ...responses, default: { $ref: '#/components/responses/Problem500' } },
    ...(route.paginated ? { 'x-crumbs-paginated': true } : {}),
    ...(route.servedBy !== undefined && route.servedBy !== 'api'
      ? { 'x-crumbs-function': route.servedBy }
      : {}),
  };
}

function problemResponse(status: number): Json {
  return {
    description: STATUS_TEXT[status] ?? 'Error.',
    ...(status === 429 || status === 503
      ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
      : {}),
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

function parameter(name: string, where: 'path' | 'query' | 'header', p: Parameter | undefined): Json {
  return {
    name,
    in: where,
    description: p?.description ?? name,
    required: where === 'path' || p?.required === true,
    schema: p?.schema !== undefined ? clean(inline(p.schema, 'input')) : { type: 'string' },
  };
}

export function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
}

function nameOf(schema: z.ZodMiniType): string | undefined {
  for (const [name, s] of Object.entries(NAMED)) if (s === schema) return name;
  return undefined;
}

function ref(schema: z.ZodMiniType): Json {
  const name = nameOf(schema);
  return name !== undefined ? { $ref: `#/components/schemas/${name}` } : clean(inline(schema, 'output'));
}

function inline(schema: z.ZodMiniType, io: 'input' | 'output'): Json {
  return z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
}

/**
 * A request body's defaults said in words: generators read a property with a `default` as always present
 * (openapi-typescript's `defaultNonNullable`), which would make a field a client may leave out required to send.
 */
function withoutDefaults(schema: Json): Json {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const out: Json = {};
    for (const [key, v] of Object.entries(value)) if (key !== 'default') out[key] = walk(v);
    if ('default' in value) {
      const said = `Defaults to ${JSON.stringify((value as Json).default)}.`;
      out.description = typeof out.description === 'string' ? `${out.description} ${said}` : said;
    }
    return out;
  };
  return walk(schema) as Json;
}

/** Without `$schema`/`$id` (OpenAPI 3.1 sets the dialect) and without zod's safe-integer bounds on every integer. */
function clean(value: unknown): Json {
  return JSON.parse(
    JSON.stringify(value, (key, v: unknown) => {
      if (key === '$schema' || key === '$id') return undefined;
      if ((key === 'minimum' || key === 'maximum') && Math.abs(Number(v)) === Number.MAX_SAFE_INTEGER) {
        return undefined;
      }
      return v;
    }),
  ) as Json;
}
