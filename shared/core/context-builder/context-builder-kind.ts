/**
 * The context-builder kind (`context.config.v1`), seed 003's "smart proxy": an `update_triggers` match (say a
 * `user.message.v1`) → one `agent.context.v1` per consumer, upserted, which is what the consumer agent subscribes
 * to. The pipeline has already fetched the config's `sources` (vector / recent / latest / tagged, in parallel, via
 * `contextSelectors`); this step shapes them:
 *
 *   { consumer_id, trigger_event_id, trigger_schema, session?, user_message, sources: { <key>: … },
 *     formatted_context, token_estimate }
 *
 * - One breadcrumb per consumer and `session:<x>` tag: its id is derived from (consumer, session), so every message
 *   of a session updates the same record. Tags: the config's `output.tags`, `consumer:<consumer_id>` (what the
 *   agent's selector needs, added when the config forgot it) and the session tag.
 * - `formatted_context` is cut to `formatting.max_tokens`; `sources` keeps the data, with arrays shortened if the
 *   record would outgrow the breadcrumb context limit. Also here: the `context.build` and `llm` built-in tools.
 */
import { createHash } from 'node:crypto';
import { type Breadcrumb, type ContextView, jsonBytes } from '#shared/domain/breadcrumb.ts';
import { type ContextConfig, ContextSourceSchema, sourceToSelector } from '#shared/domain/definitions.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { llmToolConfig, llmToolModel } from '#shared/domain/llm-tool.ts';
import { AGENT_CONTEXT_SCHEMA } from '#shared/domain/protocol.ts';
import { STREAM_ID_PATTERN } from '#shared/domain/streaming.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import type { VectorSearch } from '#shared/ports/vector-search.ts';
import type { Tool } from '#shared/tools/tool.ts';
import { ERROR_ANSWERS } from '../executor/answers.ts';
import { assembleContext, triggerText } from '../executor/context-assembly.ts';
import type { ExecutionInput, ExecutorKindImplementation, OutputBreadcrumb } from '../executor/contract.ts';

export const DEFAULT_MAX_TOKENS = 4000;
export const CHARS_PER_TOKEN = 4;
/** `sources` beyond this (serialized) are shortened: the record must stay under the 350 KB context limit. */
const MAX_SOURCES_BYTES = 200 * 1024;
const MESSAGE_FIELDS = ['message', 'content', 'text', 'prompt', 'question', 'query'];

export function contextBreadcrumbId(consumerId: string, session: string | undefined): string {
  const hash = createHash('sha256')
    .update(`${consumerId}\u0000${session ?? ''}`)
    .digest('hex');
  return `agctx-${hash.slice(0, 32)}`;
}

export function createContextBuilderKind(): ExecutorKindImplementation<ContextConfig> {
  return {
    async execute(input) {
      return { outputs: [buildContextOutput(input)] };
    },
    errorOutput: ERROR_ANSWERS['context-builder'],
  };
}

export function buildContextOutput(input: ExecutionInput<ContextConfig>): OutputBreadcrumb {
  const def = input.definition;
  const trigger = input.trigger;
  const triggerContext = asObject(trigger.context);
  const sessionTag = trigger.tags.find((t) => t.startsWith('session:'));
  const session = sessionTag?.slice('session:'.length);
  const sources: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input.context)) if (key !== 'trigger') sources[key] = value;

  const maxTokens = def.formatting?.max_tokens ?? DEFAULT_MAX_TOKENS;
  const formatted = formatContext(sources, maxTokens * CHARS_PER_TOKEN);
  const userMessage = messageOf(triggerContext);
  // A chat message that streams its answer (`stream_id`) passes the key on to the agent that answers it.
  const streamId =
    typeof triggerContext.stream_id === 'string' && STREAM_ID_PATTERN.test(triggerContext.stream_id)
      ? triggerContext.stream_id
      : undefined;
  const tags = [...def.output.tags];
  const consumerTag = `consumer:${def.consumer_id}`;
  if (!tags.includes(consumerTag)) tags.push(consumerTag);
  if (sessionTag && !tags.includes(sessionTag)) tags.push(sessionTag);

  return {
    schema_name: AGENT_CONTEXT_SCHEMA,
    title: `Context for ${def.consumer_id}${session ? ` (session ${session})` : ''}`,
    tags,
    upsertId: contextBreadcrumbId(def.consumer_id, session),
    context: {
      consumer_id: def.consumer_id,
      trigger_event_id: trigger.id,
      trigger_version: trigger.version,
      trigger_schema: trigger.schema_name,
      ...(session !== undefined ? { session } : {}),
      user_message: userMessage ?? null,
      ...(streamId !== undefined ? { stream_id: streamId } : {}),
      sources: fitSources(sources),
      formatted_context: formatted,
      token_estimate: Math.ceil(formatted.length / CHARS_PER_TOKEN),
    },
  };
}

/** `## <key>` sections, in source order, cut to `maxChars` in total (`max_tokens` × ≈ 4 characters a token). */
export function formatContext(sources: Record<string, unknown>, maxChars: number): string {
  let out = '';
  for (const [key, value] of Object.entries(sources)) {
    const body = typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? 'null');
    const section = `${out ? '\n\n' : ''}## ${key}\n${body}`;
    if (out.length + section.length <= maxChars) {
      out += section;
      continue;
    }
    const marker = '\n…(truncated to the token budget)';
    const room = maxChars - out.length - marker.length;
    if (room > key.length + 8) out += `${section.slice(0, room)}${marker}`;
    break;
  }
  return out;
}

/** Drops the oldest entries of array sources (they are newest first) until the sources fit. */
function fitSources(sources: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...sources };
  while (jsonBytes(out) > MAX_SOURCES_BYTES) {
    const longest = Object.entries(out)
      .filter((e): e is [string, unknown[]] => Array.isArray(e[1]) && e[1].length > 0)
      .sort((a, b) => jsonBytes(b[1]) - jsonBytes(a[1]))[0];
    if (!longest) {
      const biggest = Object.entries(out).sort((a, b) => jsonBytes(b[1]) - jsonBytes(a[1]))[0];
      if (!biggest) break;
      out[biggest[0]] = { omitted: `larger than ${MAX_SOURCES_BYTES / 1024} KB` };
      continue;
    }
    out[longest[0]] = longest[1].slice(0, Math.floor(longest[1].length / 2));
  }
  return out;
}

function messageOf(context: Record<string, unknown>): string | undefined {
  for (const f of MESSAGE_FIELDS) if (typeof context[f] === 'string') return context[f];
  return undefined;
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

// ---------------------------------------------------------------------------------------------------------------
// Built-in tools: `context.build` and `llm`

export interface ContextBuildInput {
  sources: unknown[];
  /** The text `vector` sources are near to. */
  query?: string;
  max_tokens?: number;
}

/** `context.build`: fetches sources (as in context.config.v1) on demand and answers with the formatted context. */
export function contextBuildTool(vectorSearch?: VectorSearch): Tool<ContextBuildInput, unknown> {
  return {
    name: 'context.build',
    description:
      'Fetches breadcrumbs by source (method vector | recent | latest | tagged, schema_name, tags, limit, nn) ' +
      'and returns them with a formatted context trimmed to max_tokens.',
    inputSchema: {
      type: 'object',
      properties: {
        sources: { type: 'array', items: { type: 'object' }, minItems: 1, maxItems: 20 },
        query: { type: 'string' },
        max_tokens: { type: 'integer', minimum: 1, maximum: 100000 },
      },
      required: ['sources'],
    },
    async run(input, ctx) {
      const selectors = input.sources.map((raw, i) => {
        const parsed = ContextSourceSchema.safeParse(raw);
        if (!parsed.success) {
          throw new NonRetriableError(
            `sources[${i}]: ${parsed.error.issues.map((x) => `${x.path.join('.')} ${x.message}`).join('; ')}`,
          );
        }
        const source = parsed.data;
        // Refused here rather than answered as an `{ error }` entry in a successful answer: the caller's
        // request is wrong, and a model reading the answer should learn that, not see an empty source.
        if (source.method === 'vector' && !input.query?.trim()) {
          throw new NonRetriableError(
            `sources[${i}]: a vector source needs the text it is near to in "query"`,
          );
        }
        const fetchTag =
          source.all_tags?.[0] ?? (source.any_tags?.length === 1 ? source.any_tags[0] : undefined);
        if (source.method !== 'vector' && source.schema_name === undefined && fetchTag === undefined) {
          throw new NonRetriableError(
            `sources[${i}]: a ${source.method} source needs schema_name, all_tags or a single any_tags tag to fetch by`,
          );
        }
        return sourceToSelector(source);
      });
      const now = new Date().toISOString();
      const pseudoTrigger: Breadcrumb = {
        id: 'context-build-query',
        workspace: ctx.workspace,
        schema_name: 'context.query.v1',
        title: '',
        tags: [],
        context: { query: input.query ?? '' },
        version: 1,
        checksum: '',
        created_at: now,
        updated_at: now,
        created_by: ctx.principal,
        updated_by: ctx.principal,
      };
      const view: ContextView = { ...pseudoTrigger, context: pseudoTrigger.context };
      const assembled = await assembleContext(
        { workspace: ctx.workspace, trigger: pseudoTrigger, triggerView: view, selectors },
        { store: withContextViews(ctx.store), vectorSearch },
      );
      const { trigger: _trigger, ...sources } = assembled;
      const formatted = formatContext(sources, (input.max_tokens ?? DEFAULT_MAX_TOKENS) * CHARS_PER_TOKEN);
      return {
        sources: fitSources(sources),
        formatted_context: formatted,
        token_estimate: Math.ceil(formatted.length / CHARS_PER_TOKEN),
      };
    },
  };
}

function withContextViews(store: BreadcrumbStore): ExecutorStore {
  const candidate = store as Partial<ExecutorStore>;
  if (typeof candidate.contextViews === 'function') return store as ExecutorStore;
  return Object.assign(Object.create(store) as BreadcrumbStore, {
    contextViews: (workspace: string, records: readonly Breadcrumb[]) =>
      Promise.all(records.map((r) => store.getContextView(workspace, r.id))),
  });
}

export interface LlmToolInput {
  prompt: string;
  system?: string;
  model?: string;
  temperature?: number;
  response_schema?: Record<string, unknown>;
}

/**
 * `llm`: one model call as a tool (no tools of its own). The model is the definition's (`config.model`, or one of
 * `config.allowed_models` a request names in `input.model`; `shared/domain/llm-tool.ts`); the call answers to the
 * tool's `config.budget` and the workspace's daily budget on the governed path (`shared/core/model-calls/`).
 */
export function llmTool(llm: LlmClient): Tool<LlmToolInput, unknown> {
  return {
    name: 'llm',
    description:
      'One LLM call: prompt (+ optional system, temperature, response_schema, and a model the definition allows) → text.',
    inputSchema: {
      type: 'object',
      properties: {
        prompt: { type: 'string', minLength: 1 },
        system: { type: 'string' },
        model: { type: 'string' },
        temperature: { type: 'number', minimum: 0, maximum: 2 },
        response_schema: { type: 'object' },
      },
      required: ['prompt'],
    },
    async run(input, ctx) {
      const chosen = llmToolModel(llmToolConfig(ctx.config), input.model);
      if ('refused' in chosen) throw new NonRetriableError(chosen.refused);
      const response = await llm.generate({
        model: chosen.model,
        system: input.system ?? 'You are a helpful assistant.',
        messages: [{ role: 'user', content: input.prompt }],
        ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
        ...(input.response_schema !== undefined ? { responseSchema: input.response_schema } : {}),
        signal: ctx.signal,
      });
      return {
        text: response.text,
        model: response.model,
        finish_reason: response.finishReason,
        usage: response.usage,
      };
    },
  };
}

/** `context.build` and `llm`, for the catalog of a handler that runs tools. */
export function contextTools(deps: { llm: LlmClient; vectorSearch?: VectorSearch | undefined }): Tool[] {
  return [contextBuildTool(deps.vectorSearch) as Tool, llmTool(deps.llm) as Tool];
}

export { triggerText };
