/**
 * The agent kind of the executor pipeline, dispatching on the definition's `type` (seed 004): it reads the
 * definition's per-type configuration (`agentSpec`, the `yaml` text parsed), reads the trigger into a task
 * (`agentTaskOf`: an `agent.request.v1`, or the triggers agents always had), and runs the implementation of that
 * type among those this function was given. A function carries only the types it serves (their SDKs are heavy):
 * a definition of another type reaching it is answered with an error naming the type.
 *
 * The answer: one `agent.response.v1 { agent_id, request_id, status, output?, text?, error?, logs? }` tagged
 * `agent:response`, `agent:<id>`, `request:<request_id>` and the request's correlation tags, first among the
 * outputs, so it takes the pipeline's first output id — the id a failure's error answer takes too, which makes
 * "one answer per request" hold under duplicate delivery and crashes alike. The context type writes its own
 * answer (it may come several tool rounds later). A definition that does not validate for its type, a request
 * that is not usable, or a type's NonRetriableError is answered by `errorOutput` (`ERROR_ANSWERS.agent`): an
 * `agent.response.v1` with status `error` for a request.
 */
import type { AgentSpec } from '#shared/domain/agent-spec.ts';
import { agentSpec } from '#shared/domain/agent-spec.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError, ValidationError } from '#shared/domain/errors.ts';
import { actorOf, type MemoryUse } from '#shared/domain/memory.ts';
import {
  AGENT_RESPONSE_SCHEMA,
  replyToTag,
  requestTag,
  TOOL_RESPONSE_SCHEMA,
  threadTag,
} from '#shared/domain/protocol.ts';
import type { YamlParser } from '#shared/domain/yaml.ts';
import type { BreadcrumbStore, Clock } from '#shared/ports/breadcrumb-store.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import { ERROR_ANSWERS, threadOf } from '../executor/answers.ts';
import type { ExecutionInput, ExecutorKindImplementation, OutputBreadcrumb } from '../executor/contract.ts';
import { outputId } from '../executor/outputs.ts';
import type { OpenStream } from './context/answer-stream.ts';
import { isApprovalAnswer } from './context/approvals.ts';
import { ownToolRequest } from './context/tool-rounds.ts';
import { invocationLimits } from './context/turn-budget.ts';
import {
  type AgentAnswer,
  type AgentOutcome,
  type AgentRun,
  type AgentTask,
  type AgentType,
  type AgentTypes,
  agentTaskOf,
} from './contract.ts';
import { conversationTag } from './conversation-history.ts';
import { modeOf, runMode } from './modes.ts';

export interface AgentKindDeps {
  /** The agent types this function runs. */
  readonly types: AgentTypes;
  /** The workspace's breadcrumbs (modes read context, orchestrations read and write their runs). */
  readonly store: BreadcrumbStore;
  readonly clock: Clock;
  /**
   * The model plan and build call, and orchestrations plan with; absent: those are answered as errors. Its calls
   * answer to the invocation's budgets on the one path every model call takes (`modelBudget` below,
   * `shared/core/model-calls/`).
   */
  readonly llm?: LlmClient;
  readonly tokenizers?: Tokenizers;
  readonly parseYaml?: YamlParser;
  readonly log?: Log;
  /**
   * Opens a streaming request's channel (`context/answer-stream.ts`): a context agent's conversation streams its
   * words; every other answer (a plan, a build, another type's) sends the final event alone, so a client waiting on
   * the stream learns at once that the answer is stored.
   */
  readonly streams?: OpenStream;
  /**
   * The memory room's recall (`shared/rooms/memory/recall.ts`) for agents that declare `memory`: the prompt section
   * (its key and text) of what is remembered about the turn's person, or undefined. Absent: no recall.
   */
  readonly recall?: (query: {
    workspace: string;
    actor: string;
    text: string;
    use: MemoryUse;
  }) => Promise<{ key: string; text: string } | undefined>;
}

export function createAgentKind(deps: AgentKindDeps): ExecutorKindImplementation<AgentDefinition> {
  return {
    execute: (input) => executeAgent(input, deps),
    errorOutput: ERROR_ANSWERS.agent,
    // Every type's model calls (plans, builds, orchestration planning, a tool agent's argument extraction, a
    // context turn's calls) answer to the agent's budget, tightened by the share of a run its request carries.
    modelBudget: (input) => invocationLimits(input.definition, input.trigger),
    ownRequestOf: async ({ definition, trigger }) =>
      ownToolRequest(definition, trigger) ??
      (definition.agent_id !== undefined &&
      !isApprovalAnswer(trigger) &&
      trigger.tags.some((t) => t.startsWith(replyToTag('agent:')))
        ? (await orchestration()).ownRunRequest(definition, trigger)
        : undefined),
  };
}

/**
 * The orchestration module, loaded the first time an orchestration needs it: it brings the workflow engine, which
 * most agent invocations never use, and would otherwise put executor-agent-mcp over its load budget
 * (`npm run bench:bundles`). Inside one esbuild bundle the deferred init is safe for this module (unlike the MCP
 * SDK's): `test/infra/orchestration-bundle.test.ts` runs an orchestration through the bundled, lazily loaded module.
 */
function orchestration() {
  return import('./orchestration-agent.ts');
}

/**
 * The turn's input with what the agent remembers about the person (a `memory` section, the first the prompt budget
 * gives up after the definition's own context); unchanged when no person wrote the turn or nothing is recalled.
 */
async function withRecall(
  input: ExecutionInput<AgentDefinition>,
  task: AgentTask,
  deps: AgentKindDeps,
): Promise<ExecutionInput<AgentDefinition>> {
  const use = input.definition.memory;
  const actor = actorOf(input.trigger.created_by);
  if (use === undefined || actor === undefined) return input;
  const c = input.trigger.context;
  const fromContext =
    c !== null && typeof c === 'object' && !Array.isArray(c)
      ? ['message', 'content', 'text', 'question']
          .map((k) => (c as Record<string, unknown>)[k])
          .find((v) => typeof v === 'string')
      : undefined;
  const text = task.message ?? (typeof fromContext === 'string' ? fromContext : input.trigger.title);
  const section = await deps.recall?.({ workspace: input.trigger.workspace, actor, text, use });
  return section === undefined
    ? input
    : { ...input, context: { ...input.context, [section.key]: section.text } };
}

async function executeAgent(input: ExecutionInput<AgentDefinition>, deps: AgentKindDeps) {
  let spec: AgentSpec;
  try {
    spec = agentSpec(input.definition, deps.parseYaml ? { parseYaml: deps.parseYaml } : {});
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new NonRetriableError(`the agent definition is not usable: ${error.message}`, { cause: error });
  }
  const type = deps.types[spec.type] as AgentType | undefined;
  if (type === undefined) {
    throw new NonRetriableError(
      `this function does not run ${spec.type} agents (it runs ${Object.keys(deps.types).join(', ')})`,
    );
  }
  const task = agentTaskOf(input.trigger);
  const log = deps.log ?? silentLog;
  if (input.definition.memory !== undefined && input.trigger.schema_name !== TOOL_RESPONSE_SCHEMA) {
    input = await withRecall(input, task, deps);
  }
  const run: AgentRun = {
    spec,
    definition: input.definition,
    task,
    workspace: input.trigger.workspace,
    principal: input.principal,
    execution: input,
    signal: input.signal,
    log,
  };
  const modeDeps = {
    store: deps.store,
    ...(deps.llm !== undefined ? { llm: deps.llm } : {}),
    ...(deps.tokenizers !== undefined ? { tokenizers: deps.tokenizers } : {}),
    ...(deps.parseYaml !== undefined ? { parseYaml: deps.parseYaml } : {}),
  };
  const trigger = input.trigger;
  // A person's answer to one of a context agent's tool-call approvals (tagged `reply-to:agent:<id>`, like run
  // messages, so the agent's rule already delivers it): the turn that asked continues, whatever the mode.
  if (isApprovalAnswer(trigger)) {
    const outcome = await type.run(run as never);
    return { outputs: outcome.kind === 'outputs' ? [...outcome.outputs] : [] };
  }
  // An answer, a response or a control addressed to one of this agent's orchestration runs.
  if (trigger.tags.includes(replyToTag(`agent:${input.definition.agent_id}`))) {
    return (await orchestration()).onRunMessage(run, type, { ...modeDeps, clock: deps.clock, log });
  }
  // A tool round of a context agent's conversation continues it, whatever mode the agent defaults to.
  let outcome: AgentOutcome;
  if (trigger.schema_name === TOOL_RESPONSE_SCHEMA) {
    outcome = await type.run(run as never);
  } else {
    const mode = modeOf(spec, task, input.definition.agent_id);
    if (task.orchestration !== undefined) {
      return (await orchestration()).orchestrate(run, type, mode, { ...modeDeps, clock: deps.clock, log });
    }
    // A context agent's conversation streams its own words and final event (`context/answer-stream.ts`).
    if (task.streamId !== undefined && !(spec.type === 'context' && mode === 'converse')) {
      finalOnly(input, task.streamId, deps);
    }
    outcome = await runMode(run, type, mode, modeDeps);
  }
  if (outcome.kind === 'outputs') return { outputs: [...outcome.outputs] };
  // The type's other outputs (the plan or deliverable, a function's created breadcrumbs) are written first, so
  // they exist when the answer that names them appears; every output keeps the id it has always had — the answer
  // the pipeline's first output id, which an error answer to this trigger would take (one answer per request),
  // the others the ids after it.
  const idAt = (index: number) =>
    outputId('agent', input.definitionRef.id, input.trigger.id, input.trigger.version, index);
  return {
    outputs: [
      ...(outcome.outputs ?? []).map((o, i) =>
        o.id !== undefined || o.upsertId !== undefined ? o : { ...o, id: idAt(i + 1) },
      ),
      { ...answerOutput(input, task, spec.type, outcome.answer, outcome.details), id: idAt(0) },
    ],
  };
}

/**
 * The stream of an answer no model writes word by word here: only its final event, once the answer (the first
 * output id: `idAt(0)`, or the error answer that takes it) is written.
 */
function finalOnly(input: ExecutionInput<AgentDefinition>, streamId: string, deps: AgentKindDeps): void {
  const open = deps.streams;
  if (open === undefined) return;
  const answerId = outputId('agent', input.definitionRef.id, input.trigger.id, input.trigger.version, 0);
  input.afterWrite?.(async ({ failure }) => {
    const sink = await open(input.trigger.workspace, streamId);
    await sink.final(failure !== undefined ? 'failed' : 'completed', answerId);
  });
}

/** The `agent.response.v1` for an answer (see the header). */
export function answerOutput(
  input: ExecutionInput<AgentDefinition>,
  task: AgentTask,
  type: string,
  answer: AgentAnswer,
  details: Record<string, unknown> = {},
): OutputBreadcrumb {
  const def = input.definition;
  const thread = threadOf(input.trigger);
  const summary =
    answer.status === 'error'
      ? `failed: ${answer.error}`
      : (answer.text ?? JSON.stringify(answer.output ?? null));
  return {
    schema_name: AGENT_RESPONSE_SCHEMA,
    title: `${def.agent_id}: ${summary.slice(0, 80)}`,
    tags: [
      'agent:response',
      `agent:${def.agent_id}`,
      threadTag(thread),
      requestTag(task.requestId),
      ...task.correlationTags,
      // Found again by the conversation's later plans and builds (conversation-history.ts).
      ...(task.conversationId !== undefined ? [conversationTag(task.conversationId)] : []),
    ],
    context: {
      agent_id: def.agent_id,
      request_id: task.requestId,
      type,
      ...answer,
      ...details,
      // `message` as context agents answer, so chats and callers that read it see every type's answer.
      message:
        answer.status === 'error'
          ? `error: ${answer.error}`
          : (answer.text ?? JSON.stringify(answer.output ?? null)),
      thread,
      response_to: input.trigger.id,
      trigger_id: input.trigger.id,
      ...(task.mode !== undefined ? { mode: task.mode } : {}),
    },
  };
}
