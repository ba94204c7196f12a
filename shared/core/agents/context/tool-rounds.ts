/**
 * A context agent's tool rounds. The model asks for tools (native tool calling); each call becomes a
 * `tool.request.v1` `{tool, input, requestId, requestedBy, thread, round}` tagged `tool:request`,
 * `request:<requestId>`; the invocation then returns, never waiting. Where the turn's working state waits:
 * - a round of one call: in the request itself (`conversation`), so the state that changes within a second needs
 *   no record of its own; the response's causation names the request (`ownToolRequest`), which the continuation
 *   reads back by id. One request has one answer (a tool answers once per request version), so nothing else
 *   claims the continuation; an `agent.conversation.v1` already answered for this turn stops a late one;
 * - a round of several calls: in the `agent.conversation.v1` (one per agent × thread, upserted), which the
 *   response that finds every request answered (listed by tag `request:<id>`) claims with If-Match, so two
 *   responses arriving together continue once.
 * Either way the turn's `agent.conversation.v1` is written when it answers (`turn.ts`): its transcript, once per
 * turn. Such a response answers the agent's own request, so its rounds do not grow the hop count
 * (loop-guard.ts): `max_tool_rounds` is what bounds them.
 *
 * A call that needs a person's approval (`#shared/domain/tool-approval.ts`) is written as an approval
 * (`human.request.v1`) instead of a tool request; such a round always waits in the `agent.conversation.v1` (its
 * pending entry names the approval), and `approvals.ts` answers it: approve writes the tool request the round
 * would have written, reject the call's rejected result. A round without approvals writes exactly what it did.
 *
 * Only the agent's own tools (`toolSpecs`, the allow-list's rule): a call to a tool the agent was not given never
 * becomes a request. It is answered to the model at once as a failed result naming the tools it has, so the model
 * can recover; the refusal is counted (`refused_tool_calls`) and logged. A round whose every call was refused goes
 * straight back to the model, in the same invocation; it still counts as a round.
 */
import { createHash } from 'node:crypto';
import { givenToolNames, listToolDefinitions, type Refusal } from '#shared/core/executor/allow-list.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError, VersionConflictError } from '#shared/domain/errors.ts';
import { withoutUsageRecord } from '#shared/domain/llm-usage.ts';
import {
  AGENT_CONVERSATION_SCHEMA,
  HUMAN_REQUEST_SCHEMA,
  HUMAN_RESPONSE_SCHEMA,
  REPLY_TO_TAG_PREFIX,
  RUN_TAG_PREFIX,
  requestTag,
  STEP_TAG_PREFIX,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  threadTag,
} from '#shared/domain/protocol.ts';
import {
  APPROVAL_KIND,
  APPROVAL_TAG,
  type ApprovalPolicy,
  approvalIdFor,
  approvalPolicy,
  EXPIRED_REASON,
  expiryResponseId,
  MAX_REASON_CHARS,
  type ToolApproval,
} from '#shared/domain/tool-approval.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { LlmMessage, LlmResponse, LlmToolCall, LlmToolResult, LlmToolSpec } from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { OneTimeTimer } from '#shared/ports/timers.ts';
import type { ExecutionInput, OutputBreadcrumb, OwnRequestRef } from '../../executor/contract.ts';
import { asObject, stringField } from './fields.ts';
import type { TurnBudget } from './turn-budget.ts';

/** What `agent.conversation.v1` holds: enough to resume the turn in another invocation. */
export interface AgentConversation {
  agent_id: string;
  thread: string;
  model: string;
  system: string;
  messages: LlmMessage[];
  /** Tool rounds requested so far in this turn. */
  round: number;
  status: 'waiting-for-tools' | 'answered';
  /** `approval`: the call waits for a person's approval of that id before its tool request is written. */
  pending: { requestId: string; toolCallId: string; tool: string; approval?: string | undefined }[];
  /** Failed results for this round's calls to tools the agent was not given, answered with the round's results. */
  refused?: LlmToolResult[] | undefined;
  /** Calls to tools the agent was not given, over the whole turn. */
  refused_tool_calls?: number | undefined;
  /** Structured-output writes the agent may not make (allow-list.ts), over the whole turn; never written. */
  refused_writes?: Refusal[] | undefined;
  /** Whether this turn's refused writes were already sent back to the model (once per turn). */
  writes_sent_back?: boolean | undefined;
  /** The round being continued and by which tool response (`<id>@<version>`): the continuation claim. */
  continued?: { round: number; by: string } | undefined;
  response_to: string;
  user_message: string;
  trigger_id: string;
  /** The request this turn answers (agent.request.v1's request_id, else the trigger id). */
  request_id?: string | undefined;
  /** The request's correlation tags, put on the answer however many tool rounds later it comes. */
  answer_tags?: string[] | undefined;
  /** What the prompt left out to fit the prompt budget. */
  context_dropped?: string[] | undefined;
  /** The turn's budget and its model usage so far (`turn-budget.ts`). */
  budget?: TurnBudget | undefined;
  /** The request's `stream_id`: every round's model call streams to its channel (`answer-stream.ts`). */
  stream_id?: string | undefined;
}

/** The tags of the answer that ends a turn, whatever it says: the agent, the thread, the request and its own. */
export function turnAnswerTags(agentId: string, conversation: AgentConversation): string[] {
  return [
    'agent:response',
    `agent:${agentId}`,
    threadTag(conversation.thread),
    requestTag(conversation.request_id ?? conversation.trigger_id),
    ...(conversation.answer_tags ?? []),
  ];
}

export function conversationId(agentId: string, thread: string): string {
  return `agconv-${sha(`${agentId}\u0000${thread}`).slice(0, 32)}`;
}

export function requestIdFor(
  agentId: string,
  triggerId: string,
  triggerVersion: number,
  round: number,
  index: number,
): string {
  return `req-${sha(`${agentId}\u0000${triggerId}@${triggerVersion}\u0000${round}\u0000${index}`).slice(0, 24)}`;
}

/**
 * The context of a tool request the agent writes from data it does not control (a structured answer's
 * `create_breadcrumbs`, a function's `ctx.create`): its own (`requestedBy`), and without a `conversation`, which
 * only a tool round writes — a turn continues from no state but its own.
 */
export function ownRequestContext(
  agentId: string,
  context: Record<string, unknown>,
): Record<string, unknown> {
  const { conversation: _dropped, ...rest } = context;
  return { ...rest, requestedBy: agentId };
}

/** A tool response to a request this agent made: the request it answers (its causation names it). */
export function ownToolRequest(
  def: AgentDefinition,
  trigger: { schema_name: string; context: unknown; causation?: { caused_by: string } | null | undefined },
): OwnRequestRef | undefined {
  if (trigger.schema_name !== TOOL_RESPONSE_SCHEMA) return undefined;
  const context = asObject(trigger.context);
  if (stringField(context, ['requestedBy', 'requested_by']) !== def.agent_id) return undefined;
  const match = /^(.+)@(\d+)$/.exec(trigger.causation?.caused_by ?? '');
  return match?.[1] && match[2] ? { id: match[1], version: Number(match[2]) } : undefined;
}

/**
 * The model asked for tools: the round's requests and the conversation that waits for them; or, when every call
 * was refused, the conversation to take straight back to the model.
 */
export function toolRound(
  input: ExecutionInput<AgentDefinition>,
  deps: { readonly log?: Log },
  conversation: AgentConversation,
  response: LlmResponse,
  offered: OfferedTools,
  now: Date = new Date(),
): { outputs: OutputBreadcrumb[]; timers?: OneTimeTimer[] } | { again: AgentConversation } {
  const def = input.definition;
  const tools = offered.specs;
  const round = conversation.round + 1;
  const given = new Set(tools.map((t) => t.name));
  const refused = response.toolCalls
    .filter((call) => !given.has(call.name))
    .map((call) => refusal(call, given));
  for (const r of refused) {
    (deps.log ?? silentLog).warn('agent refused a tool call: the tool is not one it was given', {
      agentId: def.agent_id,
      tool: r.toolName,
      thread: conversation.thread,
      round,
    });
  }
  const assistant: LlmMessage = {
    role: 'assistant',
    content: response.text,
    toolCalls: response.toolCalls,
  };
  const refusedCount = (conversation.refused_tool_calls ?? 0) + refused.length;
  const accepted = response.toolCalls
    .map((call, index) => ({ call, index }))
    .filter(({ call }) => given.has(call.name));
  if (accepted.length === 0) {
    // Nothing to wait for: tell the model at once, in this invocation (the round still counts).
    const answered: AgentConversation = {
      ...conversation,
      messages: [...conversation.messages, assistant, { role: 'tool', results: refused }],
      round,
      refused_tool_calls: refusedCount,
    };
    return { again: answered };
  }
  const pending = accepted.map(({ call, index }) => {
    const requestId = requestIdFor(def.agent_id, input.trigger.id, input.trigger.version, round, index);
    return {
      requestId,
      toolCallId: call.id,
      tool: call.name,
      ...(offered.approvals.has(call.name) ? { approval: approvalIdFor(requestId) } : {}),
    };
  });
  const next: AgentConversation = {
    ...conversation,
    messages: [...conversation.messages, assistant],
    round,
    status: 'waiting-for-tools',
    pending,
    refused: refused.length > 0 ? refused : undefined,
    refused_tool_calls: refusedCount,
    continued: undefined,
  };
  const requests: OutputBreadcrumb[] = accepted.map(({ call }, n) => {
    const entry = pending[n];
    const requestId = entry?.requestId ?? '';
    if (entry?.approval !== undefined) {
      const policy = offered.approvals.get(call.name) ?? {};
      return approvalRequest(
        def.agent_id,
        next,
        entry.approval,
        requestId,
        call,
        response.text,
        offered,
        policy,
        now,
      );
    }
    return toolRequestOutput(
      def.agent_id,
      call.name,
      call.input ?? {},
      requestId,
      conversation.thread,
      round,
    );
  });
  if (pending.some((p) => p.approval !== undefined)) {
    // A person may take hours: the round waits in the conversation, whose pending entries name the approvals.
    const timers = pending.flatMap((p) => {
      const policy = p.approval !== undefined ? offered.approvals.get(p.tool) : undefined;
      return p.approval !== undefined && policy?.timeoutSeconds !== undefined
        ? [expiryTimer(input.trigger.workspace, def.agent_id, p.approval, policy.timeoutSeconds, now)]
        : [];
    });
    return { outputs: [...requests, conversationOutput(next)], ...(timers.length > 0 ? { timers } : {}) };
  }
  const [only] = requests;
  if (only !== undefined && requests.length === 1) {
    // The state rides in the one request: its answer continues the turn from there.
    return { outputs: [{ ...only, context: { ...only.context, conversation: next } }] };
  }
  return { outputs: [...requests, conversationOutput(next)] };
}

/** The tool request a round writes for one call (and an approved call writes once approved). */
export function toolRequestOutput(
  agentId: string,
  tool: string,
  toolInput: unknown,
  requestId: string,
  thread: string,
  round: number,
): OutputBreadcrumb {
  return {
    schema_name: TOOL_REQUEST_SCHEMA,
    title: `${agentId} asks ${tool}`,
    tags: ['tool:request', requestTag(requestId), threadTag(thread)],
    context: { tool, input: toolInput, requestId, requestedBy: agentId, thread, round },
  };
}

/** The `human.request.v1` a call waiting for approval is written as (`#shared/domain/tool-approval.ts`). */
function approvalRequest(
  agentId: string,
  conversation: AgentConversation,
  approvalId: string,
  requestId: string,
  call: LlmToolCall,
  text: string,
  offered: OfferedTools,
  policy: ApprovalPolicy,
  now: Date,
): OutputBreadcrumb {
  const reason = text.trim().slice(0, MAX_REASON_CHARS);
  const tagValue = (prefix: string) =>
    conversation.answer_tags?.find((t) => t.startsWith(prefix))?.slice(prefix.length);
  const inputSchema = offered.specs.find((s) => s.name === call.name)?.inputSchema;
  const context: ToolApproval = {
    kind: APPROVAL_KIND,
    agent_id: agentId,
    tool: call.name,
    arguments: call.input ?? {},
    reason,
    tool_request_id: requestId,
    thread: conversation.thread,
    round: conversation.round,
    prompt: `${agentId} wants to call ${call.name}${reason !== '' ? `: ${reason.slice(0, 200)}` : ''}`,
    ...(inputSchema !== undefined ? { input_schema: inputSchema } : {}),
    ...(policy.timeoutSeconds !== undefined
      ? { expires_at: new Date(now.getTime() + policy.timeoutSeconds * 1000).toISOString() }
      : {}),
    ...(tagValue(RUN_TAG_PREFIX) !== undefined ? { run_id: tagValue(RUN_TAG_PREFIX) } : {}),
    ...(tagValue(STEP_TAG_PREFIX) !== undefined ? { step: tagValue(STEP_TAG_PREFIX) } : {}),
    status: 'pending',
  };
  return {
    id: approvalId,
    schema_name: HUMAN_REQUEST_SCHEMA,
    title: `${agentId} asks to call ${call.name}: waiting for approval`,
    tags: [APPROVAL_TAG, `agent:${agentId}`, requestTag(approvalId), threadTag(conversation.thread)],
    context: context as unknown as Record<string, unknown>,
  };
}

/** The timer that rejects an approval nobody answered in time (written as `system:scheduler`, `timers.ts`). */
function expiryTimer(
  workspace: string,
  agentId: string,
  approvalId: string,
  timeoutSeconds: number,
  now: Date,
): OneTimeTimer {
  const id = expiryResponseId(approvalId);
  return {
    workspace,
    id,
    at: new Date(now.getTime() + timeoutSeconds * 1000),
    breadcrumb: {
      id,
      schema_name: HUMAN_RESPONSE_SCHEMA,
      title: `approval ${approvalId} expired`,
      tags: [`${REPLY_TO_TAG_PREFIX}agent:${agentId}`, requestTag(approvalId)],
      context: { request_id: approvalId, decision: 'reject', reason: EXPIRED_REASON },
    },
  };
}

/**
 * The conversation a `tool.response.v1` continues, with the round's results appended; undefined when it continues
 * nothing (a late or duplicate response, a round still waiting for others, or another response continuing it).
 */
export async function continuedConversation(
  input: ExecutionInput<AgentDefinition>,
  deps: { readonly store: BreadcrumbStore },
): Promise<AgentConversation | undefined> {
  const def = input.definition;
  const workspace = input.trigger.workspace;
  const response = asObject(input.trigger.context);
  const requestId = stringField(response, ['request_id', 'requestId']);
  if (requestId === undefined) return undefined;
  const id = conversationId(def.agent_id, input.causation.thread);
  // Both reads at once: the state the request carries, and the conversation (answered already, or waiting).
  const [carried, stored] = await Promise.all([
    carriedConversation(input, deps.store, requestId),
    deps.store.get(workspace, id).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }),
  ]);
  if (carried !== undefined) {
    const record = stored?.context as Partial<AgentConversation> | undefined;
    // This turn already answered past this round: a late response (or a second delivery after the answer).
    if (
      record?.status === 'answered' &&
      record.trigger_id === carried.trigger_id &&
      (record.round ?? 0) >= carried.round
    ) {
      return undefined;
    }
    const results = carried.pending.map((p) => toolResult(p, response));
    return {
      ...carried,
      messages: [...carried.messages, { role: 'tool', results: inCallOrder(carried, results) }],
      pending: [],
      refused: undefined,
    };
  }
  const waits = (record: Breadcrumb | undefined) => {
    const c = record?.context as Partial<AgentConversation> | undefined;
    return c?.status === 'waiting-for-tools' && c.pending?.some((p) => p.requestId === requestId) === true;
  };
  let found = stored;
  if (!waits(found)) {
    // A call decided by a person continues in the thread of the person's answer, not the conversation's: the
    // request (or the agent's rejection) names the conversation's thread. Only read when the first read missed.
    const thread = await threadOfRequest(input, deps.store, response);
    if (thread !== undefined && thread !== input.causation.thread) {
      found = await deps.store
        .get(workspace, conversationId(def.agent_id, thread))
        .catch((error: unknown) => {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        });
    }
  }
  // A response to a request this agent made outside a conversation (e.g. seed 002's tools_to_invoke).
  if (found === undefined) return undefined;
  const conversation = found.context as unknown as AgentConversation;
  if (
    conversation.status !== 'waiting-for-tools' ||
    !conversation.pending.some((p) => p.requestId === requestId)
  ) {
    return undefined; // late or duplicate response of an earlier round
  }

  const results: LlmToolResult[] = [];
  for (const pending of conversation.pending) {
    const answer =
      pending.requestId === requestId
        ? { context: response, writer: input.trigger.created_by }
        : await latestResponse(deps.store, workspace, pending.requestId);
    if (answer === undefined) return undefined; // another response of this round is still to come
    // A call waiting for approval is answered only by its tool (once approved) or by the agent's rejection.
    if (
      pending.approval !== undefined &&
      answer.writer !== input.principal &&
      answer.writer !== `tool:${pending.tool}`
    ) {
      return undefined;
    }
    results.push(toolResult(pending, answer.context));
  }

  // Claim the round: of several responses that each see the round complete, only one continues.
  const me = `${input.trigger.id}@${input.trigger.version}`;
  if (conversation.continued?.round === conversation.round && conversation.continued.by !== me)
    return undefined;
  if (conversation.continued?.by !== me) {
    try {
      await deps.store.update(
        workspace,
        found.id,
        {
          context: { ...withoutUsageRecord(found.context), continued: { round: conversation.round, by: me } },
        },
        { principal: input.principal, expectedVersion: found.version, causation: input.causation },
      );
    } catch (error) {
      if (error instanceof VersionConflictError) return undefined;
      throw error;
    }
  }

  return {
    ...conversation,
    messages: [...conversation.messages, { role: 'tool', results: inCallOrder(conversation, results) }],
    pending: [],
    refused: undefined,
  };
}

/**
 * The turn state carried by the request a response answers (a round of one call), read back from that request by
 * the id its causation names; undefined when the request carries none (a round of several calls, or a request
 * that is not the agent's own). Only what the agent itself wrote counts: a request someone else wrote for it
 * never speaks for its turn.
 */
async function carriedConversation(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  requestId: string,
): Promise<AgentConversation | undefined> {
  const def = input.definition;
  const ref = ownToolRequest(def, input.trigger);
  if (ref === undefined) return undefined;
  let request: Breadcrumb;
  try {
    request =
      ref.version === undefined
        ? await store.get(input.trigger.workspace, ref.id)
        : await store.getVersion(input.trigger.workspace, ref.id, ref.version);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  // Written by the agent, in this very version too: someone else's edit of its request carries no turn.
  if (
    request.schema_name !== TOOL_REQUEST_SCHEMA ||
    request.created_by !== input.principal ||
    request.updated_by !== input.principal
  ) {
    return undefined;
  }
  const context = asObject(request.context);
  if (context.requestedBy !== def.agent_id || context.requestId !== requestId) return undefined;
  const state = asObject(context.conversation) as unknown as AgentConversation;
  const [pending, ...others] = Array.isArray(state.pending) ? state.pending : [];
  if (
    state.agent_id !== def.agent_id ||
    state.status !== 'waiting-for-tools' ||
    !Array.isArray(state.messages) ||
    pending?.requestId !== requestId ||
    others.length > 0
  ) {
    return undefined;
  }
  return state;
}

/**
 * The thread of the conversation a response continues, as the agent itself wrote it: in its rejection of a call
 * (`approvals.ts`), else in the tool request the response answers (read by the id its causation names).
 */
async function threadOfRequest(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  response: Record<string, unknown>,
): Promise<string | undefined> {
  if (input.trigger.created_by === input.principal) return stringField(response, ['thread']);
  const ref = ownToolRequest(input.definition, input.trigger);
  if (ref === undefined) return undefined;
  try {
    const request =
      ref.version === undefined
        ? await store.get(input.trigger.workspace, ref.id)
        : await store.getVersion(input.trigger.workspace, ref.id, ref.version);
    if (request.schema_name !== TOOL_REQUEST_SCHEMA || request.created_by !== input.principal)
      return undefined;
    return stringField(asObject(request.context), ['thread']);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** A failed result for a call to a tool the agent was not given, naming the ones it was. */
function refusal(call: LlmToolCall, given: ReadonlySet<string>): LlmToolResult {
  const available = given.size > 0 ? [...given].join(', ') : 'none';
  return {
    toolCallId: call.id,
    toolName: call.name,
    output: `the tool "${call.name}" is not available to this agent (its tools: ${available}); the call was not made`,
    isError: true,
  };
}

/** The round's results (answered and refused) in the order the model made the calls. */
function inCallOrder(conversation: AgentConversation, answered: LlmToolResult[]): LlmToolResult[] {
  const all = [...(conversation.refused ?? []), ...answered];
  const last = conversation.messages.findLast((m) => m.role === 'assistant');
  const order = new Map((last?.role === 'assistant' ? (last.toolCalls ?? []) : []).map((c, i) => [c.id, i]));
  return all.sort((a, b) => (order.get(a.toolCallId) ?? 0) - (order.get(b.toolCallId) ?? 0));
}

function toolResult(
  pending: AgentConversation['pending'][number],
  response: Record<string, unknown>,
): LlmToolResult {
  const status = response.status;
  const failed =
    status === 'error' ||
    status === 'failed' ||
    (response.error !== undefined && response.output === undefined);
  return {
    toolCallId: pending.toolCallId,
    toolName: pending.tool,
    output: failed ? (response.error ?? 'the tool failed') : (response.output ?? null),
    ...(failed ? { isError: true } : {}),
  };
}

async function latestResponse(
  store: BreadcrumbStore,
  workspace: string,
  requestId: string,
): Promise<{ context: Record<string, unknown>; writer: string } | undefined> {
  const page = await store.list({
    workspace,
    schema_name: TOOL_RESPONSE_SCHEMA,
    tag: requestTag(requestId),
    limit: 1,
  });
  if (page.items.length === 0) return undefined;
  // The context view, as for the trigger: a tool result's excluded fields never reach the model.
  const [view] = await store.contextViews(workspace, page.items.slice(0, 1));
  const writer = page.items[0]?.created_by ?? '';
  return view ? { context: asObject(view.context), writer } : undefined;
}

export function conversationOutput(conversation: AgentConversation): OutputBreadcrumb {
  return {
    schema_name: AGENT_CONVERSATION_SCHEMA,
    title: `${conversation.agent_id} conversation ${conversation.thread}`,
    tags: ['agent:conversation', `agent:${conversation.agent_id}`, threadTag(conversation.thread)],
    // A conversation read back from its record carries the calls an earlier invocation recorded on it; written
    // again, they would be counted again (`usage-record.ts` records this invocation's own).
    context: withoutUsageRecord(conversation as unknown as Record<string, unknown>),
    upsertId: conversationId(conversation.agent_id, conversation.thread),
  };
}

/**
 * The tools offered (and the only ones the agent may call): the definition's `tools` (all of the workspace's tool
 * definitions when absent), described by their `tool.def.v1` (description, input_schema), else as "the <name>
 * tool" taking any object.
 */
export async function toolSpecs(
  def: AgentDefinition,
  workspace: string,
  store: BreadcrumbStore,
): Promise<OfferedTools> {
  // The same rule decides what a structured answer may request (`#shared/core/executor/allow-list.ts`).
  const defs = await listToolDefinitions(workspace, store);
  const names = givenToolNames(def, defs);
  const approvals = new Map<string, ApprovalPolicy>();
  for (const name of names) {
    const policy = approvalPolicy(def, name, defs.get(name));
    if (policy !== undefined) approvals.set(name, policy);
  }
  const specs = names.map((name): LlmToolSpec => {
    const d = defs.get(name);
    const schema = asObject(d?.input_schema ?? { type: 'object' });
    return {
      name,
      description: (typeof d?.description === 'string' ? d.description : undefined) ?? `the ${name} tool`,
      inputSchema: { type: 'object', ...schema },
    };
  });
  return { specs, approvals };
}

/** The tools a turn offers the model, and which of them wait for a person's approval (and how long). */
export interface OfferedTools {
  specs: LlmToolSpec[];
  approvals: ReadonlyMap<string, ApprovalPolicy>;
}

export const NO_TOOLS: OfferedTools = { specs: [], approvals: new Map() };

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
