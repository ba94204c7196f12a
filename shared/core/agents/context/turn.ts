/**
 * The agent kind's `execute`: one LLM call per invocation, never waiting inside the Lambda.
 *
 * A new turn (any trigger but `tool.response.v1`):
 *   user message ← the trigger (`agent.context.v1` → the `user.message.v1` named by `trigger_event_id`, as in
 *   seed 003; otherwise the trigger's `message` / `content` / `text`, else the whole breadcrumb as in seed 002);
 *   system prompt ← the definition's `system_prompt` + the assembled context (the context builder's
 *   `formatted_context`, and a `## <key>` section per context selector).
 * The model answers, or asks for tools (native tool calling). Each tool call becomes a `tool.request.v1`
 * `{tool, input, requestId, requestedBy, thread}` tagged `tool:request`, `request:<requestId>`, and the
 * conversation so far is saved in an `agent.conversation.v1` (one per agent × thread, upserted). Then it returns.
 *
 * Only the agent's own tools: a call to a tool the agent was not given (not in `tools`, or with `tools` absent, no
 * `tool.def.v1` of that name in the workspace) never becomes a request. It is answered to the model at once as a
 * failed tool result naming the tools it has, so the model can recover; the refusal is counted
 * (`refused_tool_calls` on the conversation and the response) and logged. A round whose every call was refused
 * goes straight back to the model, in the same invocation; it still counts as a round.
 *
 * A continuation (`tool.response.v1` with `$.requestedBy` = agent_id): load the conversation; when every request
 * of the pending round has a response (listed by tag `request:<id>`), claim the round on the conversation
 * (If-Match, so two responses arriving together continue once), append the results and call the model again.
 * After `max_tool_rounds` rounds the model is called without tools and must answer. Such a trigger answers the
 * agent's own request (`ownRequestOf`), so its rounds do not grow the hop count (loop-guard.ts):
 * `max_tool_rounds` is what bounds them.
 *
 * The final answer is an `agent.response.v1` `{message, agent_id, request_id, status, text, thread, response_to,
 * tool_rounds, …}` tagged `agent:response`, `thread:<thread>`, `request:<request_id>` and the request's
 * correlation tags (`run:`, `step:`, `reply-to:`), which the conversation keeps across tool rounds; the tool
 * requests made on the way never carry them.
 *
 * This is the `context` agent type (seed 004): the system prompt, then the `context` markdown, then the assembled
 * context fitted to the token budget (`#shared/core/agents/context/prompt-budget.ts`: lowest-priority sources dropped
 * first, counted with the model family's tokenizer). `createAgentExecutor` runs it as the whole agent kind (for a
 * function or test that runs only context agents); `contextTurn` is what the agent-type dispatcher
 * (`#shared/core/agents/agent-kind.ts`) calls. With `response_schema` the model's JSON is validated (the project's one
 * JSON Schema validator, `#shared/domain/lang/json-schema.ts`) and kept in `output`; its `create_breadcrumbs` are
 * written in the agent's own workspace (the pipeline writes every output there) and its `tools_to_invoke` (seed
 * 002) become fire-and-forget tool requests — each only as the allow-list allows
 * (`#shared/core/executor/allow-list.ts`: requests only for what the agent was given; never definitions, system
 * records, run messages, answers or routing tags). A refused write is sent back to the model once with why; what
 * its next answer still asks and may not is left out. Either way the refusals are counted on the answer
 * (`refused_writes`, `refusals`) and logged.
 */
import { createHash } from 'node:crypto';
import { type ContextSource, fitContext } from '#shared/core/agents/context/prompt-budget.ts';
import { type AgentTask, agentTaskOf } from '#shared/core/agents/contract.ts';
import {
  type Grants,
  givenToolNames,
  grantsOf,
  listToolDefinitions,
  type Refusal,
} from '#shared/core/executor/allow-list.ts';
import { type AgentSpec, agentModel, agentSpec } from '#shared/domain/agent-spec.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import {
  type FieldIssue,
  InvalidJsonSchemaError,
  NonRetriableError,
  NotFoundError,
  ValidationError,
  VersionConflictError,
} from '#shared/domain/errors.ts';
import { compileJsonSchema, formatIssues } from '#shared/domain/lang/json-schema.ts';
import {
  AGENT_CONTEXT_SCHEMA,
  AGENT_CONVERSATION_SCHEMA,
  AGENT_NOTE_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  requestTag,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  threadTag,
} from '#shared/domain/protocol.ts';
import type { YamlParser } from '#shared/domain/yaml.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type {
  LlmClient,
  LlmMessage,
  LlmResponse,
  LlmToolCall,
  LlmToolResult,
  LlmToolSpec,
} from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { ERROR_ANSWERS, responseTo } from '../../executor/answers.ts';
import type {
  ExecutionInput,
  ExecutionResult,
  ExecutorKindImplementation,
  OutputBreadcrumb,
  OwnRequestRef,
} from '../../executor/contract.ts';

/** When a model string is absent from the definition: the default provider's default model. */
export const DEFAULT_AGENT_MODEL = 'default';
const MAX_SECTION_CHARS = 8000;
const MAX_CREATED_BREADCRUMBS = 10;

export interface AgentExecutorDeps {
  store: BreadcrumbStore;
  llm: LlmClient;
  /** Refused tool calls are logged here (`agent refused a tool call`). @default silent */
  log?: Log;
  /** Counts tokens to fit the context into the budget; without it the prompt is not fitted. */
  tokenizers?: Tokenizers;
  /** Reads `yaml` text (budget, agent card); without it only object-form `yaml` is read. */
  parseYaml?: YamlParser;
}

type ContextSpec = Extract<AgentSpec, { type: 'context' }>;

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
  pending: { requestId: string; toolCallId: string; tool: string }[];
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
  /** What the prompt left out to fit the token budget. */
  context_dropped?: string[] | undefined;
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

export function createAgentExecutor(deps: AgentExecutorDeps): ExecutorKindImplementation<AgentDefinition> {
  return {
    execute: (input) => executeAgent(input, deps),
    errorOutput: ERROR_ANSWERS.agent,
    ownRequestOf: ({ definition, trigger }) => ownToolRequest(definition, trigger),
  };
}

/** A tool response to a request this agent made: the request it answers (its causation names it). */
export function ownToolRequest(def: AgentDefinition, trigger: Breadcrumb): OwnRequestRef | undefined {
  if (trigger.schema_name !== TOOL_RESPONSE_SCHEMA) return undefined;
  const context = asObject(trigger.context);
  if (stringField(context, ['requestedBy', 'requested_by']) !== def.agent_id) return undefined;
  const match = /^(.+)@(\d+)$/.exec(trigger.causation?.caused_by ?? '');
  return match?.[1] && match[2] ? { id: match[1], version: Number(match[2]) } : undefined;
}

async function executeAgent(
  input: ExecutionInput<AgentDefinition>,
  deps: AgentExecutorDeps,
): Promise<ExecutionResult> {
  if (input.trigger.schema_name === TOOL_RESPONSE_SCHEMA) return continueWithToolResults(input, deps);
  const spec = agentSpec(input.definition, deps.parseYaml ? { parseYaml: deps.parseYaml } : {});
  if (spec.type !== 'context') {
    throw new NonRetriableError(
      `this function runs context agents only; ${input.definition.agent_id} is a ${spec.type} agent`,
    );
  }
  return contextTurn(input, deps, spec, agentTaskOf(input.trigger));
}

/**
 * One invocation of a context agent: a new turn for `task`, or (for a `tool.response.v1`) the continuation of the
 * turn whose tool round it answers.
 */
export async function contextTurn(
  input: ExecutionInput<AgentDefinition>,
  deps: AgentExecutorDeps,
  spec: ContextSpec,
  task: AgentTask,
): Promise<ExecutionResult> {
  if (input.trigger.schema_name === TOOL_RESPONSE_SCHEMA) return continueWithToolResults(input, deps);
  const def = input.definition;
  const workspace = input.trigger.workspace;
  const userMessage = await userMessageOf(input, deps.store, task);
  // The model the rule manager reports in the definition's status (`agentModel`): one answer to "which model".
  const model = agentModel(spec) ?? DEFAULT_AGENT_MODEL;
  const prompt = await systemPrompt(def, input, spec, model, deps.tokenizers);
  const conversation: AgentConversation = {
    agent_id: def.agent_id,
    thread: input.causation.thread,
    model,
    system: prompt.text,
    messages: [{ role: 'user', content: userMessage }],
    round: 0,
    status: 'waiting-for-tools',
    pending: [],
    response_to: responseTo(input.trigger),
    user_message: userMessage,
    trigger_id: input.trigger.id,
    request_id: task.requestId,
    answer_tags: [...task.correlationTags],
    ...(prompt.dropped.length > 0 ? { context_dropped: prompt.dropped } : {}),
  };
  const tools = def.max_tool_rounds > 0 ? await toolSpecs(def, workspace, deps.store) : [];
  return step(input, deps, conversation, tools);
}

/**
 * What a context agent's one model call is made of — model, system prompt (instructions, `context` markdown, the
 * assembled context fitted to the budget, and `extra` sections such as sub-agents' results) and the user message —
 * for the calls the modes make without tools (`#shared/core/agents/modes.ts`: plan, build, an orchestration's
 * final step).
 */
export async function contextPrompt(
  input: ExecutionInput<AgentDefinition>,
  deps: Pick<AgentExecutorDeps, 'store' | 'tokenizers'>,
  spec: ContextSpec,
  task: AgentTask,
  extra: readonly { key: string; value: unknown }[] = [],
  /** The user message when it is not the trigger's (an orchestration's final step: the request that started it). */
  user?: string,
): Promise<{ model: string; system: string; user: string; dropped: string[] }> {
  const model = agentModel(spec) ?? DEFAULT_AGENT_MODEL;
  const withExtra =
    extra.length === 0
      ? input
      : {
          ...input,
          context: { ...Object.fromEntries(extra.map((e) => [e.key, e.value])), ...input.context },
        };
  const prompt = await systemPrompt(input.definition, withExtra, spec, model, deps.tokenizers);
  return {
    model,
    system: prompt.text,
    user: user ?? (await userMessageOf(input, deps.store, task)),
    dropped: prompt.dropped,
  };
}

/** One model call on the conversation; then tool requests, or the final answer. */
async function step(
  input: ExecutionInput<AgentDefinition>,
  deps: AgentExecutorDeps,
  conversation: AgentConversation,
  tools: LlmToolSpec[],
): Promise<ExecutionResult> {
  const def = input.definition;
  const mayCallTools = conversation.round < def.max_tool_rounds;
  // Past the round limit the tools stay offered when the conversation already used them (Bedrock drops tool
  // history from a request without tools), but further calls are not honoured: the turn ends.
  const offerTools = mayCallTools || conversation.round > 0 ? tools : [];
  const response = await deps.llm.generate({
    model: conversation.model,
    system: conversation.system,
    messages: conversation.messages,
    ...(offerTools.length > 0 ? { tools: offerTools } : {}),
    ...((def.temperature ?? def.llm?.temperature) !== undefined
      ? { temperature: def.temperature ?? def.llm?.temperature }
      : {}),
    ...(def.response_schema !== undefined ? { responseSchema: def.response_schema } : {}),
    signal: input.signal,
  });

  if (response.toolCalls.length > 0 && mayCallTools) {
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
      return step(input, deps, answered, tools);
    }
    const pending = accepted.map(({ call, index }) => ({
      requestId: requestIdFor(def.agent_id, input.trigger.id, input.trigger.version, round, index),
      toolCallId: call.id,
      tool: call.name,
    }));
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
      const requestId = pending[n]?.requestId ?? '';
      return {
        schema_name: TOOL_REQUEST_SCHEMA,
        title: `${def.agent_id} asks ${call.name}`,
        tags: ['tool:request', requestTag(requestId), threadTag(conversation.thread)],
        context: {
          tool: call.name,
          input: call.input ?? {},
          requestId,
          requestedBy: def.agent_id,
          thread: conversation.thread,
          round,
        },
      };
    });
    return { outputs: [...requests, conversationOutput(next)] };
  }
  if (def.response_schema === undefined) return { outputs: finalOutputs(input, conversation, response) };

  const output = structuredOutput(def.response_schema, response.text);
  const planned = await plannedWrites(def, conversation, output, grantsFor(input, deps));
  for (const r of planned.refused) {
    (deps.log ?? silentLog).warn('agent refused a write: it may not write this', {
      agentId: def.agent_id,
      at: r.at,
      schemaName: r.schema_name,
      reason: r.reason,
      thread: conversation.thread,
    });
  }
  const refusedWrites = [...(conversation.refused_writes ?? []), ...planned.refused];
  if (planned.refused.length > 0 && conversation.writes_sent_back !== true) {
    // Tell the model once what was not written and why, and take its answer again (nothing of this one is
    // written): a structured answer has no tool-call ids to answer with failed results, so the refusals go back
    // as the next user message. Once per turn, so a model that insists costs one extra call, not a loop.
    const again: AgentConversation = {
      ...conversation,
      messages: [
        ...conversation.messages,
        { role: 'assistant', content: response.text },
        { role: 'user', content: refusalFeedback(planned.refused) },
      ],
      refused_writes: refusedWrites,
      writes_sent_back: true,
    };
    return step(input, deps, again, tools);
  }
  return {
    outputs: finalOutputs(input, { ...conversation, refused_writes: refusedWrites }, response, {
      output,
      writes: planned.outputs,
    }),
  };
}

/** The agent's grants, with the orchestration config of its spec (definition or `yaml`). */
function grantsFor(input: ExecutionInput<AgentDefinition>, deps: AgentExecutorDeps): Grants {
  let orchestration: AgentSpec['orchestration'] | undefined;
  try {
    orchestration = agentSpec(
      input.definition,
      deps.parseYaml ? { parseYaml: deps.parseYaml } : {},
    ).orchestration;
  } catch (error) {
    // A spec that does not resolve names no agents or workflows: the agent is given none.
    if (!(error instanceof ValidationError)) throw error;
  }
  return grantsOf(input.definition, orchestration, input.trigger.workspace, deps.store);
}

function refusalFeedback(refused: readonly Refusal[]): string {
  return [
    'Nothing of your last answer was written, because these parts of it are not allowed:',
    ...refused.map((r) => `- ${r.at} (${r.schema_name}): ${r.reason}`),
    'Answer again, with only what you may write and request.',
  ].join('\n');
}

function finalOutputs(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  response: LlmResponse,
  structured?: { output: Record<string, unknown>; writes: OutputBreadcrumb[] },
): OutputBreadcrumb[] {
  const def = input.definition;
  let message = response.text;
  const output = structured?.output;
  const extra: OutputBreadcrumb[] = structured?.writes ?? [];
  if (output !== undefined) {
    message =
      firstString(output, ['response_text', 'message', 'answer', 'text', 'content', 'response']) ??
      response.text;
  }
  if (message.trim() === '' && response.toolCalls.length > 0) {
    message = `(stopped after ${conversation.round} tool rounds, the limit)`;
  }
  const answered: AgentConversation = {
    ...conversation,
    messages: [...conversation.messages, { role: 'assistant', content: message }],
    status: 'answered',
    pending: [],
  };
  return [
    {
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id}: ${message.slice(0, 80)}`,
      tags: [
        'agent:response',
        `agent:${def.agent_id}`,
        threadTag(conversation.thread),
        requestTag(conversation.request_id ?? conversation.trigger_id),
        ...(conversation.answer_tags ?? []),
      ],
      context: {
        message,
        agent_id: def.agent_id,
        request_id: conversation.request_id ?? conversation.trigger_id,
        status: 'success',
        text: message,
        ...(conversation.context_dropped ? { context_dropped: conversation.context_dropped } : {}),
        thread: conversation.thread,
        response_to: conversation.response_to,
        trigger_id: conversation.trigger_id,
        tool_rounds: conversation.round,
        refused_tool_calls: conversation.refused_tool_calls ?? 0,
        refused_writes: conversation.refused_writes?.length ?? 0,
        ...(conversation.refused_writes?.length
          ? { refusals: conversation.refused_writes.slice(0, 20) }
          : {}),
        model: response.model,
        finish_reason: response.finishReason,
        usage: response.usage,
        ...(output !== undefined ? { output } : {}),
      },
    },
    conversationOutput(answered),
    ...extra,
  ];
}

async function continueWithToolResults(
  input: ExecutionInput<AgentDefinition>,
  deps: AgentExecutorDeps,
): Promise<ExecutionResult> {
  const def = input.definition;
  const workspace = input.trigger.workspace;
  const response = asObject(input.trigger.context);
  const requestId = stringField(response, ['request_id', 'requestId']);
  if (requestId === undefined) return { outputs: [] };
  const id = conversationId(def.agent_id, input.causation.thread);
  let stored: Breadcrumb;
  try {
    stored = await deps.store.get(workspace, id);
  } catch (error) {
    // A response to a request this agent made outside a conversation (e.g. seed 002's tools_to_invoke).
    if (error instanceof NotFoundError) return { outputs: [] };
    throw error;
  }
  const conversation = stored.context as unknown as AgentConversation;
  if (
    conversation.status !== 'waiting-for-tools' ||
    !conversation.pending.some((p) => p.requestId === requestId)
  ) {
    return { outputs: [] }; // late or duplicate response of an earlier round
  }

  const results: LlmToolResult[] = [];
  for (const pending of conversation.pending) {
    const answer =
      pending.requestId === requestId
        ? response
        : await latestResponse(deps.store, workspace, pending.requestId);
    if (answer === undefined) return { outputs: [] }; // another response of this round is still to come
    results.push(toolResult(pending, answer));
  }

  // Claim the round: of several responses that each see the round complete, only one continues.
  const me = `${input.trigger.id}@${input.trigger.version}`;
  if (conversation.continued?.round === conversation.round && conversation.continued.by !== me)
    return { outputs: [] };
  if (conversation.continued?.by !== me) {
    try {
      await deps.store.update(
        workspace,
        id,
        { context: { ...stored.context, continued: { round: conversation.round, by: me } } },
        { principal: input.principal, expectedVersion: stored.version, causation: input.causation },
      );
    } catch (error) {
      if (error instanceof VersionConflictError) return { outputs: [] };
      throw error;
    }
  }

  const next: AgentConversation = {
    ...conversation,
    messages: [...conversation.messages, { role: 'tool', results: inCallOrder(conversation, results) }],
    pending: [],
    refused: undefined,
  };
  const tools = await toolSpecs(def, workspace, deps.store);
  return step(input, deps, next, tools);
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
): Promise<Record<string, unknown> | undefined> {
  const page = await store.list({
    workspace,
    schema_name: TOOL_RESPONSE_SCHEMA,
    tag: requestTag(requestId),
    limit: 1,
  });
  if (page.items.length === 0) return undefined;
  // The context view, as for the trigger: a tool result's excluded fields never reach the model.
  const [view] = await store.contextViews(workspace, page.items.slice(0, 1));
  return view ? asObject(view.context) : undefined;
}

function conversationOutput(conversation: AgentConversation): OutputBreadcrumb {
  return {
    schema_name: AGENT_CONVERSATION_SCHEMA,
    title: `${conversation.agent_id} conversation ${conversation.thread}`,
    tags: ['agent:conversation', `agent:${conversation.agent_id}`, threadTag(conversation.thread)],
    context: conversation as unknown as Record<string, unknown>,
    upsertId: conversationId(conversation.agent_id, conversation.thread),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs: the user message, the system prompt, the tools

/** The breadcrumb this turn answers: the user message behind an agent.context.v1, else the trigger. */
async function userMessageOf(
  input: ExecutionInput<AgentDefinition>,
  store: BreadcrumbStore,
  task: AgentTask,
): Promise<string> {
  const trigger = input.trigger;
  const c = asObject(trigger.context);
  if (trigger.schema_name === AGENT_REQUEST_SCHEMA) {
    const parts = [
      ...(task.message !== undefined ? [task.message] : []),
      ...(task.input !== undefined ? [`Input:\n${JSON.stringify(task.input, null, 2)}`] : []),
    ];
    return parts.length > 0 ? parts.join('\n\n') : '(an empty request)';
  }
  if (trigger.schema_name === AGENT_CONTEXT_SCHEMA && typeof c.trigger_event_id === 'string') {
    try {
      const source = await store.getContextView(trigger.workspace, c.trigger_event_id);
      const text = messageText(source.context);
      if (text !== undefined) return text;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    const copied = stringField(c, ['user_message']);
    if (copied !== undefined) return copied;
    throw new NonRetriableError(`the user message ${c.trigger_event_id} named by the context is gone`);
  }
  return (
    messageText(c) ??
    // Seed 002: the breadcrumb itself is the message.
    `Breadcrumb context:\nTitle: ${trigger.title}\nTags: ${trigger.tags.join(', ')}\nContext: ${JSON.stringify(trigger.context, null, 2)}`
  );
}

function messageText(context: unknown): string | undefined {
  return stringField(asObject(context), ['message', 'content', 'text', 'prompt', 'question']);
}

/**
 * The system prompt: the definition's `system_prompt`, its `context` markdown, then the context sources in
 * priority order (the context builder's formatted context, then each context selector's section), fitted to the
 * token budget when a tokenizer is given.
 */
async function systemPrompt(
  def: AgentDefinition,
  input: ExecutionInput<AgentDefinition>,
  spec: ContextSpec,
  model: string,
  tokenizers: Tokenizers | undefined,
): Promise<{ text: string; dropped: string[] }> {
  const fixed = [
    def.system_prompt ?? `You are ${def.agent_id}, a helpful assistant.`,
    ...(spec.markdown !== undefined && spec.markdown.trim() !== '' ? [spec.markdown] : []),
  ];
  const sources: ContextSource[] = [];
  const trigger = asObject(input.trigger.context);
  if (input.trigger.schema_name === AGENT_CONTEXT_SCHEMA && typeof trigger.formatted_context === 'string') {
    sources.push({ key: 'formatted_context', text: trigger.formatted_context });
  }
  for (const [key, value] of Object.entries(input.context)) {
    if (key === 'trigger') continue;
    // With a tokenizer the budget decides what fits; without one, each section is capped in characters.
    sources.push({
      key,
      text: formatSection(key, value, tokenizers ? Number.POSITIVE_INFINITY : MAX_SECTION_CHARS),
    });
  }
  const fitted = tokenizers
    ? await fitContext(fixed, sources, spec.budgetTokens, model, tokenizers)
    : { sources, dropped: [] as string[] };
  const parts = [...fixed];
  if (fitted.sources.length > 0) parts.push(`# Context\n\n${fitted.sources.map((s) => s.text).join('\n\n')}`);
  return { text: parts.join('\n\n'), dropped: [...fitted.dropped] };
}

export function formatSection(key: string, value: unknown, maxChars = MAX_SECTION_CHARS): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? 'null');
  return `## ${key}\n${text.length > maxChars ? `${text.slice(0, maxChars)}\n…(truncated)` : text}`;
}

/**
 * The tools offered (and the only ones the agent may call): the definition's `tools` (all of the workspace's tool
 * definitions when absent), described by their `tool.def.v1` (description, input_schema), else as "the <name>
 * tool" taking any object.
 */
async function toolSpecs(
  def: AgentDefinition,
  workspace: string,
  store: BreadcrumbStore,
): Promise<LlmToolSpec[]> {
  // The same rule decides what a structured answer may request (`#shared/core/executor/allow-list.ts`).
  const defs = await listToolDefinitions(workspace, store);
  return givenToolNames(def, defs).map((name) => {
    const d = defs.get(name);
    const schema = asObject(d?.input_schema ?? { type: 'object' });
    return {
      name,
      description: (typeof d?.description === 'string' ? d.description : undefined) ?? `the ${name} tool`,
      inputSchema: { type: 'object', ...schema },
    };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Structured output

function structuredOutput(schema: Record<string, unknown>, text: string): Record<string, unknown> {
  let value: unknown;
  try {
    // The LLM port hands back the bare JSON (adapters take it out of fences and chatter), so parse it as is.
    value = JSON.parse(text);
  } catch {
    throw new NonRetriableError(
      `the model's answer is not the JSON its response_schema asks for: ${text.slice(0, 200)}`,
    );
  }
  let issues: FieldIssue[];
  try {
    // Keyed by the schema itself: agents sharing one response_schema share its compiled form.
    issues = compileJsonSchema(
      `response_schema:${JSON.stringify(schema)}`,
      schema,
      'response_schema',
    ).validate(value);
  } catch (error) {
    if (!(error instanceof InvalidJsonSchemaError)) throw error;
    throw new NonRetriableError(`response_schema is not a usable JSON Schema: ${error.problem}`, {
      cause: error,
    });
  }
  if (issues.length > 0) {
    throw new NonRetriableError(`the model's answer does not match response_schema: ${formatIssues(issues)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new NonRetriableError('response_schema must describe a JSON object');
  }
  return value as Record<string, unknown>;
}

/**
 * What a structured answer asks to write (`create_breadcrumbs`, seed 002's `tools_to_invoke`), each checked by
 * the allow-list (`#shared/core/executor/allow-list.ts`): what the agent may not write is refused, never written.
 */
async function plannedWrites(
  def: AgentDefinition,
  conversation: AgentConversation,
  output: Record<string, unknown>,
  grants: Grants,
): Promise<{ outputs: OutputBreadcrumb[]; refused: Refusal[] }> {
  const outputs: OutputBreadcrumb[] = [];
  const refused: Refusal[] = [];
  const created = Array.isArray(output.create_breadcrumbs) ? output.create_breadcrumbs : [];
  if (created.length > MAX_CREATED_BREADCRUMBS) {
    throw new NonRetriableError(
      `create_breadcrumbs lists ${created.length}; at most ${MAX_CREATED_BREADCRUMBS} per answer`,
    );
  }
  for (const [i, raw] of created.entries()) {
    const b = asObject(raw);
    const schema = typeof b.schema_name === 'string' ? b.schema_name : AGENT_NOTE_SCHEMA;
    const tags = Array.isArray(b.tags) ? b.tags.filter((t): t is string => typeof t === 'string') : [];
    const context = asObject(b.context);
    const reason = await grants.refusal({ schema_name: schema, tags, context });
    if (reason !== undefined) {
      refused.push({ at: `create_breadcrumbs[${i}]`, schema_name: schema, reason });
      continue;
    }
    outputs.push({
      schema_name: schema,
      title: typeof b.title === 'string' ? b.title : `${def.agent_id} note`,
      tags: [...tags, `agent:${def.agent_id}`],
      // A tool request is the agent's own: its answer comes back to this agent, whoever the context named.
      context: schema === TOOL_REQUEST_SCHEMA ? { ...context, requestedBy: def.agent_id } : context,
    });
  }
  const invoked = Array.isArray(output.tools_to_invoke) ? output.tools_to_invoke : [];
  for (const [i, raw] of invoked.slice(0, MAX_CREATED_BREADCRUMBS).entries()) {
    const t = asObject(raw);
    const reason = await grants.refusal({ schema_name: TOOL_REQUEST_SCHEMA, context: { tool: t.tool } });
    if (reason !== undefined || typeof t.tool !== 'string') {
      refused.push({
        at: `tools_to_invoke[${i}]`,
        schema_name: TOOL_REQUEST_SCHEMA,
        reason: reason ?? 'no tool named',
      });
      continue;
    }
    const requestId = `req-${sha(`${conversation.trigger_id}\u0000invoke\u0000${i}`).slice(0, 24)}`;
    outputs.push({
      schema_name: TOOL_REQUEST_SCHEMA,
      title: `${def.agent_id} asks ${t.tool}`,
      tags: ['tool:request', requestTag(requestId), threadTag(conversation.thread)],
      context: {
        tool: t.tool,
        input: asObject(t.input),
        requestId,
        requestedBy: def.agent_id,
        thread: conversation.thread,
        ...(typeof t.reason === 'string' ? { reason: t.reason } : {}),
      },
    });
  }
  return { outputs, refused };
}

// ---------------------------------------------------------------------------------------------------------------

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function stringField(o: Record<string, unknown>, names: readonly string[]): string | undefined {
  for (const n of names) {
    const v = o[n];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return undefined;
}

function firstString(o: Record<string, unknown>, names: readonly string[]): string | undefined {
  return stringField(o, names);
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
