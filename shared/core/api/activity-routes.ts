/**
 * Routes for watching a workspace (what the dashboard and `crumbs trace` / `crumbs tail` read):
 *
 *   GET …/threads/{id}                       a thread's causal tree (id: the thread, or any breadcrumb in it)
 *   GET …/changes                            server-sent events of changes, long-polled (changes.ts)
 *   GET …/changes/channel                    where the same changes are pushed (the change channel), or 404
 *   GET …/definitions                        every definition with its rule state (the rule manager's status)
 *   GET …/definitions/{id}/explain?breadcrumb=  whether the breadcrumb triggers the definition, and why (not)
 *   GET …/errors                             error answers, loop stops and dead-letter answers, newest first
 *
 * Every route is behind the same authorization as the breadcrumb routes (api.ts).
 */

import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { BreadcrumbIdSchema, parseOrThrow, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { isCrumbsStatus } from '#shared/domain/definition-status.ts';
import { definitionPrincipal, parseDefinition, triggerSelectors } from '#shared/domain/definitions.ts';
import { BadRequestError, type FieldIssue, NotFoundError, ValidationError } from '#shared/domain/errors.ts';
import { errorText, outcomeOf } from '#shared/domain/outcome.ts';
import {
  AGENT_ERROR_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  CONTEXT_ERROR_SCHEMA,
  LOOP_STOPPED_SCHEMA,
  STATUS_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  WORKFLOW_ERROR_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { Selector } from '#shared/domain/selector.ts';
import type { ChangeLog, ThreadIndex } from '#shared/ports/activity.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import {
  explainTrigger,
  type SelectorExplanation,
  type TriggerExplanation,
} from '#shared/routing/explain.ts';
import { DEFINITION_SCHEMAS } from '#shared/topology.ts';
import { decodeCursor, encodeCursor, MAX_BACKLOG, readChanges, toEventStream } from '../stream/changes.ts';
import { loadThread, resolveThread } from '../stream/threads.ts';
import { changesChannelFor } from '../streaming/channel.ts';
import type { StreamingEndpoints } from '../streaming/endpoints.ts';
import { type Caller, type HttpRequest, type HttpResult, json } from './http.ts';

export interface ActivityDeps {
  store: BreadcrumbStore;
  threads: ThreadIndex;
  changes: ChangeLog;
  /** Change stream timing (changes.ts): the longest wait per request, the settle lag and the poll interval. */
  stream: { maxWaitMs: number; settleMs: number; pollMs: number };
  /**
   * The channels API, whose `changes` namespace the publisher sends every change's summary to; absent:
   * `GET …/changes/channel` answers 404 and clients long-poll `…/changes`.
   */
  channels?: StreamingEndpoints | undefined;
}

/** Where a workspace's changes are pushed (`GET …/changes/channel`): subscribe there, read `…/changes` to catch up. */
export interface ChangeChannelInfo {
  /** The AppSync Events channel (`/changes/<workspace segments>`). */
  channel: string;
  /** `wss://…/event/realtime` (locally `ws://127.0.0.1:<port>/event/realtime`). */
  realtime_url: string;
  /** The host a subscription's authorization names. */
  http_host: string;
}

type Params = Record<string, string>;
export interface ActivityRoute {
  /** The path with `{param}` placeholders, as the README's route table writes it. */
  template: string;
  pattern: RegExp;
  methods: Partial<Record<string, (req: HttpRequest, p: Params, caller: Caller) => Promise<HttpResult>>>;
}

const ERROR_SCHEMAS = [AGENT_ERROR_SCHEMA, CONTEXT_ERROR_SCHEMA, WORKFLOW_ERROR_SCHEMA, LOOP_STOPPED_SCHEMA];
/** Answers whose `status` says whether they failed. */
const STATUS_SCHEMAS = [TOOL_RESPONSE_SCHEMA, AGENT_RESPONSE_SCHEMA];
/** Time a request keeps for answering after its wait, out of the Lambda's remaining time. */
const ANSWER_MARGIN_MS = 2500;

export function activityRoutes(deps: ActivityDeps): ActivityRoute[] {
  const base = '^/v1/workspaces/(?<ws>[^/]+)';
  return [
    {
      template: '/v1/workspaces/{ws}/threads/{id}',
      pattern: new RegExp(`${base}/threads/(?<id>[^/]+)$`),
      methods: {
        GET: async (_req, p) => {
          const ws = workspace(p);
          const id = someId(p.id);
          return json(200, await loadThread(deps.threads, ws, await resolveThread(deps.threads, ws, id)));
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/changes',
      pattern: new RegExp(`${base}/changes$`),
      methods: { GET: (req, p) => changes(deps, req, workspace(p)) },
    },
    {
      template: '/v1/workspaces/{ws}/changes/channel',
      pattern: new RegExp(`${base}/changes/channel$`),
      methods: {
        GET: async (_req, p) => {
          const ws = workspace(p);
          if (deps.channels === undefined) {
            throw new NotFoundError('this stack pushes no changes: follow GET …/changes (long-polled)');
          }
          const info: ChangeChannelInfo = {
            channel: changesChannelFor(ws),
            realtime_url: deps.channels.realtime_url,
            http_host: deps.channels.http_host,
          };
          return json(200, info);
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/definitions',
      pattern: new RegExp(`${base}/definitions$`),
      methods: { GET: async (_req, p) => json(200, { items: await definitions(deps.store, workspace(p)) }) },
    },
    {
      template: '/v1/workspaces/{ws}/definitions/{id}/explain',
      pattern: new RegExp(`${base}/definitions/(?<id>[^/]+)/explain$`),
      methods: {
        GET: async (req, p) => {
          const ws = workspace(p);
          const breadcrumbId = req.query.breadcrumb;
          if (!breadcrumbId) {
            throw new BadRequestError('explain needs a breadcrumb', [
              { path: 'breadcrumb', message: 'give ?breadcrumb=<id> of the breadcrumb to explain' },
            ]);
          }
          const [definition, breadcrumb, status] = await Promise.all([
            deps.store.get(ws, someId(p.id)),
            deps.store.get(ws, someId(breadcrumbId)),
            ruleStatus(deps.store, ws, someId(p.id)),
          ]);
          const answer: Explanation = { ...explain(definition, breadcrumb), rule: status };
          return json(200, answer);
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/errors',
      pattern: new RegExp(`${base}/errors$`),
      methods: {
        GET: async (req, p) =>
          json(200, { items: await failures(deps.store, workspace(p), limitOf(req.query.limit)) }),
      },
    },
  ];
}

async function changes(deps: ActivityDeps, req: HttpRequest, ws: string): Promise<HttpResult> {
  const q = req.query;
  const resumeFrom = req.headers['last-event-id'] || q.last_event_id;
  const backlog = q.backlog === undefined ? 0 : intParam('backlog', q.backlog, 0, MAX_BACKLOG);
  const waitSeconds = q.wait === undefined ? deps.stream.maxWaitMs / 1000 : intParam('wait', q.wait, 0, 25);
  const remaining = req.remainingMs?.() ?? Number.POSITIVE_INFINITY;
  const waitMs = Math.max(
    0,
    Math.min(waitSeconds * 1000, deps.stream.maxWaitMs, remaining - ANSWER_MARGIN_MS),
  );
  if (q.view !== undefined && q.view !== 'summary' && q.view !== 'full') {
    throw new BadRequestError('view is not valid', [
      { path: 'view', message: 'expected "summary" or "full"' },
    ]);
  }
  const batch = await readChanges(deps.changes, {
    workspace: ws,
    ...(resumeFrom ? { cursor: decodeCursor(deps.changes, resumeFrom) } : {}),
    backlog,
    filters: {
      ...(q.schema_name ? { schema_name: q.schema_name.split(',') } : {}),
      ...(q.tag ? { tag: q.tag } : {}),
      ...(q.thread ? { thread: q.thread } : {}),
      ...(q.writer ? { writer: q.writer } : {}),
    },
    waitMs,
    settleMs: deps.stream.settleMs,
    pollMs: deps.stream.pollMs,
    ...(q.view === 'full'
      ? {
          full: async (workspace, entries) =>
            new Map(
              (await deps.threads.versions(workspace, entries)).map(
                (r) => [`${r.id}@${r.version}`, r] as const,
              ),
            ),
        }
      : {}),
  });
  return {
    statusCode: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' },
    // Reconnect at once: the wait happened on the server; an empty answer means nothing changed meanwhile.
    body: toEventStream(batch, encodeCursor, 250),
  };
}

export interface DefinitionSummary {
  id: string;
  schema_name: string;
  title: string;
  version: number;
  updated_at: string;
  updated_by: string;
  kind: string;
  /** `active` / `invalid` from the rule manager, `pending` until it has judged this version. */
  state: string;
  status_version: number | null;
  errors: FieldIssue[];
  rule_name: string | null;
  /** The bus of the pool holding the rule (`topology.bus.pool`); null without a rule. */
  event_bus: string | null;
  pattern: unknown;
  pattern_hash: string | null;
}

async function definitions(store: BreadcrumbStore, ws: string): Promise<DefinitionSummary[]> {
  const [defs, statuses] = await Promise.all([
    Promise.all(Object.keys(DEFINITION_SCHEMAS).map((schema) => listAll(store, ws, schema))),
    listAll(store, ws, STATUS_SCHEMA),
  ]);
  const byDefinition = new Map(
    statuses.filter(isCrumbsStatus).map((s) => [String(s.context.definition_id), s.context] as const),
  );
  return defs
    .flat()
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((d) => {
      const s = byDefinition.get(d.id);
      const statusVersion = typeof s?.definition_version === 'number' ? s.definition_version : null;
      return {
        id: d.id,
        schema_name: d.schema_name,
        title: d.title,
        version: d.version,
        updated_at: d.updated_at,
        updated_by: d.updated_by,
        kind: DEFINITION_SCHEMAS[d.schema_name as keyof typeof DEFINITION_SCHEMAS],
        state: s && statusVersion === d.version ? String(s.state) : 'pending',
        status_version: statusVersion,
        // Only crumbs' own status is read (isCrumbsStatus), and the rule manager records its errors as FieldIssues.
        errors: Array.isArray(s?.errors) ? (s.errors as FieldIssue[]) : [],
        rule_name: typeof s?.rule_name === 'string' ? s.rule_name : null,
        event_bus: typeof s?.event_bus === 'string' && typeof s.rule_name === 'string' ? s.event_bus : null,
        pattern: s?.pattern ?? null,
        pattern_hash: typeof s?.pattern_hash === 'string' ? s.pattern_hash : null,
      };
    });
}

/** The rule the rule manager keeps for a definition, as its status records it. */
export interface RuleStatus {
  state: string;
  name: string | null;
  event_bus: string | null;
  definition_version: number;
}

/** What `GET …/definitions/{id}/explain` answers: each trigger selector judged, and the definition's rule. */
export interface Explanation extends TriggerExplanation {
  definition: string;
  breadcrumb: string;
  selectors: (SelectorExplanation & { selector: Selector | undefined })[];
  /** Null before the rule manager has judged the definition. */
  rule: RuleStatus | null;
}

/** The rule the rule manager keeps for a definition (null before it has one). */
async function ruleStatus(
  store: BreadcrumbStore,
  ws: string,
  definitionId: string,
): Promise<RuleStatus | null> {
  const page = await store.list({ workspace: ws, tag: `definition:${definitionId}`, limit: 10 });
  const s = page.items.find((b) => b.schema_name === STATUS_SCHEMA && isCrumbsStatus(b))?.context;
  if (!s) return null;
  const name = typeof s.rule_name === 'string' ? s.rule_name : null;
  return {
    state: String(s.state),
    name,
    event_bus: name !== null && typeof s.event_bus === 'string' ? s.event_bus : null,
    definition_version: Number(s.definition_version),
  };
}

/** Up to 500 of a schema: a workspace's definitions, not a scan of its data. */
async function listAll(store: BreadcrumbStore, ws: string, schema: string): Promise<Breadcrumb[]> {
  const out: Breadcrumb[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({
      workspace: ws,
      schema_name: schema,
      limit: 100,
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && out.length < 500);
  return out;
}

function explain(definition: Breadcrumb, breadcrumb: Breadcrumb): Omit<Explanation, 'rule'> {
  if (!(definition.schema_name in DEFINITION_SCHEMAS)) {
    throw new BadRequestError(`${definition.id} is a ${definition.schema_name}, not a definition`, [
      { path: 'id', message: `expected one of ${Object.keys(DEFINITION_SCHEMAS).join(', ')}` },
    ]);
  }
  let parsed: ReturnType<typeof parseDefinition>;
  try {
    parsed = parseDefinition(definition.schema_name, definition.context);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(
      error.issues.map((i) => ({ path: `definition.context.${i.path}`, message: i.message })),
      `${definition.id} is not a valid definition, so no rule runs it`,
    );
  }
  const selectors = triggerSelectors(parsed.kind, parsed.definition as never);
  const result = explainTrigger({
    workspace: definition.workspace,
    principal: definitionPrincipal(parsed.kind, parsed.definition as never),
    selectors,
    breadcrumb,
  });
  return {
    definition: definition.id,
    breadcrumb: breadcrumb.id,
    ...result,
    selectors: result.selectors.map((s) => ({ ...s, selector: selectors[s.index] })),
  };
}

export interface FailureSummary {
  id: string;
  schema_name: string;
  title: string;
  at: string;
  writer: string;
  thread: string;
  outcome: string;
  error: string | null;
  /** Answered by the DLQ handler: every delivery of the trigger failed. */
  dead_letter: boolean;
}

async function failures(store: BreadcrumbStore, ws: string, limit: number): Promise<FailureSummary[]> {
  const pages = await Promise.all([
    ...ERROR_SCHEMAS.map((schema) => store.list({ workspace: ws, schema_name: schema, limit })),
    ...STATUS_SCHEMAS.map((schema) => store.list({ workspace: ws, schema_name: schema, limit: 100 })),
  ]);
  return pages
    .flatMap((p) => p.items)
    .filter((b) => outcomeOf({ schema_name: b.schema_name, status: stringOr(b.context.status) }) !== 'ok')
    .sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0))
    .slice(0, limit)
    .map((b) => {
      const error = errorText(b.context) ?? null;
      return {
        id: b.id,
        schema_name: b.schema_name,
        title: b.title,
        at: b.updated_at,
        writer: b.updated_by,
        thread: b.causation?.thread ?? b.id,
        outcome: outcomeOf({ schema_name: b.schema_name, status: stringOr(b.context.status) }),
        error,
        // The DLQ handler's answers say so (shared/core/executor/dlq.ts).
        dead_letter: error?.includes('dead-letter queue') ?? false,
      };
    });
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function workspace(p: Params): string {
  return parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
}

function someId(raw: string | undefined): string {
  const result = BreadcrumbIdSchema.safeParse(raw);
  if (!result.success) throw new NotFoundError(`no breadcrumb ${raw}`);
  return result.data;
}

function limitOf(raw: string | undefined): number {
  return raw === undefined ? 50 : intParam('limit', raw, 1, 100);
}

function intParam(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw new BadRequestError(`${name} is not valid`, [
      { path: name, message: `expected an integer from ${min} to ${max}, got ${raw}` },
    ]);
  }
  return n;
}
