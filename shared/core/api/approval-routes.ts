/**
 * Approvals of agents' tool calls over HTTP (`#shared/domain/tool-approval.ts`). Behind the API's workspace
 * authorization (api.ts), whose callers are people (`user:<sub>`): the route writes the person's response, the
 * agent decides it (`shared/core/agents/context/approvals.ts`).
 *
 *   GET  …/approvals?status=pending|all&run=&agent=&limit=   → `ApprovalList`, newest first
 *   GET  …/approvals/{id}                                     → `ApprovalItem`
 *   POST …/approvals/{id}  { decision, arguments?, reason? }  → 202 `ApprovalAnswer`, writes `human.response.v1`
 *
 * Checks before the write (each changes nothing): an approval of that id (404); still pending (409, naming who
 * decided it) and not past its expiry (409 "expired"); a rejection takes no arguments (400); edited arguments fit
 * the tool's input schema (400 naming each field). The response's id is the approval's (`<id>.response`), so two
 * answers at once write one response: the second is told who answered (409), the same answer again is a replay.
 */

import { dataChecks } from '#shared/adapters/checks/checks.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { isPerson, parseOrThrow, toFieldIssues, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  isRetriable,
  NotFoundError,
} from '#shared/domain/errors.ts';
import {
  HUMAN_REQUEST_SCHEMA,
  HUMAN_RESPONSE_SCHEMA,
  REPLY_TO_TAG_PREFIX,
  requestTag,
} from '#shared/domain/protocol.ts';
import {
  APPROVAL_KIND,
  APPROVAL_TAG,
  ApprovalDecisionSchema,
  type ApprovalStatus,
  isApprovalId,
  isExpired,
  type ToolApproval,
} from '#shared/domain/tool-approval.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { type Caller, type HttpRequest, type HttpResult, json } from './http.ts';

/** Approvals a listing reads at most (pages of 100): pending ones are the newest, decided ones fall behind. */
const MAX_SCANNED = 500;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/** One approval as the API shows it (`status` says `expired` once its expiry passed, even before the timer). */
export interface ApprovalItem {
  approval_id: string;
  agent_id: string;
  tool: string;
  arguments: unknown;
  reason: string;
  prompt: string;
  status: ApprovalStatus;
  thread: string;
  round: number;
  created_at: string;
  expires_at?: string;
  input_schema?: Record<string, unknown>;
  run_id?: string;
  step?: string;
  decided_by?: string;
  decided_at?: string;
  decision_reason?: string;
  edited?: boolean;
}

export interface ApprovalList {
  workspace: string;
  items: ApprovalItem[];
  /** Pending approvals among those read (what the dashboard's navigation counts). */
  pending: number;
  /** More approvals than a listing reads: the oldest were not looked at. */
  truncated: boolean;
}

export interface ApprovalAnswer {
  approval_id: string;
  decision: 'approve' | 'reject';
  response_id: string;
}

export interface ApprovalRouteHelpers {
  parseJsonBody(req: HttpRequest): unknown;
}

export function approvalRoutes(
  store: BreadcrumbStore,
  helpers: ApprovalRouteHelpers,
  now = () => new Date(),
) {
  const base = '^/v1/workspaces/(?<ws>[^/]+)/approvals';
  const ws = (p: Record<string, string>) => parseOrThrow(WorkspaceSchema, p.ws, 'workspace');

  async function mustRead(workspace: string, id: string): Promise<Breadcrumb> {
    const missing = new NotFoundError(`no approval ${id} in workspace ${workspace}`);
    if (!isApprovalId(id)) throw missing;
    try {
      const record = await store.get(workspace, id);
      if (!isApprovalRecord(record)) throw missing;
      return record;
    } catch (error) {
      if (error instanceof NotFoundError) throw missing;
      throw error;
    }
  }

  return [
    {
      template: '/v1/workspaces/{ws}/approvals',
      pattern: new RegExp(`${base}$`),
      methods: {
        GET: async (req: HttpRequest, p: Record<string, string>): Promise<HttpResult> =>
          json(200, await listApprovals(store, ws(p), req.query, now())),
      },
    },
    {
      template: '/v1/workspaces/{ws}/approvals/{id}',
      pattern: new RegExp(`${base}/(?<id>[^/]+)$`),
      methods: {
        GET: async (_req: HttpRequest, p: Record<string, string>): Promise<HttpResult> =>
          json(200, itemOf(await mustRead(ws(p), p.id ?? ''), now())),
        POST: async (req: HttpRequest, p: Record<string, string>, caller: Caller): Promise<HttpResult> => {
          const workspace = ws(p);
          if (!isPerson(caller.principal)) {
            throw new ForbiddenError(`only a person answers an approval; ${caller.principal} is not one`);
          }
          const parsed = ApprovalDecisionSchema.safeParse(helpers.parseJsonBody(req));
          if (!parsed.success) {
            throw new BadRequestError('the answer is not valid', toFieldIssues(parsed.error));
          }
          const body = parsed.data;
          const record = await mustRead(workspace, p.id ?? '');
          const item = itemOf(record, now());
          if (item.status === 'expired') {
            throw new ConflictError(
              `approval ${item.approval_id} expired at ${item.expires_at}; it was rejected`,
            );
          }
          if (item.status !== 'pending') {
            throw new ConflictError(
              `approval ${item.approval_id} is already ${item.status} (by ${item.decided_by ?? 'someone'})`,
            );
          }
          if (body.decision === 'reject' && body.arguments !== undefined) {
            throw new BadRequestError('a rejection takes no arguments', [
              { path: 'arguments', message: 'only approve takes edited arguments' },
            ]);
          }
          if (body.arguments !== undefined) await checkArguments(workspace, item, body.arguments);
          const context = {
            request_id: item.approval_id,
            decision: body.decision,
            ...(body.arguments !== undefined ? { arguments: body.arguments } : {}),
            ...(body.reason !== undefined ? { reason: body.reason } : {}),
          };
          const { breadcrumb, replayed } = await store.create(
            workspace,
            {
              schema_name: HUMAN_RESPONSE_SCHEMA,
              title: `${item.agent_id} › ${item.tool}: ${body.decision}`,
              // `reply-to:agent:<id>`: the agent's rule delivers it (its default trigger), compiled long before.
              tags: [`${REPLY_TO_TAG_PREFIX}agent:${item.agent_id}`, requestTag(item.approval_id)],
              context,
            },
            { principal: caller.principal, id: `${item.approval_id}.response` },
          );
          if (
            replayed &&
            (breadcrumb.created_by !== caller.principal ||
              JSON.stringify(breadcrumb.context) !== JSON.stringify(context))
          ) {
            throw new ConflictError(
              `approval ${item.approval_id} was already answered by ${breadcrumb.created_by} (${String(
                (breadcrumb.context as { decision?: unknown }).decision,
              )})`,
            );
          }
          const answer: ApprovalAnswer = {
            approval_id: item.approval_id,
            decision: body.decision,
            response_id: breadcrumb.id,
          };
          return json(202, answer);
        },
      },
    },
  ];
}

export async function listApprovals(
  store: BreadcrumbStore,
  workspace: string,
  query: Record<string, string | undefined>,
  now: Date,
): Promise<ApprovalList> {
  const status = query.status ?? 'pending';
  if (status !== 'pending' && status !== 'all') {
    throw new BadRequestError('status is not valid', [
      { path: 'status', message: 'expected pending or all' },
    ]);
  }
  const limit = query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new BadRequestError('limit is not valid', [
      { path: 'limit', message: `expected a whole number from 1 to ${MAX_LIMIT}` },
    ]);
  }
  const items: ApprovalItem[] = [];
  let pending = 0;
  let scanned = 0;
  let cursor: string | undefined;
  let truncated = false;
  for (;;) {
    const page = await store.list({
      workspace,
      schema_name: HUMAN_REQUEST_SCHEMA,
      tag: APPROVAL_TAG,
      limit: 100,
      ...(cursor !== undefined ? { cursor } : {}),
    });
    for (const record of page.items) {
      if (!isApprovalRecord(record)) continue;
      const item = itemOf(record, now);
      if (item.status === 'pending') pending++;
      if (query.run !== undefined && item.run_id !== query.run) continue;
      if (query.agent !== undefined && item.agent_id !== query.agent) continue;
      if (status === 'pending' && item.status !== 'pending') continue;
      if (items.length < limit) items.push(item);
    }
    scanned += page.items.length;
    if (page.next_cursor === null) break;
    if (scanned >= MAX_SCANNED) {
      truncated = true;
      break;
    }
    cursor = page.next_cursor;
  }
  return { workspace, items, pending, truncated };
}

/** An approval an agent wrote (only an agent's own approvals are ever decided: `approvals.ts`). */
function isApprovalRecord(record: Breadcrumb): boolean {
  const c = record.context as Partial<ToolApproval> | undefined;
  return (
    record.schema_name === HUMAN_REQUEST_SCHEMA &&
    c?.kind === APPROVAL_KIND &&
    typeof c.agent_id === 'string' &&
    record.created_by === `agent:${c.agent_id}`
  );
}

function itemOf(record: Breadcrumb, now: Date): ApprovalItem {
  const c = record.context as unknown as ToolApproval;
  const status: ApprovalStatus = c.status === 'pending' && isExpired(c, now) ? 'expired' : c.status;
  return {
    approval_id: record.id,
    agent_id: c.agent_id,
    tool: c.tool,
    arguments: c.arguments,
    reason: c.reason ?? '',
    prompt: c.prompt ?? '',
    status,
    thread: c.thread,
    round: c.round,
    created_at: record.created_at,
    ...(c.expires_at !== undefined ? { expires_at: c.expires_at } : {}),
    ...(c.input_schema !== undefined ? { input_schema: c.input_schema } : {}),
    ...(c.run_id !== undefined ? { run_id: c.run_id } : {}),
    ...(c.step !== undefined ? { step: c.step } : {}),
    ...(c.decided_by !== undefined ? { decided_by: c.decided_by } : {}),
    ...(c.decided_at !== undefined ? { decided_at: c.decided_at } : {}),
    ...(c.decision_reason !== undefined ? { decision_reason: c.decision_reason } : {}),
    ...(c.edited !== undefined ? { edited: c.edited } : {}),
  };
}

/**
 * Edited arguments against the tool's input schema, as the approval recorded it: a 400 naming each field. Checked in
 * the workspace's share of the data checks (off the event loop past a slice); a check past its budget is a 400 too.
 */
async function checkArguments(
  workspace: string,
  item: ApprovalItem,
  args: Record<string, unknown>,
): Promise<void> {
  if (item.input_schema === undefined) return;
  let issues: { path: string; message: string }[];
  try {
    issues = await dataChecks().validate(workspace, {
      cacheKey: `approval:${item.tool}:${JSON.stringify(item.input_schema)}`,
      schema: item.input_schema,
      what: `the ${item.tool} tool's input schema`,
      value: args,
      root: 'arguments',
    });
  } catch (error) {
    if (isRetriable(error)) throw error;
    issues = [{ path: 'arguments', message: error instanceof Error ? error.message : String(error) }];
  }
  if (issues.length > 0) {
    throw new BadRequestError(
      `the edited arguments do not fit the ${item.tool} tool's input schema: ${issues
        .map((i) => `${i.path}: ${i.message}`)
        .join('; ')}`,
      issues,
    );
  }
}
