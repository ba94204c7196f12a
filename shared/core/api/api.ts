/**
 * The crumbs HTTP API: routes → store calls. Pure request/response logic over the BreadcrumbStore port; the
 * Lambda handler (`functions/api/handler.ts`) and the local server both feed it API Gateway v2 events.
 *
 * Every route but `/health` needs a caller (API Gateway's JWT authorizer, or the local server's token check) that
 * may use the workspace. Errors are problem+json; nothing a client sends can produce a 5xx.
 */

import type { VectorSearchDeps } from '#shared/core/stream/vector-search.ts';
import {
  type Breadcrumb,
  BreadcrumbIdSchema,
  type ContextView,
  CreateBreadcrumbSchema,
  LIMITS,
  parseOrThrow,
  SchemaNameSchema,
  TagSchema,
  toFieldIssues,
  UpdateBreadcrumbSchema,
  WorkspaceSchema,
} from '#shared/domain/breadcrumb.ts';
import {
  BadRequestError,
  ForbiddenError,
  isCrumbsError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
} from '#shared/domain/errors.ts';
import { definitionWarnings, warningHeader } from '#shared/domain/unknown-fields.ts';
import type * as z from '#shared/domain/zod.ts';
import type { BreadcrumbStore, ReadBoundHit } from '#shared/ports/breadcrumb-store.ts';
import type { UsageTotals } from '#shared/ports/usage-totals.ts';
import type { Attachments } from '#shared/rooms/attachments/attachments.ts';
import { attachmentRoutes } from '#shared/rooms/attachments/routes.ts';
import { type ActivityDeps, activityRoutes } from './activity-routes.ts';
import { approvalRoutes } from './approval-routes.ts';
import {
  type Caller,
  empty,
  type HttpRequest,
  type HttpResult,
  internalProblem,
  json,
  problem,
} from './http.ts';
import type { RequestRate } from './request-rate.ts';
import { requestRoutes, type StreamingDeps } from './request-routes.ts';
import type { RoomApi, RoomWrite } from './rooms.ts';
import { runRoutes } from './run-routes.ts';
import { createSearchHandler, SEARCH_ROUTE } from './search.ts';
import { usageRoutes } from './usage-routes.ts';
import { type WorkspaceDeps, workspaceRoutes } from './workspace-routes.ts';

export interface ApiDependencies {
  store: BreadcrumbStore;
  /** Serves `GET …/breadcrumbs/search` (nearest neighbours by embedding); the route answers 404 without it. */
  vectorSearch?: VectorSearchDeps;
  /** Serves threads, the change stream, definitions with their state and errors (activity-routes.ts). */
  activity?: ActivityDeps;
  /** Serves a workspace's export and deletion (workspace-routes.ts); the routes answer 404 without it. */
  workspaces?: WorkspaceDeps;
  /** Serves `GET …/usage` (usage-routes.ts); the route answers 404 without it. */
  usage?: UsageTotals;
  /** Where answers stream (request-routes.ts); `GET …/streams/{id}` answers 404 without it. */
  streaming?: StreamingDeps;
  /**
   * The per-workspace request rate (`request-rate.ts`): every request naming a workspace takes from its allowance
   * once the caller is known to may use it (so nobody else's requests can spend it); past it, 429.
   */
  requestRate?: RequestRate;
  /**
   * Routes of rooms (`shared/rooms/`: the memory room's), mounted after the API's own, behind the same workspace
   * authorization; the handler that builds the API registers each room once.
   */
  roomRoutes?: readonly RoomRoute[];
  /** Serves `…/attachments` (the attachments room, `shared/rooms/attachments/`); 404 without it. */
  attachments?: Attachments;
  /** Extra fields for `/health` (the local stack lists its endpoints here). */
  health?: () => Record<string, unknown>;
  /** Called with unexpected errors before a 500 is answered. */
  onUnexpectedError?: (error: unknown, request: HttpRequest) => void;
  /** The rooms' routes and write gates (`rooms.ts`), registered once where the API is built. */
  rooms?: readonly RoomApi[];
}

type Params = Record<string, string>;
type RouteHandler = (request: HttpRequest, params: Params, caller: Caller) => Promise<HttpResult>;

/** A room's route: a path template, its pattern (named groups, `ws` the workspace) and its methods. */
export interface RoomRoute {
  template: string;
  pattern: RegExp;
  methods: Partial<Record<string, RouteHandler>>;
}
interface Route {
  /** The path with `{param}` placeholders, as the README's route table writes it. */
  template: string;
  pattern: RegExp;
  methods: Partial<Record<string, RouteHandler>>;
  public?: boolean;
}

/** A route as tests and docs see it: every method it answers, and whether it needs a caller. */
export interface RouteDescription {
  readonly template: string;
  readonly methods: readonly string[];
  readonly public: boolean;
}

export type Api = ((request: HttpRequest) => Promise<HttpResult>) & {
  /** Every route, in matching order (the 403 and fuzz suites iterate over it, so a new route is covered). */
  readonly routes: readonly RouteDescription[];
};

/**
 * `?view=` of every read of breadcrumbs (get, list, history, a version): context views (llm_hints applied) unless
 * `full` asks for the stored records, so a default read never hands out what llm_hints exclude. `…/{id}/full` is
 * kept as another spelling of `…/{id}?view=full` for clients written before `view` applied to get.
 */
const VIEWS = ['context', 'full'] as const;

export const DEFAULT_PAGE_LIMIT = 25;
export const MAX_PAGE_LIMIT = 100;
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * A definition written with fields crumbs does not know is accepted (it runs without them) and answered with a
 * `Warning` header naming them, as Kubernetes' field validation warns; the status breadcrumb says the same.
 */
function warnings(written: Pick<Breadcrumb, 'schema_name' | 'context'>): Record<string, string> {
  const header = warningHeader(definitionWarnings(written.schema_name, written.context));
  return header === undefined ? {} : { warning: header };
}

export function createApi(deps: ApiDependencies): Api {
  const { store } = deps;
  const gates = (deps.rooms ?? []).flatMap((r) => (r.gate ? [r.gate] : []));
  /** Passes a write through the gate of every room that gates its schema (refusals are 4xx, nothing stored). */
  const gated = async (write: RoomWrite) => {
    for (const gate of gates) if (gate.schemas.has(write.schema_name)) await gate.check(write);
  };
  /** The stored schema of a breadcrumb a PATCH or DELETE names, when some room gates writes (else nothing read). */
  const storedSchema = async (ws: string, id: string) =>
    gates.length === 0 ? undefined : (await store.get(ws, id).catch(() => undefined))?.schema_name;
  let document: string | undefined;
  const ws = '(?<ws>[^/]+)';
  const id = '(?<id>[^/]+)';
  const base = `^/v1/workspaces/${ws}/breadcrumbs`;
  const crumbs = '/v1/workspaces/{ws}/breadcrumbs';

  const routes: Route[] = [
    {
      template: '/health',
      pattern: /^\/health$/,
      public: true,
      methods: { GET: async () => json(200, { status: 'ok', ...deps.health?.() }) },
    },
    // Public, as the README is: it describes the API's shapes, never a workspace's data (contract/openapi.ts).
    {
      template: '/v1/openapi.json',
      pattern: /^\/v1\/openapi\.json$/,
      public: true,
      methods: {
        GET: async () => {
          // Loaded on first use: a cold start that serves no document does not evaluate its generator.
          document ??= JSON.stringify((await import('./contract/openapi.ts')).openApiDocument());
          return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: document };
        },
      },
    },
    {
      template: crumbs,
      pattern: new RegExp(`${base}$`),
      methods: {
        POST: async (req, p, caller) => {
          const input = parseOrThrow(CreateBreadcrumbSchema, parseJsonBody(req));
          await gated({
            op: 'create',
            workspace: workspace(p),
            schema_name: input.schema_name,
            context: input.context,
            caller,
          });
          const key = req.headers['idempotency-key'];
          if (key !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(key)) {
            throw new BadRequestError('Idempotency-Key is not valid', [
              { path: 'Idempotency-Key', message: 'expected 1-255 visible ASCII characters' },
            ]);
          }
          const { breadcrumb, replayed } = await store.create(workspace(p), input, {
            principal: caller.principal,
            ...(key !== undefined ? { idempotencyKey: key } : {}),
          });
          return json(201, breadcrumb, {
            ...warnings(breadcrumb),
            etag: etag(breadcrumb.version),
            location: `/v1/workspaces/${breadcrumb.workspace}/breadcrumbs/${breadcrumb.id}`,
            ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
          });
        },
        // Context views by default, like `GET …/{id}`: a default read never hands out what llm_hints exclude.
        GET: async (req, p) => {
          const ws = workspace(p);
          const view = listView(req.query.view);
          const schemaName = req.query.schema_name
            ? queryParam(SchemaNameSchema, req.query.schema_name, 'schema_name')
            : undefined;
          const tag = req.query.tag ? queryParam(TagSchema, req.query.tag, 'tag') : undefined;
          const page = await store.list({
            workspace: ws,
            ...(schemaName !== undefined ? { schema_name: schemaName } : {}),
            ...(tag !== undefined ? { tag } : {}),
            limit: pageLimit(req.query.limit),
            ...(req.query.cursor ? { cursor: req.query.cursor } : {}),
          });
          return json(200, await pageIn(view, store, ws, page));
        },
      },
    },
    // Before `/breadcrumbs/{id}`: "search" is not an id.
    ...(deps.vectorSearch
      ? [
          {
            template: `${crumbs}/search`,
            pattern: SEARCH_ROUTE,
            methods: { GET: createSearchHandler(deps.vectorSearch) },
          },
        ]
      : []),
    {
      template: `${crumbs}/{id}`,
      pattern: new RegExp(`${base}/${id}$`),
      methods: {
        GET: async (req, p) => {
          if (listView(req.query.view) === 'context')
            return json(200, await store.getContextView(workspace(p), breadcrumbId(p)));
          const record = await store.get(workspace(p), breadcrumbId(p));
          return json(200, record, { etag: etag(record.version) });
        },
        // Create-or-replace with a chosen id: what `crumbs apply` uses so re-applying a file changes nothing new.
        PUT: async (req, p, caller) => {
          const id = parseOrThrow(BreadcrumbIdSchema, p.id, 'id');
          const expectedVersion = ifMatch(req);
          const input = parseOrThrow(CreateBreadcrumbSchema, parseJsonBody(req));
          await gated({
            op: 'replace',
            workspace: workspace(p),
            schema_name: input.schema_name,
            context: input.context,
            caller,
          });
          const before = await storedSchema(workspace(p), id);
          if (before !== undefined && before !== input.schema_name) {
            await gated({ op: 'replace', workspace: workspace(p), schema_name: before, caller });
          }
          // Create-or-replace; a PUT of what is already stored writes nothing (no version, no change event).
          const { breadcrumb, outcome } = await store.upsert(workspace(p), id, input, {
            principal: caller.principal,
            ...(expectedVersion !== undefined ? { expectedVersion } : {}),
            ...(req.headers['if-none-match'] === '*' ? { createOnly: true } : {}),
          });
          return json(outcome === 'created' ? 201 : 200, breadcrumb, {
            ...warnings(breadcrumb),
            etag: etag(breadcrumb.version),
          });
        },
        PATCH: async (req, p, caller) => {
          const expectedVersion = ifMatch(req);
          const patch = parseOrThrow(UpdateBreadcrumbSchema, parseJsonBody(req));
          const schemaName = await storedSchema(workspace(p), breadcrumbId(p));
          if (schemaName !== undefined) {
            await gated({
              op: 'update',
              workspace: workspace(p),
              schema_name: schemaName,
              ...(patch.context !== undefined ? { context: patch.context } : {}),
              caller,
            });
          }
          const updated = await store.update(workspace(p), breadcrumbId(p), patch, {
            principal: caller.principal,
            ...(expectedVersion !== undefined ? { expectedVersion } : {}),
          });
          return json(200, updated, { ...warnings(updated), etag: etag(updated.version) });
        },
        DELETE: async (req, p, caller) => {
          const expectedVersion = ifMatch(req);
          const schemaName = await storedSchema(workspace(p), breadcrumbId(p));
          if (schemaName !== undefined)
            await gated({ op: 'delete', workspace: workspace(p), schema_name: schemaName, caller });
          await store.delete(workspace(p), breadcrumbId(p), {
            principal: caller.principal,
            ...(expectedVersion !== undefined ? { expectedVersion } : {}),
          });
          return empty(204);
        },
      },
    },
    {
      template: `${crumbs}/{id}/full`,
      pattern: new RegExp(`${base}/${id}/full$`),
      methods: {
        GET: async (_req, p) => {
          const record = await store.get(workspace(p), breadcrumbId(p));
          return json(200, record, { etag: etag(record.version) });
        },
      },
    },
    {
      template: `${crumbs}/{id}/history`,
      pattern: new RegExp(`${base}/${id}/history$`),
      methods: {
        GET: async (req, p) => {
          const ws = workspace(p);
          const view = listView(req.query.view);
          const page = await store.history(ws, breadcrumbId(p), {
            limit: pageLimit(req.query.limit),
            ...(req.query.cursor ? { cursor: req.query.cursor } : {}),
          });
          return json(200, await pageIn(view, store, ws, page));
        },
      },
    },
    {
      template: `${crumbs}/{id}/versions/{n}`,
      pattern: new RegExp(`${base}/${id}/versions/(?<n>[^/]+)$`),
      methods: {
        GET: async (req, p) => {
          const view = listView(req.query.view);
          const n = Number(p.n);
          if (!Number.isInteger(n) || n < 1) {
            throw new BadRequestError('version must be a positive integer', [
              { path: 'version', message: `expected a positive integer, got "${p.n}"` },
            ]);
          }
          const record = await store.getVersion(workspace(p), breadcrumbId(p), n);
          if (view === 'full') return json(200, record);
          const [contextView] = await store.contextViews(workspace(p), [record]);
          return json(200, contextView);
        },
      },
    },
    ...(deps.activity ? activityRoutes(deps.activity) : []),
    ...(deps.usage ? usageRoutes(deps.usage, store) : []),
    ...runRoutes({ store }, { parseJsonBody, optionalJsonBody, pageLimit }),
    ...approvalRoutes(store, { parseJsonBody }),
    ...requestRoutes(store, { optionalJsonBody }, deps.streaming),
    ...(deps.workspaces ? workspaceRoutes(deps.workspaces) : []),
    ...(deps.roomRoutes ?? []),
    ...(deps.attachments ? attachmentRoutes(deps.attachments) : []),
    ...(deps.rooms ?? []).flatMap((room) => room.routes ?? []),
  ];

  const api = async (request: HttpRequest): Promise<HttpResult> => {
    try {
      const { route, params } = match(routes, request.path);
      const handler = route.methods[request.method];
      if (!handler) {
        const allow = Object.keys(route.methods);
        throw new MethodNotAllowedError(`${request.method} is not supported on ${request.path}`, allow);
      }
      if (route.public) return await handler(request, params, { principal: 'anonymous', workspaces: [] });
      const caller = request.caller;
      if (!caller) throw new UnauthorizedError('missing or invalid bearer token');
      if (params.ws !== undefined && caller.workspaces !== '*' && !caller.workspaces.includes(params.ws)) {
        throw new ForbiddenError(
          `you may not use workspace ${params.ws}${caller.claimProblem ? `: ${caller.claimProblem}` : ''}`,
        );
      }
      if (params.ws !== undefined && deps.requestRate) await deps.requestRate.admit(params.ws);
      return await handler(request, params, caller);
    } catch (error) {
      if (isCrumbsError(error)) return problem(error);
      deps.onUnexpectedError?.(error, request);
      return internalProblem();
    }
  };
  return Object.assign(api, {
    routes: routes.map((r) => ({
      template: r.template,
      methods: Object.keys(r.methods),
      public: r.public === true,
    })),
  });
}

function match(routes: Route[], path: string): { route: Route; params: Params } {
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (m) {
      const params: Params = {};
      for (const [k, v] of Object.entries(m.groups ?? {})) params[k] = safeDecode(v);
      return { route, params };
    }
  }
  throw new NotFoundError(`no route for ${path}`);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new BadRequestError(`the path segment "${segment}" is not valid URL encoding`, [
      { path: 'path', message: `"${segment}" is not valid percent-encoded UTF-8` },
    ]);
  }
}

function workspace(p: Params): string {
  return parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
}

function breadcrumbId(p: Params): string {
  const result = BreadcrumbIdSchema.safeParse(p.id);
  // An id that cannot exist is simply not found (ids are never user-chosen through the API).
  if (!result.success) throw new NotFoundError(`no breadcrumb ${p.id}`);
  return result.data;
}

function parseJsonBody(req: HttpRequest): unknown {
  const type = req.headers['content-type'];
  if (type !== undefined && !/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw new UnsupportedMediaTypeError(`expected Content-Type application/json, got ${type}`);
  }
  const body = req.body ?? '';
  if (Buffer.byteLength(body, 'utf8') > LIMITS.maxBodyBytes) {
    throw new PayloadTooLargeError(
      `the body is larger than ${LIMITS.maxBodyBytes / 1024 / 1024} MB (a Lambda request's limit): store large files as attachments (POST …/attachments/uploads)`,
    );
  }
  if (body.trim() === '')
    throw new BadRequestError('expected a JSON body', [{ path: '', message: 'the body is empty' }]);
  try {
    return JSON.parse(body);
  } catch (error) {
    throw new BadRequestError('the body is not valid JSON', [
      { path: '', message: (error as Error).message },
    ]);
  }
}

/** A JSON body when there is one (a POST that may have no body); undefined for an empty body. */
function optionalJsonBody(req: HttpRequest): unknown {
  if ((req.body ?? '').trim() === '') return undefined;
  return parseJsonBody(req);
}

function ifMatch(req: HttpRequest): number | undefined {
  const raw = req.headers['if-match'];
  if (raw === undefined) return undefined;
  const m = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(raw);
  if (!m) {
    throw new BadRequestError('If-Match must be a version number', [
      { path: 'If-Match', message: `expected a version like 3 or "3", got ${raw}` },
    ]);
  }
  return Number(m[1]);
}

/** A page of records as the caller asked for it: stored (`?view=full`) or, by default, as context views. */
async function pageIn<
  P extends { items: Breadcrumb[]; next_cursor?: string | null | undefined; read_bound?: ReadBoundHit },
>(
  view: (typeof VIEWS)[number],
  store: BreadcrumbStore,
  ws: string,
  page: P,
): Promise<P | { items: ContextView[]; next_cursor: P['next_cursor']; read_bound?: ReadBoundHit }> {
  if (view === 'full') return page;
  return {
    items: await store.contextViews(ws, page.items),
    next_cursor: page.next_cursor,
    // A listing that stopped at its read bound says so, whatever the view.
    ...(page.read_bound !== undefined ? { read_bound: page.read_bound } : {}),
  };
}

function listView(raw: string | undefined): (typeof VIEWS)[number] {
  if (raw === undefined || raw === '') return 'context';
  if (!(VIEWS as readonly string[]).includes(raw)) {
    throw new BadRequestError('view is not valid', [
      { path: 'view', message: `expected "context" (the default) or "full", got ${JSON.stringify(raw)}` },
    ]);
  }
  return raw as (typeof VIEWS)[number];
}

/** A query parameter checked with a field schema: a bad one is a 400 naming the parameter. */
function queryParam<S extends z.ZodMiniType>(schema: S, raw: string, name: string): z.output<S> {
  const result = schema.safeParse(raw);
  if (!result.success) {
    throw new BadRequestError(`${name} is not valid`, toFieldIssues(result.error, name));
  }
  return result.data;
}

function pageLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PAGE_LIMIT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_LIMIT) {
    throw new BadRequestError('limit is not valid', [
      { path: 'limit', message: `expected an integer from 1 to ${MAX_PAGE_LIMIT}, got ${raw}` },
    ]);
  }
  return n;
}

function etag(version: number): string {
  return `"${version}"`;
}
