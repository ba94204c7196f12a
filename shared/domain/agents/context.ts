/**
 * `context` agents (the default type): an LLM agent whose system prompt is built from its `context` markdown and
 * its context selectors within a token budget (`yaml.context_budget_tokens`). It takes no transport.
 */
import { DEFAULT_MODEL_ID } from '../llm-model.ts';
import type { AgentTypeSchema } from './agent-type.ts';

/** Default token budget of a context agent's system prompt plus assembled context. */
export const DEFAULT_CONTEXT_BUDGET_TOKENS = 16_000;

export interface ContextSpecFields {
  markdown?: string;
  budgetTokens: number;
}

export const contextAgentType: AgentTypeSchema<'context', ContextSpecFields, never, never> = {
  type: 'context',
  runner: 'agent',
  spec: ({ def, config }) => ({
    ...(def.context !== undefined ? { markdown: def.context } : {}),
    budgetTokens: config.context_budget_tokens ?? DEFAULT_CONTEXT_BUDGET_TOKENS,
  }),
  model: (_spec, llm) => llm.model ?? DEFAULT_MODEL_ID,
};
