/**
 * A context agent's prompt: the user message and the system prompt of its model call.
 *
 * The user message is the trigger's: an `agent.request.v1`'s message and input; for an `agent.context.v1` the
 * `user.message.v1` named by `trigger_event_id` (seed 003); otherwise the trigger's `message` / `content` / `text`,
 * else the whole breadcrumb (seed 002). The system prompt is the definition's `system_prompt`, its `context`
 * markdown, then the assembled context in priority order — the context builder's `formatted_context`, then a
 * `## <key>` section per context selector — fitted to the prompt budget (`prompt-budget.ts`: lowest-priority
 * sources dropped first, counted with the model family's tokenizer); without a tokenizer each section is capped in
 * characters. The modes' calls without tools (`../modes.ts`) are built from the same prompt (`contextPrompt`).
 */
import { type ContextSource, fitContext } from '#shared/core/agents/context/prompt-budget.ts';
import type { AgentTask } from '#shared/core/agents/contract.ts';
import { type AgentSpec, agentModel } from '#shared/domain/agent-spec.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NonRetriableError, NotFoundError } from '#shared/domain/errors.ts';
import { AGENT_CONTEXT_SCHEMA, AGENT_REQUEST_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import type { ExecutionInput } from '../../executor/contract.ts';
import { asObject, stringField } from './fields.ts';

/** When a model string is absent from the definition: the default provider's default model. */
export const DEFAULT_AGENT_MODEL = 'default';
const MAX_SECTION_CHARS = 8000;

export type ContextSpec = Extract<AgentSpec, { type: 'context' }>;

/**
 * What a context agent's one model call is made of — model, system prompt (instructions, `context` markdown, the
 * assembled context fitted to the prompt budget, and `extra` sections such as sub-agents' results) and the user
 * message — for the calls the modes make without tools (`../modes.ts`: plan, build, an orchestration's final step).
 */
export async function contextPrompt(
  input: ExecutionInput<AgentDefinition>,
  deps: { readonly store: BreadcrumbStore; readonly tokenizers?: Tokenizers },
  spec: ContextSpec,
  task: AgentTask,
  extra: readonly { key: string; value: unknown }[] = [],
  /** The user message when it is not the trigger's (an orchestration's final step: the request that started it). */
  user?: string,
  /** Sections after the assembled context: the first the budget drops (a conversation's history). */
  trailing: readonly { key: string; value: unknown }[] = [],
): Promise<{ model: string; system: string; user: string; dropped: string[] }> {
  const model = agentModel(spec) ?? DEFAULT_AGENT_MODEL;
  const withExtra =
    extra.length === 0 && trailing.length === 0
      ? input
      : {
          ...input,
          context: {
            ...Object.fromEntries(extra.map((e) => [e.key, e.value])),
            ...input.context,
            ...Object.fromEntries(trailing.map((e) => [e.key, e.value])),
          },
        };
  const prompt = await systemPrompt(input.definition, withExtra, spec, model, deps.tokenizers);
  return {
    model,
    system: prompt.text,
    user: user ?? (await userMessageOf(input, deps.store, task)),
    dropped: prompt.dropped,
  };
}

/** The breadcrumb this turn answers: the user message behind an agent.context.v1, else the trigger. */
export async function userMessageOf(
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
 * prompt budget when a tokenizer is given.
 */
export async function systemPrompt(
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
