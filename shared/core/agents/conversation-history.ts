/**
 * What a plan or a build in a conversation knows of it (seed 004, flow 1, step 4: "fetches context from sources —
 * plans, deliverables, history"): the conversation's earlier plans, deliverables and answers (what agents wrote
 * tagged `conversation:<id>`) and the messages that asked for them, newest first, as one prompt section. The prompt
 * budget fits it after the agent's own context, so that context wins and a cut keeps the most recent exchanges.
 * Reads are bounded: one tag listing of HISTORY_ENTRIES and the breadcrumbs that asked (`trigger_id`; context
 * views, so llm_hints hide what they hide everywhere else); only the conversation's own workspace is read.
 */
import { createHash } from 'node:crypto';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import {
  AGENT_DELIVERABLE_SCHEMA,
  AGENT_PLAN_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { asObject } from './context/fields.ts';
import type { AgentTask } from './contract.ts';

/** How many of the conversation's breadcrumbs a plan or build reads (the newest). */
export const HISTORY_ENTRIES = 20;

/** The tag of a conversation's artifacts and answers (a long id is hashed to keep the tag within limits). */
export function conversationTag(conversationId: string): string {
  const tag = `conversation:${conversationId}`;
  return tag.length <= 128
    ? tag
    : `conversation:${createHash('sha256').update(conversationId).digest('hex')}`;
}

/** The conversation's history as a prompt section's text, or undefined (no conversation named, or nothing yet). */
export async function conversationHistory(
  store: Pick<BreadcrumbStore, 'list' | 'contextViews' | 'getContextView'>,
  workspace: string,
  task: Pick<AgentTask, 'conversationId' | 'requestId'>,
): Promise<string | undefined> {
  if (task.conversationId === undefined) return undefined;
  const page = await store.list({
    workspace,
    tag: conversationTag(task.conversationId),
    limit: HISTORY_ENTRIES,
  });
  const earlier = page.items.filter((r) => requestOf(r) !== task.requestId);
  if (earlier.length === 0) return undefined;
  const views = await store.contextViews(workspace, earlier);
  // One block per request, newest first; a request's artifacts under it.
  const byRequest = new Map<string, string[]>();
  const askedBy = new Map<string, string>();
  earlier.forEach((record, i) => {
    const context = asObject(views[i]?.context);
    const line = describe(record, context);
    const request = requestOf(record) ?? record.id;
    const trigger = asObject(record.context).trigger_id;
    if (typeof trigger === 'string') askedBy.set(request, trigger);
    if (line !== undefined) byRequest.set(request, [...(byRequest.get(request) ?? []), line]);
  });
  if (byRequest.size === 0) return undefined;
  const messages = await Promise.all(
    [...byRequest.keys()].map((id) => messageOf(store, workspace, askedBy.get(id) ?? id)),
  );
  const blocks = [...byRequest.entries()].map(([id, lines], i) =>
    [`### request ${id}`, ...(messages[i] !== undefined ? [`user: ${messages[i]}`] : []), ...lines].join(
      '\n',
    ),
  );
  return `Earlier in this conversation (${task.conversationId}), newest first:\n\n${blocks.join('\n\n')}`;
}

function requestOf(record: Breadcrumb): string | undefined {
  const id = asObject(record.context).request_id;
  return typeof id === 'string' ? id : undefined;
}

/** One line for an artifact or answer; plan and build answers are left out (their artifact says it). */
function describe(record: Breadcrumb, context: Record<string, unknown>): string | undefined {
  const by = typeof context.agent_id === 'string' ? context.agent_id : record.created_by;
  if (record.schema_name === AGENT_PLAN_SCHEMA) return `plan by ${by}: ${text(context.plan)}`;
  if (record.schema_name === AGENT_DELIVERABLE_SCHEMA) {
    return `deliverable ${String(context.type ?? '')} (v${record.version}) by ${by}: ${text(context.content)}`;
  }
  if (record.schema_name === AGENT_RESPONSE_SCHEMA) {
    if (context.mode === 'plan' || context.mode === 'build') return undefined;
    return `${by} answered: ${text(context.message ?? context.text ?? context.output)}`;
  }
  return undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
}

/** The message of the request an entry answers, as its context view shows it; undefined when it is gone. */
async function messageOf(
  store: Pick<BreadcrumbStore, 'getContextView'>,
  workspace: string,
  id: string,
): Promise<string | undefined> {
  try {
    const view = asObject((await store.getContextView(workspace, id)).context);
    const message = view.message ?? view.user_message ?? view.text;
    return typeof message === 'string' ? message : undefined;
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}
