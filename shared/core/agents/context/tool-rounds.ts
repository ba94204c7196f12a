/**
 * A context agent's tool rounds. The model asks for tools (native tool calling); each call becomes a
 * `tool.request.v1` `{tool, input, requestId, requestedBy, thread, round, turn}` tagged `tool:request`,
 * `request:<requestId>`; the invocation then returns, never waiting. Where the turn's working state waits
 * (`turn-state.ts` reads it back and decides who may move it on):
 * - a round of one call: in the request itself (`conversation`), so the state that changes within a second needs
 *   no record of its own; the response's causation names the request (`ownToolRequest`), which the continuation
 *   reads back by id. One request has one answer (a tool answers once per request version), so nothing else
 *   claims the continuation; the turn's `agent.conversation.v1`, already answered, stops a late one;
 * - a round of several calls: in the turn's `agent.conversation.v1` (one per agent × turn, `turnRecordId`: turns
 *   of one thread — a second message, parallel steps of a run, a map's items — never share one), written before
 *   the round's requests, which the response that finds every request answered claims with If-Match, so two
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
import type { AgentDefinition } from '#shared/domain/definitions.ts';
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
import { outputId } from '../../executor/outputs.ts';
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
  /**
   * The trigger version that started the turn (`<id>@<version>`): names the turn's record (`turnRecordId`), and
   * what it answers should the record be lost. Absent in a turn an older version started (kept per thread).
   */
  turn?: string | undefined;
  /** The request's correlation tags, put on the answer however many tool rounds later it comes. */
  answer_tags?: string[] | undefined;
  /** What the prompt left out to fit the prompt budget. */
  context_dropped?: string[] | undefined;
  /** The turn's budget and its model usage so far (`turn-budget.ts`). */
  budget?: TurnBudget | undefined;
  /** The request's `stream_id`: every round's model call streams to its channel (`answer-stream.ts`). */
  stream_id?: string | undefined;
  /** How many of `messages` the agent's guardrails checked already (`#shared/ports/guardrails.ts`). */
  guarded?: number | undefined;
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

/** The turn a trigger version starts: `<id>@<version>`. */
export function turnOf(trigger: { id: string; version: number }): string {
  return `${trigger.id}@${trigger.version}`;
}

/**
 * The record a turn keeps its state in: one per agent and turn, so a second message in the thread, two parallel
 * steps of a run or a map's items calling the same agent each keep their own.
 */
export function turnRecordId(agentId: string, turn: string): string {
  return `agconv-${sha(`${agentId}\u0000turn\u0000${turn}`).slice(0, 32)}`;
}

/** Where a turn an older version started kept its state: one record per agent and thread. */
export function threadRecordId(agentId: string, thread: string): string {
  return `agconv-${sha(`${agentId}\u0000${thread}`).slice(0, 32)}`;
}

/** The record of this turn's state. */
export function recordIdOf(conversation: Pick<AgentConversation, 'agent_id' | 'thread' | 'turn'>): string {
  return conversation.turn !== undefined
    ? turnRecordId(conversation.agent_id, conversation.turn)
    : threadRecordId(conversation.agent_id, conversation.thread);
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
 * `create_breadcrumbs`, a function's `ctx.create`): its own (`requestedBy`), and without a `conversation` or a
 * `turn`, which only a tool round writes — a turn continues from no state but its own, and only its own requests
 * answer it.
 */
export function ownRequestContext(
  agentId: string,
  context: Record<string, unknown>,
): Record<string, unknown> {
  const { conversation: _dropped, turn: _turn, ...rest } = context;
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
    // The id the request would have as the invocation's `n`th output: written after the turn's record, it keeps
    // the id it had when requests came first, and the first is the one an error answer to this trigger replays.
    return {
      ...toolRequestOutput(
        def.agent_id,
        call.name,
        call.input ?? {},
        requestId,
        conversation.thread,
        round,
        conversation.turn,
      ),
      id: outputId('agent', input.definitionRef.id, input.trigger.id, input.trigger.version, n),
    };
  });
  if (pending.some((p) => p.approval !== undefined)) {
    // A person may take hours: the round waits in the conversation, whose pending entries name the approvals.
    const timers = pending.flatMap((p) => {
      const policy = p.approval !== undefined ? offered.approvals.get(p.tool) : undefined;
      return p.approval !== undefined && policy?.timeoutSeconds !== undefined
        ? [expiryTimer(input.trigger.workspace, def.agent_id, p.approval, policy.timeoutSeconds, now)]
        : [];
    });
    return { outputs: [conversationOutput(next), ...requests], ...(timers.length > 0 ? { timers } : {}) };
  }
  const [only] = requests;
  if (only !== undefined && requests.length === 1) {
    // The state rides in the one request: its answer continues the turn from there.
    return { outputs: [{ ...only, context: { ...only.context, conversation: next } }] };
  }
  // The turn's record first: an answer can only come once its request exists, and then it finds the turn.
  return { outputs: [conversationOutput(next), ...requests] };
}

/**
 * The tool request a round writes for one call (and an approved call writes once approved). `turn` names the turn
 * its answer continues (`turn-state.ts`).
 */
export function toolRequestOutput(
  agentId: string,
  tool: string,
  toolInput: unknown,
  requestId: string,
  thread: string,
  round: number,
  turn: string | undefined,
): OutputBreadcrumb {
  return {
    schema_name: TOOL_REQUEST_SCHEMA,
    title: `${agentId} asks ${tool}`,
    tags: ['tool:request', requestTag(requestId), threadTag(thread)],
    context: {
      tool,
      input: toolInput,
      requestId,
      requestedBy: agentId,
      thread,
      round,
      ...(turn !== undefined ? { turn } : {}),
    },
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
    ...(conversation.turn !== undefined ? { turn: conversation.turn } : {}),
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

export function conversationOutput(conversation: AgentConversation): OutputBreadcrumb {
  return {
    schema_name: AGENT_CONVERSATION_SCHEMA,
    title: `${conversation.agent_id} conversation ${conversation.thread}`,
    tags: ['agent:conversation', `agent:${conversation.agent_id}`, threadTag(conversation.thread)],
    // A conversation read back from its record carries the calls an earlier invocation recorded on it; written
    // again, they would be counted again (`usage-record.ts` records this invocation's own).
    context: withoutUsageRecord(conversation as unknown as Record<string, unknown>),
    upsertId: recordIdOf(conversation),
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
