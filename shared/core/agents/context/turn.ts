/**
 * The context agent type's turn (seed 004): one LLM call per invocation, never waiting inside the Lambda. A turn
 * starts from any trigger but a `tool.response.v1`, with the prompt of `prompt.ts`; the model answers, asks for
 * tools (`tool-rounds.ts`: the requests are written and the responses continue the turn in later invocations), or,
 * with `response_schema`, answers in JSON (`structured-output.ts`). After `max_tool_rounds` rounds the model is
 * called without tools and must answer. Before each call the turn's budget is checked (`turn-budget.ts`).
 *
 * The final answer is an `agent.response.v1` `{message, agent_id, request_id, status, text, thread, response_to,
 * tool_rounds, …}` tagged `agent:response`, `thread:<thread>`, `request:<request_id>` and the request's
 * correlation tags (`run:`, `step:`, `reply-to:`), which the conversation keeps across tool rounds; the tool
 * requests made on the way never carry them. `contextTurn` is what the agent-type dispatcher (`../agent-kind.ts`,
 * through `context-agent.ts`) calls; `createContextAgentKind` runs context agents as the whole agent kind (for a
 * function or test that runs only context agents).
 */
import { type AgentTask, agentTaskOf } from '#shared/core/agents/contract.ts';
import { agentModel, agentSpec, outputTokenCap } from '#shared/domain/agent-spec.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { isRetriable, NonRetriableError } from '#shared/domain/errors.ts';
import type { PriceTable } from '#shared/domain/llm-usage.ts';
import {
  AGENT_RESPONSE_SCHEMA,
  HUMAN_RESPONSE_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { YamlParser } from '#shared/domain/yaml.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { GuardBlock, Guardrails, InvocationGuard } from '#shared/ports/guardrails.ts';
import type { LlmAttachment, LlmClient, LlmMessage, LlmResponse } from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { OneTimeTimer, Timers } from '#shared/ports/timers.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { attachmentsOfContext } from '#shared/rooms/attachments/model-input.ts';
import { ERROR_ANSWERS, responseTo } from '../../executor/answers.ts';
import type {
  ExecutionInput,
  ExecutionResult,
  ExecutorKindImplementation,
  OutputBreadcrumb,
} from '../../executor/contract.ts';
import { type AnswerStream, cancelledOutputs, type OpenStream, openAnswerStream } from './answer-stream.ts';
import { answerApproval } from './approvals.ts';
import { stringField } from './fields.ts';
import { type ContextSpec, DEFAULT_AGENT_MODEL, systemPrompt, userMessageOf } from './prompt.ts';
import { structuredAnswer } from './structured-output.ts';
import {
  type AgentConversation,
  conversationOutput,
  NO_TOOLS,
  type OfferedTools,
  ownToolRequest,
  toolRound,
  toolSpecs,
  turnAnswerTags,
  turnOf,
} from './tool-rounds.ts';
import {
  afterCall,
  BudgetExceededError,
  beforeCall,
  budgetStopOutputs,
  turnBudgetOf,
} from './turn-budget.ts';
import { continuedConversation, failedTurnOutputs } from './turn-state.ts';

/** The turn's user message, with the files its context refers to (the attachments room resolves them at the call). */
function userTurn(content: string, attachments: LlmAttachment[]): LlmMessage {
  return attachments.length > 0 ? { role: 'user', content, attachments } : { role: 'user', content };
}

export interface ContextAgentDeps {
  store: BreadcrumbStore;
  llm: LlmClient;
  /** Refused tool calls are logged here (`agent refused a tool call`). @default silent */
  log?: Log;
  /** Counts tokens to fit the prompt into its budget (`prompt-budget.ts`); without it the prompt is not fitted. */
  tokenizers?: Tokenizers;
  /** Reads `yaml` text (budget, agent card); without it only object-form `yaml` is read. */
  parseYaml?: YamlParser;
  /** Prices a call for the turn's cost budget (`CRUMBS_LLM_PRICES` over the defaults). @default the defaults */
  prices?: PriceTable;
  /** A model string as calls are priced (`turn-budget.ts`). */
  priceModel?: (model: string) => string;
  /** Sets the expiry timers of tool-call approvals (`approvals.ts`); without it approvals never expire. */
  timers?: Timers;
  /** Opens a streaming request's channel (`answer-stream.ts`); without it no answer is streamed. */
  streams?: OpenStream;
  /**
   * The check points of the agent's guardrails (`#shared/ports/guardrails.ts`): the person's input and the model's
   * input before each call, the model's output after it, the streamed answer. Without it nothing is checked.
   */
  guardrails?: Guardrails;
}

export function createContextAgentKind(deps: ContextAgentDeps): ExecutorKindImplementation<AgentDefinition> {
  return {
    execute: (input) => guarded(input, deps, () => executeAgent(input, deps)),
    errorOutput: ERROR_ANSWERS.agent,
    ownRequestOf: ({ definition, trigger }) => ownToolRequest(definition, trigger),
  };
}

async function executeAgent(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
): Promise<ExecutionResult> {
  if (input.trigger.schema_name === TOOL_RESPONSE_SCHEMA) return continueWithToolResults(input, deps);
  if (input.trigger.schema_name === HUMAN_RESPONSE_SCHEMA) return continueWithApproval(input, deps);
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
  deps: ContextAgentDeps,
  spec: ContextSpec,
  task: AgentTask,
): Promise<ExecutionResult> {
  return guarded(input, deps, () => newTurn(input, deps, spec, task));
}

async function newTurn(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
  spec: ContextSpec,
  task: AgentTask,
): Promise<ExecutionResult> {
  if (input.trigger.schema_name === TOOL_RESPONSE_SCHEMA) return continueWithToolResults(input, deps);
  // A person's answer to one of the turn's tool-call approvals (the agent kind routes only those here).
  if (input.trigger.schema_name === HUMAN_RESPONSE_SCHEMA) return continueWithApproval(input, deps);
  const def = input.definition;
  const workspace = input.trigger.workspace;
  // The model the rule manager reports in the definition's status (`agentModel`): one answer to "which model".
  const model = agentModel(spec) ?? DEFAULT_AGENT_MODEL;
  const [userMessage, prompt, tools] = await Promise.all([
    userMessageOf(input, deps.store, task),
    systemPrompt(def, input, spec, model, deps.tokenizers),
    def.max_tool_rounds > 0 ? toolSpecs(def, workspace, deps.store) : NO_TOOLS,
  ]);
  const conversation: AgentConversation = {
    agent_id: def.agent_id,
    thread: input.causation.thread,
    model,
    system: prompt.text,
    messages: [userTurn(userMessage, attachmentsOfContext(input.context))],
    round: 0,
    status: 'waiting-for-tools',
    pending: [],
    response_to: responseTo(input.trigger),
    user_message: userMessage,
    trigger_id: input.trigger.id,
    request_id: task.requestId,
    turn: turnOf(input.trigger),
    answer_tags: [...task.correlationTags],
    ...(prompt.dropped.length > 0 ? { context_dropped: prompt.dropped } : {}),
    budget: turnBudgetOf(def, input.trigger),
    ...(task.streamId !== undefined ? { stream_id: task.streamId } : {}),
  };
  return step(input, deps, conversation, tools);
}

/** One model call on the conversation; then tool requests, or the final answer. */
async function step(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
  unchecked: AgentConversation,
  offered: OfferedTools,
): Promise<ExecutionResult> {
  const def = input.definition;
  // What the model reads is checked first; what is stored of the turn is what the model read (masked).
  const guard = await guardOf(input, deps, unchecked);
  const checked = guard === undefined ? { conversation: unchecked } : await guard.modelInput(unchecked);
  const asked = checked.conversation;
  if (checked.blocked !== undefined) {
    (await answerStreamOf(input, asked, deps))?.answered();
    // The record keeps nothing of what was blocked: only what was checked and let through before.
    const from = unchecked.guarded ?? 0;
    const kept: AgentConversation = {
      ...asked,
      messages: asked.messages.slice(0, from),
      ...(from === 0 ? { user_message: `(blocked by guardrail ${checked.blocked.policy})`, system: '' } : {}),
      guarded: from,
    };
    return { outputs: blockedOutputs(input, kept, checked.blocked) };
  }
  const tools = offered.specs;
  const mayCallTools = asked.round < def.max_tool_rounds;
  // Past the round limit the tools stay offered when the conversation already used them (Bedrock drops tool
  // history from a request without tools), but further calls are not honoured: the turn ends.
  const offerTools = mayCallTools || asked.round > 0 ? tools : [];
  // A call that would cross a budget is not made: the turn answers why (`turn-budget.ts`).
  const budget = await beforeCall(asked, offerTools, deps);
  const stream = await answerStreamOf(input, asked, deps);
  if ('stop' in budget) {
    stream?.answered();
    return { outputs: budgetStopOutputs(input, asked, budget.stop) };
  }
  const outputCap = outputTokenCap(def.llm?.max_tokens, budget.maxOutputTokens);
  const call = deps.llm.generate({
    model: asked.model,
    system: asked.system,
    messages: asked.messages,
    ...(offerTools.length > 0 ? { tools: offerTools } : {}),
    ...(outputCap !== undefined ? { maxOutputTokens: outputCap } : {}),
    ...((def.temperature ?? def.llm?.temperature) !== undefined
      ? { temperature: def.temperature ?? def.llm?.temperature }
      : {}),
    ...(def.response_schema !== undefined ? { responseSchema: def.response_schema } : {}),
    signal: stream?.signal ?? input.signal,
    ...(stream !== undefined ? { onDelta: stream.onDelta } : {}),
  });
  let response: LlmResponse;
  try {
    response = await call;
    if (guard !== undefined) {
      const out = await guard.modelOutput(response);
      response = out.response;
      if (out.blocked !== undefined) {
        stream?.answered();
        return { outputs: blockedOutputs(input, { ...asked, guarded: asked.messages.length }, out.blocked) };
      }
    }
  } catch (error) {
    // The one path every model call takes refused it (the workspace's daily budget): the turn answers why.
    if (error instanceof BudgetExceededError) {
      stream?.answered();
      return { outputs: budgetStopOutputs(input, asked, error.stop) };
    }
    // A person cancelled the streaming call (the abort is what failed it): the turn answers so.
    const cancellation = stream?.cancelled();
    if (stream === undefined || cancellation === undefined) throw error;
    stream.answered();
    return { outputs: cancelledOutputs(input, asked, cancellation) };
  }
  const conversation = afterCall(asked, response, deps.prices);

  if (response.toolCalls.length > 0 && mayCallTools) {
    stream?.toolRound(response.toolCalls.map((c) => c.name));
    const round = toolRound(input, deps, conversation, response, offered);
    if ('again' in round) return step(input, deps, round.again, offered);
    await setExpiryTimers(round.timers ?? [], deps);
    return { outputs: round.outputs };
  }
  if (def.response_schema === undefined) {
    stream?.answered();
    return { outputs: finalOutputs(input, conversation, response, undefined, guard) };
  }

  const structured = await structuredAnswer(input, deps, conversation, response, def.response_schema);
  if ('again' in structured) return step(input, deps, structured.again, offered);
  stream?.answered();
  return { outputs: finalOutputs(input, structured.conversation, response, structured, guard) };
}

/** One stream per invocation, however many model calls its rounds make (`answer-stream.ts`). */
const invocationStreams = new WeakMap<object, Promise<AnswerStream | undefined>>();

function answerStreamOf(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  deps: ContextAgentDeps,
): Promise<AnswerStream | undefined> {
  const opened = invocationStreams.get(input);
  if (opened !== undefined) return opened;
  const open = deps.streams;
  const stream = (async () => {
    // The answer's stream goes through the guardrails (`buffer` holds back what a detector could still match).
    const guard = await guardOf(input, deps, conversation);
    const guardedOpen: OpenStream | undefined =
      open === undefined || guard === undefined
        ? open
        : async (workspace, streamId) => guard.guardSink(await open(workspace, streamId));
    return openAnswerStream(
      input,
      conversation,
      guardedOpen === undefined
        ? undefined
        : { store: deps.store, open: guardedOpen, ...(deps.log !== undefined ? { log: deps.log } : {}) },
    );
  })();
  invocationStreams.set(input, stream);
  return stream;
}

/**
 * The expiry of each approval the round asks for, set before the approvals are written: a timer whose approval
 * never got written finds nothing to expire (`approvals.ts`), while an approval without its timer would wait on.
 */
async function setExpiryTimers(timers: readonly OneTimeTimer[], deps: ContextAgentDeps): Promise<void> {
  if (timers.length === 0) return;
  if (deps.timers === undefined) {
    (deps.log ?? silentLog).warn('approval expiry not set: this function has no timers', {
      timers: timers.map((t) => t.id),
    });
    return;
  }
  const set = deps.timers;
  await Promise.all(timers.map((timer) => set.set(timer)));
}

/**
 * A person's answer to an approval: approved, the tool request; rejected (or expired), the round continues here
 * when the rejection was its last missing result (the agent is not triggered by the result it wrote itself).
 */
async function continueWithApproval(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
): Promise<ExecutionResult> {
  const decided = await answerApproval(input, deps);
  if (decided.rejection === undefined) return { outputs: decided.outputs };
  const [next, tools] = await Promise.all([
    continuedConversation(decided.rejection, deps),
    toolSpecs(input.definition, input.trigger.workspace, deps.store),
  ]);
  if (next === undefined) return { outputs: decided.outputs };
  if ('outputs' in next) return { outputs: [...decided.outputs, ...next.outputs] };
  const continued = await continueTurn(input, deps, next.conversation, tools);
  return { outputs: [...decided.outputs, ...continued.outputs] };
}

async function continueWithToolResults(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
): Promise<ExecutionResult> {
  // The tools are listed while the conversation is read (a listing wasted on a late response costs less than
  // the wait).
  const [next, tools] = await Promise.all([
    continuedConversation(input, deps),
    toolSpecs(input.definition, input.trigger.workspace, deps.store),
  ]);
  if (next === undefined) return { outputs: [] };
  if ('outputs' in next) return { outputs: next.outputs };
  return continueTurn(input, deps, next.conversation, tools);
}

/**
 * The next step of a turn an answer continues. A failure that will not pass is answered as the turn (its request's
 * tags, `failedTurnOutputs`): the pipeline's error answer would be tagged from the tool's answer, and a run
 * waiting on the turn's request would never hear of it.
 */
async function continueTurn(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
  conversation: AgentConversation,
  tools: OfferedTools,
): Promise<ExecutionResult> {
  try {
    return await step(input, deps, conversation, tools);
  } catch (error) {
    if (isRetriable(error, input.signal)) throw error;
    const message = error instanceof Error ? error.message : String(error);
    (deps.log ?? silentLog).error('turn failed; answering its request with the error', {
      agentId: input.definition.agent_id,
      turn: conversation.turn,
      error: message,
    });
    return { outputs: failedTurnOutputs(input, conversation, message) };
  }
}

function finalOutputs(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  response: LlmResponse,
  structured?: { output: Record<string, unknown>; writes: OutputBreadcrumb[] },
  guard?: InvocationGuard,
): OutputBreadcrumb[] {
  const def = input.definition;
  let message = response.text;
  const output = structured?.output;
  const extra: OutputBreadcrumb[] = structured?.writes ?? [];
  if (output !== undefined) {
    message =
      stringField(output, ['response_text', 'message', 'answer', 'text', 'content', 'response']) ??
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
  // The conversation keeps what the model said (masked); the person reads it unmasked only where policies allow.
  if (guard !== undefined) message = guard.answerText(message);
  return [
    {
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id}: ${message.slice(0, 80)}`,
      tags: turnAnswerTags(def.agent_id, conversation),
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
        // Every model call of the turn, all its tool rounds: what a run counts against its budget.
        ...(conversation.budget !== undefined ? { turn_usage: conversation.budget.used } : {}),
        ...(output !== undefined ? { output } : {}),
      },
    },
    conversationOutput(answered),
    ...extra,
  ];
}

/** The guardrails of one invocation, read once however many model calls its rounds make. */
const invocationGuards = new WeakMap<object, Promise<InvocationGuard | undefined>>();
/** The request each guarded invocation answers, for its `guardrail.event.v1` records. */
const guardedRequests = new WeakMap<object, string>();

function guardOf(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
  conversation: Pick<AgentConversation, 'request_id' | 'trigger_id' | 'thread'>,
): Promise<InvocationGuard | undefined> {
  guardedRequests.set(input, conversation.request_id ?? conversation.trigger_id);
  let guard = invocationGuards.get(input);
  if (guard === undefined) {
    guard =
      deps.guardrails === undefined
        ? Promise.resolve(undefined)
        : deps.guardrails.forAgent({
            workspace: input.trigger.workspace,
            thread: conversation.thread,
            agent: input.definition,
            llm: deps.llm,
            handoff: input.trigger.created_by.startsWith('agent:'),
            signal: input.signal,
          });
    invocationGuards.set(input, guard);
  }
  return guard;
}

/** Runs an invocation and adds its guardrail interventions (`guardrail.event.v1`) after its outputs. */
async function guarded(
  input: ExecutionInput<AgentDefinition>,
  deps: ContextAgentDeps,
  run: () => Promise<ExecutionResult>,
): Promise<ExecutionResult> {
  if (deps.guardrails === undefined || guardedInvocations.has(input)) return run();
  guardedInvocations.add(input);
  const result = await run();
  const guard = await invocationGuards.get(input);
  if (guard === undefined) return result;
  const events = await guard.finish({
    requestId: guardedRequests.get(input) ?? input.trigger.id,
    agentVersion: input.definitionRef.version,
  });
  return { ...result, outputs: [...result.outputs, ...events] };
}
const guardedInvocations = new WeakSet<object>();

/** The answer of a turn a guardrail blocked: the policy's message, never the blocked text. */
function blockedOutputs(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  blocked: GuardBlock,
): OutputBreadcrumb[] {
  const def = input.definition;
  return [
    {
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id}: blocked by guardrail ${blocked.policy}`,
      tags: turnAnswerTags(def.agent_id, conversation),
      context: {
        agent_id: def.agent_id,
        request_id: conversation.request_id ?? conversation.trigger_id,
        status: 'blocked',
        message: blocked.message,
        text: blocked.message,
        guardrail: { policy: blocked.policy, action: 'block' },
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
