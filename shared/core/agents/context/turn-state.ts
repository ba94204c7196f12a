/**
 * Where a context agent's turn waits between invocations, and who may move it on.
 *
 * Each turn keeps its own state: in the one request of a single-call round (`conversation`), else in the turn's
 * `agent.conversation.v1`, one per agent and turn (`turnRecordId`, from the trigger version that started the turn),
 * written before the round's requests. So a second message in a thread, two parallel steps of a run and the items of
 * a map that call the same agent never share a record, and an answer never arrives before its turn's record.
 * Every request and approval a round writes names its turn (`turn`), and the continuation reads the turn from the
 * request the answer names — the request the agent itself wrote, never the answer's say-so.
 *
 * Who moves a turn on (everything else is ignored, logged with writer and reason, and changes nothing):
 * - an answer to a round: the `tool.response.v1` the named tool wrote (`tool:<name>`, its first version) for a
 *   request this agent wrote (its causation names the request, read back at that version, written and last
 *   updated by the agent), or the agent's own rejection of a call (`approvals.ts`, handed over in-process); the
 *   other answers of a round of several calls are found by their request tag and held to the same rule;
 * - the state: a request's `conversation` only in the agent's own version of its own request; an
 *   `agent.conversation.v1` only in a version the agent wrote (`updated_by`). A version someone else wrote (an
 *   API write by a person, a plain put, another agent) is skipped: the agent's newest own version in the record's
 *   last `OWN_VERSIONS_LOOKBACK` versions is its state, and the continuation claim writes over the other one.
 *
 * A turn that can no longer continue (its record deleted, or buried under others' versions) while an answer to
 * one of its requests arrives is not left waiting: the agent answers the request that started the turn with an
 * error (`lostTurnAnswer`), once per turn, unless the turn already answered. So a run's agent step fails with
 * the reason instead of staying `running` with nothing in flight.
 */
import { ERROR_ANSWERS } from '#shared/core/executor/answers.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError, VersionConflictError } from '#shared/domain/errors.ts';
import { withoutUsageRecord } from '#shared/domain/llm-usage.ts';
import {
  AGENT_CONVERSATION_SCHEMA,
  AGENT_ERROR_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  requestIdOf,
  requestTag,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { LlmToolResult } from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { ExecutionInput, OutputBreadcrumb } from '../../executor/contract.ts';
import { deterministicId } from '../../executor/outputs.ts';
import { asObject, stringField } from './fields.ts';
import {
  type AgentConversation,
  conversationOutput,
  ownToolRequest,
  recordIdOf,
  threadRecordId,
  turnAnswerTags,
  turnRecordId,
} from './tool-rounds.ts';

/** How far back a turn's record is searched for the agent's own version when others wrote over it. */
export const OWN_VERSIONS_LOOKBACK = 20;
/** How many responses under one request tag are looked at for the tool's own (a flood of others' is skipped). */
export const RESPONSES_LOOKED_AT = 50;

export interface TurnStateDeps {
  readonly store: BreadcrumbStore;
  readonly log?: Log;
}

/**
 * What a `tool.response.v1` does to the turn it answers: continue it (the round's results appended), or answer it
 * with an error (its state is lost); undefined when it moves nothing (a late or duplicate response, a round
 * still waiting for others, another response continuing it, or an answer nobody trusted).
 */
export type Continuation =
  | { readonly conversation: AgentConversation }
  | { readonly outputs: OutputBreadcrumb[] }
  | undefined;

/** The request an answer is for, as the agent wrote it. */
interface AnsweredRequest {
  readonly tool: string | undefined;
  readonly thread: string | undefined;
  readonly turn: string | undefined;
  /** The turn a single-call round carries in its request. */
  readonly carried: AgentConversation | undefined;
}

export async function continuedConversation(
  input: ExecutionInput<AgentDefinition>,
  deps: TurnStateDeps,
): Promise<Continuation> {
  const log = deps.log ?? silentLog;
  const def = input.definition;
  const workspace = input.trigger.workspace;
  const response = asObject(input.trigger.context);
  const requestId = stringField(response, ['request_id', 'requestId']);
  if (requestId === undefined) return undefined;
  const keys = {
    agentId: def.agent_id,
    response: `${input.trigger.id}@${input.trigger.version}`,
    writer: input.trigger.created_by,
    requestId,
  };
  const answered = await answeredRequest(input, deps.store, response, requestId);
  if (typeof answered === 'string') {
    log.warn(`tool response ignored: ${answered}`, keys);
    return undefined;
  }

  const carried = answered.carried;
  if (carried !== undefined) {
    // This turn already answered past this round: a late response (or a second delivery after the answer).
    const own = await ownRecord(deps.store, workspace, recordIdOf(carried), input.principal, log);
    const record = own?.state.context as Partial<AgentConversation> | undefined;
    if (
      record?.status === 'answered' &&
      record.trigger_id === carried.trigger_id &&
      (record.round ?? 0) >= carried.round
    ) {
      return undefined;
    }
    const results = carried.pending.map((p) => toolResult(p, response));
    return {
      conversation: {
        ...carried,
        messages: [...carried.messages, { role: 'tool', results: inCallOrder(carried, results) }],
        pending: [],
        refused: undefined,
      },
    };
  }

  const recordId =
    answered.turn !== undefined
      ? turnRecordId(def.agent_id, answered.turn)
      : threadRecordId(def.agent_id, answered.thread ?? input.causation.thread);
  const own = await ownRecord(deps.store, workspace, recordId, input.principal, log);
  if (own === undefined) {
    // A request outside a turn (seed 002's tools_to_invoke) has no turn to continue; a turn's request does.
    if (answered.turn === undefined) return undefined;
    return lostTurnAnswer(input, deps, answered.turn, recordId);
  }
  const conversation = own.state.context as unknown as AgentConversation;
  if (
    conversation.status !== 'waiting-for-tools' ||
    !Array.isArray(conversation.pending) ||
    !conversation.pending.some((p) => p.requestId === requestId)
  ) {
    return undefined; // late or duplicate response of an earlier round
  }

  const results: LlmToolResult[] = [];
  for (const pending of conversation.pending) {
    const answer =
      pending.requestId === requestId
        ? response
        : await trustedResponse(input, deps.store, pending.requestId, pending.tool);
    if (answer === undefined) return undefined; // another response of this round is still to come
    results.push(toolResult(pending, answer));
  }

  // Claim the round: of several responses that each see the round complete, only one continues. The claim is
  // written over the record's head, whoever wrote that: the agent's own state goes back on top.
  const me = `${input.trigger.id}@${input.trigger.version}`;
  if (conversation.continued?.round === conversation.round && conversation.continued.by !== me)
    return undefined;
  if (conversation.continued?.by !== me || own.headVersion !== own.state.version) {
    try {
      await deps.store.update(
        workspace,
        recordId,
        {
          context: {
            ...withoutUsageRecord(own.state.context),
            continued: { round: conversation.round, by: me },
          },
        },
        { principal: input.principal, expectedVersion: own.headVersion, causation: input.causation },
      );
    } catch (error) {
      if (error instanceof VersionConflictError) return undefined;
      throw error;
    }
  }

  return {
    conversation: {
      ...conversation,
      messages: [...conversation.messages, { role: 'tool', results: inCallOrder(conversation, results) }],
      pending: [],
      refused: undefined,
    },
  };
}

/**
 * The agent's request this response answers, or why the response answers none of its rounds. Cheap checks come
 * first, so a forged response costs the agent no read.
 */
async function answeredRequest(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  response: Record<string, unknown>,
  requestId: string,
): Promise<AnsweredRequest | string> {
  const writer = input.trigger.created_by;
  // The agent's own rejection of a call (approvals.ts): written in this invocation and handed over; nothing else
  // the agent wrote triggers it (the pipeline skips its own writes).
  if (writer === input.principal) {
    return {
      tool: stringField(response, ['tool']),
      thread: stringField(response, ['thread']),
      turn: stringField(response, ['turn']),
      carried: undefined,
    };
  }
  if (!writer.startsWith('tool:')) return `only a tool answers a round; ${writer} wrote it`;
  if (input.trigger.version !== 1) return `an edit (version ${input.trigger.version}) of a tool's answer`;
  const ref = ownToolRequest(input.definition, input.trigger);
  if (ref === undefined) return 'it names no request of this agent (causation, requestedBy)';
  const request = await ownRequest(input, store, ref, requestId);
  if (request === undefined) return `it answers no request this agent wrote (${ref.id})`;
  const context = asObject(request.context);
  const tool = stringField(context, ['tool']);
  if (writer !== `tool:${tool}`) return `the request asked the tool ${tool}, not ${writer}`;
  return {
    tool,
    thread: stringField(context, ['thread']),
    turn: stringField(context, ['turn']),
    carried: carriedConversation(input, context, requestId),
  };
}

/**
 * The tool request `ref` names when it is the agent's own request `requestId`: written by the agent, in this very
 * version too (someone else's edit of its request speaks for nobody); undefined otherwise.
 */
async function ownRequest(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  ref: { id: string; version?: number | undefined },
  requestId: string,
): Promise<Breadcrumb | undefined> {
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
  const context = asObject(request.context);
  return request.schema_name === TOOL_REQUEST_SCHEMA &&
    request.created_by === input.principal &&
    request.updated_by === input.principal &&
    context.requestedBy === input.definition.agent_id &&
    context.requestId === requestId
    ? request
    : undefined;
}

/**
 * The turn state a single-call round carries in its request (already the agent's own), when it carries one for
 * this request of this agent.
 */
function carriedConversation(
  input: ExecutionInput<AgentDefinition>,
  context: Record<string, unknown>,
  requestId: string,
): AgentConversation | undefined {
  if (context.conversation === undefined) return undefined;
  const state = asObject(context.conversation) as unknown as AgentConversation;
  const [pending, ...others] = Array.isArray(state.pending) ? state.pending : [];
  if (
    state.agent_id !== input.definition.agent_id ||
    state.status !== 'waiting-for-tools' ||
    !Array.isArray(state.messages) ||
    pending?.requestId !== requestId ||
    others.length > 0
  ) {
    return undefined;
  }
  return state;
}

/** A turn's record as the agent last wrote it (`state`), and the record's head version (what a write replaces). */
interface OwnRecord {
  readonly state: Breadcrumb;
  readonly headVersion: number;
}

/**
 * The newest version of a turn's record the agent wrote itself; undefined when there is none (never written,
 * deleted, or only others' versions within the last `OWN_VERSIONS_LOOKBACK`). Others' versions are logged.
 */
async function ownRecord(
  store: BreadcrumbStore,
  workspace: string,
  id: string,
  principal: string,
  log: Log,
): Promise<OwnRecord | undefined> {
  let head: Breadcrumb;
  try {
    head = await store.get(workspace, id);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  const mine = (b: Breadcrumb) => b.schema_name === AGENT_CONVERSATION_SCHEMA && b.updated_by === principal;
  if (mine(head)) return { state: head, headVersion: head.version };
  log.warn('turn state ignored: a version of the turn record the agent did not write', {
    record: id,
    version: head.version,
    writer: head.updated_by,
    schema: head.schema_name,
  });
  if (head.schema_name !== AGENT_CONVERSATION_SCHEMA) return undefined;
  const page = await store.history(workspace, id, { limit: OWN_VERSIONS_LOOKBACK });
  const own = page.items.find(mine);
  return own === undefined ? undefined : { state: own, headVersion: head.version };
}

/**
 * The answer to another request of the round, as its tool wrote it (or the agent rejected the call): the newest
 * trusted one of the first `RESPONSES_LOOKED_AT` under its request tag, in its context view; a version someone
 * edited counts as the tool's first. Undefined while there is none.
 */
async function trustedResponse(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  requestId: string,
  tool: string,
): Promise<Record<string, unknown> | undefined> {
  const workspace = input.trigger.workspace;
  let cursor: string | undefined;
  let seen = 0;
  do {
    const page = await store.list({
      workspace,
      schema_name: TOOL_RESPONSE_SCHEMA,
      tag: requestTag(requestId),
      limit: Math.min(25, RESPONSES_LOOKED_AT - seen),
      ...(cursor !== undefined ? { cursor } : {}),
    });
    seen += page.items.length;
    for (const head of page.items) {
      const first = await firstTrustedVersion(input, store, head, requestId, tool);
      if (first === undefined) continue;
      // The context view, as for the trigger: a tool result's excluded fields never reach the model.
      const [view] = await store.contextViews(workspace, [first]);
      return view === undefined ? undefined : asObject(view.context);
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined && seen < RESPONSES_LOOKED_AT);
  return undefined;
}

/** A listed response's first version when the tool (or the agent) wrote it for the agent's own request. */
async function firstTrustedVersion(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  head: Breadcrumb,
  requestId: string,
  tool: string,
): Promise<Breadcrumb | undefined> {
  const writer = head.created_by;
  if (writer !== input.principal && writer !== `tool:${tool}`) return undefined;
  const first = head.version === 1 ? head : await store.getVersion(head.workspace, head.id, 1);
  if (stringField(asObject(first.context), ['request_id', 'requestId']) !== requestId) return undefined;
  // The agent's rejection of the call needs nothing more; the tool's answer must answer the agent's own request.
  if (writer === input.principal) return first;
  const ref = ownToolRequest(input.definition, first);
  if (ref === undefined) return undefined;
  const request = await ownRequest(input, store, ref, requestId);
  return request !== undefined && asObject(request.context).tool === tool ? first : undefined;
}

/**
 * The answer to a turn whose state is gone while one of its requests was answered: an error answering the request
 * that started the turn (read back at its version, so it carries that request's correlation tags — a run's step
 * fails with the reason), under one id per turn; nothing when the turn already answered or its trigger is gone.
 */
async function lostTurnAnswer(
  input: ExecutionInput<AgentDefinition>,
  deps: TurnStateDeps,
  turn: string,
  recordId: string,
): Promise<Continuation> {
  const log = deps.log ?? silentLog;
  const workspace = input.trigger.workspace;
  const match = /^(.+)@(\d+)$/.exec(turn);
  if (match?.[1] === undefined || match[2] === undefined) return undefined;
  let started: Breadcrumb;
  try {
    started = await deps.store.getVersion(workspace, match[1], Number(match[2]));
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    log.warn('turn lost and its trigger is gone: nothing to answer', { turn, record: recordId });
    return undefined;
  }
  const answers = await deps.store.list({ workspace, tag: requestTag(requestIdOf(started)), limit: 25 });
  const answered = answers.items.some(
    (a) =>
      a.created_by === input.principal &&
      (a.schema_name === AGENT_RESPONSE_SCHEMA || a.schema_name === AGENT_ERROR_SCHEMA),
  );
  if (answered) return undefined; // a late answer of a turn that ended (its record removed since)
  const error =
    `the turn's state (${recordId}) is gone or was overwritten by others, so the answer to request ` +
    `${stringField(asObject(input.trigger.context), ['request_id', 'requestId']) ?? '?'} continues nothing; ask again`;
  log.warn('turn lost: answering its request with an error', { turn, record: recordId });
  const answer = ERROR_ANSWERS.agent({
    definition: input.definition,
    trigger: { ...started, workspace },
    error,
  });
  return { outputs: [{ ...answer, id: deterministicId('turnlost', input.definition.agent_id, turn) }] };
}

/**
 * The answer of a turn that a continuation could not carry on (a failure that will not pass: a model refusing the
 * request, a broken definition): an error under the turn's own tags, so the request that started the turn — a
 * run's step among them — hears of it. The pipeline's error answer would be tagged from the tool's answer.
 */
export function failedTurnOutputs(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  error: string,
): OutputBreadcrumb[] {
  const def = input.definition;
  return [
    {
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id} failed`,
      tags: turnAnswerTags(def.agent_id, conversation),
      context: {
        agent_id: def.agent_id,
        request_id: conversation.request_id ?? conversation.trigger_id,
        status: 'error',
        error,
        message: `error: ${error}`,
        thread: conversation.thread,
        response_to: conversation.response_to,
        trigger_id: conversation.trigger_id,
        tool_rounds: conversation.round,
        ...(conversation.budget !== undefined ? { turn_usage: conversation.budget.used } : {}),
      },
    },
    conversationOutput({ ...conversation, status: 'answered', pending: [] }),
  ];
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
