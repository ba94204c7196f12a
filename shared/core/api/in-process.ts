/**
 * The crumbs API called in process, as a given caller: how the protocol servers (MCP `shared/core/mcp/`, A2A
 * `shared/core/a2a/`) read and write, so every breadcrumb they touch goes through the API's own checks and
 * workspace scoping, and they reach what the caller's token reaches and nothing more.
 *
 * Also the wait for a request's answer those servers share: a look for a breadcrumb of the answer's schemas tagged
 * `request:<id>`, again after pauses that grow from `poll.first` to `poll.max`, until `withinMs` or the function's
 * remaining time (less a margin to answer in) is spent.
 */
import { requestTag } from '#shared/domain/protocol.ts';
import type { Caller, HttpRequest, HttpResult } from './http.ts';

export interface ApiAnswer {
  status: number;
  body: unknown;
}

/** `method`, a path under `/v1/workspaces/{ws}/`, a query and a JSON body. */
export type WorkspaceApi = (
  method: string,
  path: string,
  options?: { query?: Record<string, string>; body?: unknown },
) => Promise<ApiAnswer>;

export function workspaceApi(
  api: (request: HttpRequest) => Promise<HttpResult>,
  call: { workspace: string; caller: Caller; remainingMs?: (() => number) | undefined },
): WorkspaceApi {
  return async (method, path, options = {}) => {
    const result = await api({
      method,
      path: `/v1/workspaces/${encodeURIComponent(call.workspace)}/${path}`,
      headers: options.body !== undefined ? { 'content-type': 'application/json' } : {},
      query: options.query ?? {},
      body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
      caller: call.caller,
      ...(call.remainingMs ? { remainingMs: call.remainingMs } : {}),
    });
    let body: unknown;
    try {
      body = result.body ? JSON.parse(String(result.body)) : undefined;
    } catch {
      body = result.body;
    }
    return { status: result.statusCode, body };
  };
}

export function isOk(answer: ApiAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** An API refusal as one line: the status, the problem's title and detail, and each field error. */
export function problemText(answer: ApiAnswer): string {
  const body = answer.body;
  const p = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as {
    title?: string;
    detail?: string;
    errors?: { path?: string; message?: string }[];
  };
  const fields = Array.isArray(p.errors)
    ? p.errors.map((e) => `${e.path ?? ''}: ${e.message ?? ''}`).join('; ')
    : '';
  return [`${answer.status} ${p.title ?? 'error'}`, p.detail, fields].filter(Boolean).join(': ');
}

/** Full records of one schema, newest first, at most `pages` pages of 100 (a workspace's definitions, say). */
export async function listFull<T = { id: string; version: number; context: Record<string, unknown> }>(
  api: WorkspaceApi,
  schema: string,
  pages: number,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < pages; page++) {
    const answer = await api('GET', 'breadcrumbs', {
      query: { schema_name: schema, view: 'full', limit: '100', ...(cursor ? { cursor } : {}) },
    });
    if (!isOk(answer)) break;
    const body = answer.body as { items: T[]; next_cursor: string | null };
    out.push(...body.items);
    if (!body.next_cursor) break;
    cursor = body.next_cursor;
  }
  return out;
}

/** A stored answer as the servers read it (the full record). */
export interface AnswerRecord {
  id: string;
  schema_name: string;
  created_by?: string;
  created_at?: string;
  updated_at?: string;
  tags?: string[];
  context: Record<string, unknown>;
}

/** The answer to request `id`: the newest breadcrumb of one of `schemas` tagged `request:<id>`, if any. */
export async function findAnswer(
  api: WorkspaceApi,
  id: string,
  schemas: readonly string[],
): Promise<AnswerRecord | undefined> {
  for (const schema of schemas) {
    const page = await api('GET', 'breadcrumbs', {
      query: { schema_name: schema, tag: requestTag(id), limit: '1', view: 'full' },
    });
    if (!isOk(page)) continue;
    const item = (page.body as { items: AnswerRecord[] }).items[0];
    if (item !== undefined) return item;
  }
  return undefined;
}

/** Time kept for answering after the wait, out of the function's remaining time. */
const ANSWER_MARGIN_MS = 2_500;

/** The answer to request `id` once it is stored, or undefined when the wait is spent first. */
export async function waitForAnswer(
  api: WorkspaceApi,
  id: string,
  schemas: readonly string[],
  wait: { withinMs: number; remainingMs?: (() => number) | undefined; poll: { first: number; max: number } },
): Promise<AnswerRecord | undefined> {
  const remaining = wait.remainingMs?.() ?? Number.POSITIVE_INFINITY;
  const deadline = Date.now() + Math.min(wait.withinMs, remaining - ANSWER_MARGIN_MS);
  let pause = wait.poll.first;
  for (;;) {
    const found = await findAnswer(api, id, schemas);
    if (found !== undefined) return found;
    if (Date.now() + pause > deadline) return undefined;
    await new Promise((r) => setTimeout(r, pause));
    pause = Math.min(wait.poll.max, Math.ceil(pause * 1.5));
  }
}

/**
 * Stops the work of a request the caller wrote, as far as anything watches for it, through the API: a streaming
 * request (`stream_id`) by `POST …/requests/{id}/cancel` (its model call looks for the cancel between deltas), an
 * orchestrated one by cancelling its run (`runId`). `unstoppable` when nothing would notice: a tool request, an
 * agent request that neither streams nor orchestrates. What both protocol servers' cancels do (A2A `CancelTask`,
 * MCP `notifications/cancelled`).
 */
export async function stopRequest(
  api: WorkspaceApi,
  request: { id: string; context: Record<string, unknown> },
  reason: string,
  runId: string | undefined,
): Promise<{ stopped: true } | { unstoppable: true } | { refused: ApiAnswer }> {
  let sent: ApiAnswer;
  if (typeof request.context.stream_id === 'string' && request.context.orchestrate !== true) {
    sent = await api('POST', `requests/${encodeURIComponent(request.id)}/cancel`, {
      body: { reason: reason.slice(0, 500) || 'cancelled' },
    });
  } else if (runId !== undefined) {
    sent = await api('POST', `runs/${encodeURIComponent(runId)}/cancel`);
  } else {
    return { unstoppable: true };
  }
  return isOk(sent) ? { stopped: true } : { refused: sent };
}
