/**
 * Agent executor. Triggered by the agent queue (events routed by each agent definition's rule: its
 * agent.context.v1 / user messages, and tool.response.v1 answers to its own requests). Reads the definition, the
 * trigger, its context and the agent's conversation; calls the model (Bedrock, OpenRouter, OpenAI, Ollama,
 * OpenAI-compatible, or the offline model; keys from Secrets Manager; a bare model id runs on
 * CRUMBS_DEFAULT_LLM_PROVIDER); writes tool.request.v1, agent.conversation.v1 and agent.response.v1 (or
 * agent.error.v1) breadcrumbs.
 */
import { LlmRouter } from '#shared/adapters/llm/llm-router.ts';
import { LlmEnvSchema, parseEnv } from '#shared/config.ts';
import { createAgentExecutor } from '#shared/core/executor/agent-executor.ts';
import { ENV } from '#shared/topology.ts';
import { createExecutorHandler } from '../wiring/executor-handler.ts';

const llm = new LlmRouter({ defaultProvider: parseEnv(LlmEnvSchema)[ENV.defaultLlmProvider] });

export const handler = createExecutorHandler('agent', {
  implementation: ({ store, log }) => createAgentExecutor({ store, llm, log }),
  // Abort model calls 10 s before the Lambda timeout: the message is retried instead of timing out mid-write.
  timeoutEarlyInMillis: 10_000,
});
