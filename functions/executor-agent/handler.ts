/**
 * Agent executor for context agents (seed 004's `context` type, the LLM agents crumbs always had). Triggered by
 * the agent queue (events routed by each context agent's rule: the agent.request.v1 naming it, its
 * agent.context.v1 / user messages, and tool.response.v1 answers to its own requests). Reads the definition, the
 * trigger, its context and the agent's conversation; fits the context to the token budget (the tokenizer's rank
 * tables load on first need, from the package installed beside the bundle); calls the model (Bedrock, OpenRouter,
 * OpenAI, Ollama, OpenAI-compatible, or the offline model; keys from Secrets Manager; a bare model id runs on
 * CRUMBS_DEFAULT_LLM_PROVIDER); writes tool.request.v1, agent.conversation.v1 and agent.response.v1 (or
 * agent.error.v1) breadcrumbs — streaming the answer to the request's delta channel (AppSync Events) when the
 * request has a stream_id —, and human.request.v1 approvals of tool calls that need one, whose expiry is a
 * one-time schedule (EventBridge Scheduler). Agents of the other types run in executor-agent-remote and
 * executor-agent-sandbox. It also runs the memory room's extraction (`memory.def.v1` rules: people's turns and
 * `memory.extract.v1` requests → `memory.record.v1`, `memory.extraction.v1`; idle timers through the Scheduler).
 */
import { defaultDocumentClient } from '#shared/adapters/dynamodb/client.ts';
import { sealGuard } from '#shared/adapters/dynamodb/workspace-seal.ts';
import { deltaChannelFromEnv } from '#shared/adapters/events/appsync-publisher.ts';
import { schedulerTimersFrom } from '#shared/adapters/scheduler/scheduler-timers.ts';
import { TiktokenTokenizers } from '#shared/adapters/tokenizer/tiktoken.ts';
import { LlmEnvSchema, parseEnv, TableEnvSchema, TimersEnvSchema } from '#shared/config.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { createContextAgent } from '#shared/core/agents/context/context-agent.ts';
import type { ExecutorKindImplementation, KindDependencies } from '#shared/core/executor/contract.ts';
import { metered } from '#shared/core/executor/usage-record.ts';
import { channelFor } from '#shared/core/streaming/channel.ts';
import { DeltaStream } from '#shared/core/streaming/delta-stream.ts';
import { resolveModel } from '#shared/domain/llm-model.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { createMemoryKind } from '#shared/rooms/memory/extraction.ts';
import { recallForPrompts } from '#shared/rooms/memory/recall.ts';
import { ENV } from '#shared/topology.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';
import { guardrailsFromEnv } from '../wiring/guardrails-from-env.ts';
import { llmFromEnv } from '../wiring/llm-from-env.ts';

const tokenizers = new TiktokenTokenizers();
const settings = parseEnv(LlmEnvSchema);
const tableName = parseEnv(TableEnvSchema)[ENV.tableName];
// No approval expiry is set for a workspace its deletion has sealed.
const timers = schedulerTimersFrom(parseEnv(TimersEnvSchema), sealGuard(defaultDocumentClient(), tableName));
// The delta channel streamed answers go to (AppSync Events; the local events server in `crumbs dev`).
const deltaChannel = deltaChannelFromEnv();

export const handler = createExecutorHandler('agent', {
  // `metered`: the invocation's model calls ride in one of its outputs (`llm_usage`).
  implementations: ({ store, log, clock, vectorSearch }) => ({
    agent: contextAgents({ store, log, clock, vectorSearch }),
    // The memory room's extraction (`memory.def.v1`): a model call like a context agent's, on the same governed path.
    memory: metered(
      createMemoryKind({ store, log, clock, timers, llm: llmFromEnv(process.env, { tokenizers, log }) }),
    ) as ExecutorKindImplementation<unknown>,
  }),
  // Abort model calls 10 s before the Lambda timeout: the message is retried instead of timing out mid-write.
  timeoutEarlyInMillis: 10_000,
});

function contextAgents({
  store,
  log,
  clock,
  vectorSearch,
}: KindDependencies): ExecutorKindImplementation<unknown> {
  // Every call on the governed path: the invocation's request budget, the workspace's daily budget.
  const llm = llmFromEnv(process.env, { tokenizers, log });
  // The prices the turn's cost budget counts with.
  const prices = settings[ENV.llmPrices];
  // A definition's model as its calls are priced: aliases and the default provider resolved, as the calls are.
  const priceModel = (model: string) => {
    try {
      const resolved = resolveModel(
        model,
        settings[ENV.defaultLlmProvider],
        'model',
        settings[ENV.modelAliases],
      );
      return `${resolved.provider}/${resolved.model}`;
    } catch {
      return model;
    }
  };
  // A streaming request's channel (`stream_id`): the words of a conversation, the final event of any answer.
  const streams =
    deltaChannel === undefined
      ? undefined
      : async (workspace: string, streamId: string) =>
          new DeltaStream({ channel: await channelFor(workspace, streamId), publisher: deltaChannel, log });
  const context = createContextAgent({
    store,
    llm,
    log,
    tokenizers,
    parseYaml,
    prices,
    priceModel,
    timers,
    ...(streams !== undefined ? { streams } : {}),
    // The agent's guardrail policies at each point its turn crosses (`shared/rooms/guardrails/`).
    guardrails: guardrailsFromEnv(store, log),
  });
  return metered(
    createAgentKind({
      types: { context },
      store,
      clock,
      // Recall of the memory room for agents that declare `memory` (by recency, and saying so, with embeddings off).
      recall: recallForPrompts({
        store,
        vectorSearch,
        embeddingsOff: process.env[ENV.embeddings]?.trim() === 'none',
      }),
      llm,
      tokenizers,
      parseYaml,
      log,
      ...(streams !== undefined ? { streams } : {}),
    }),
  ) as ExecutorKindImplementation<unknown>;
}
