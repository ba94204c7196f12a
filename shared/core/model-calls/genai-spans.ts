/**
 * The span of a model call in OpenTelemetry's GenAI semantic conventions, **pinned to v1.37.0** (the first with
 * `gen_ai.provider.name`, replacing `gen_ai.system`; the conventions are still "Development" and renamed
 * attributes between versions: a backend reading another version may show fewer of them). `governedLlm` opens it
 * around the provider call, so every model call crumbs makes — whichever room makes it — is traced without its call
 * site doing anything.
 *
 *   span name   `chat <request model>`, kind CLIENT, the child of the executor's trigger span
 *   attributes  gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, gen_ai.request.max_tokens,
 *               gen_ai.request.temperature, gen_ai.output.type, gen_ai.response.model,
 *               gen_ai.response.finish_reasons, gen_ai.usage.input_tokens, gen_ai.usage.output_tokens
 *               (the counts `llm_usage` records, from the same record), error.type on failure
 *   content     gen_ai.system_instructions, gen_ai.input.messages, gen_ai.output.messages — only when the operator
 *               turns it on (`CRUMBS_OTEL_CAPTURE_CONTENT`), and only through `recordContent`, the one place content
 *               reaches a span: a guardrail's masking is applied there (`TraceContentOptions.mask`).
 *
 * And the span of a tool's execution (`execute_tool <name>`, `gen_ai.tool.name`, `gen_ai.tool.call.id`), which the
 * tool kind opens around a tool request.
 */
import { type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { activeTracer } from '#shared/adapters/tracing/otel-context.ts';
import type { LlmCallRecord } from '#shared/domain/llm-usage.ts';
import type { LlmFinishReason, LlmMessage, LlmRequest, LlmResponse } from '#shared/ports/llm.ts';

/** The version of the GenAI semantic conventions these spans follow. */
export const GENAI_SEMCONV_VERSION = '1.37.0';

/** The prompt and completion of one call, in the conventions' message shapes (what `recordContent` records). */
export interface GenAiContent {
  systemInstructions: { type: 'text'; content: string }[];
  inputMessages: GenAiMessage[];
  outputMessages: GenAiMessage[];
}

export interface GenAiMessage {
  role: 'user' | 'assistant' | 'tool';
  parts: GenAiPart[];
  finish_reason?: string;
}

export type GenAiPart =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: unknown };

export interface TraceContentOptions {
  /** Record prompts and completions on spans (the operator's setting). @default false */
  readonly capture: boolean;
  /**
   * The guardrail's masking, applied to everything recorded: what it returns is recorded, nothing else; undefined
   * records no content for the call. Without one, content is recorded as sent and received.
   */
  readonly mask?: ((content: GenAiContent) => GenAiContent | undefined) | undefined;
}

const PROVIDERS: Readonly<Record<string, string>> = {
  bedrock: 'aws.bedrock',
  openai: 'openai',
  // An OpenAI-compatible server speaks OpenAI's API: the conventions name the API's provider.
  'openai-compatible': 'openai',
  anthropic: 'anthropic',
  offline: 'crumbs.offline',
};

const FINISH_REASONS: Readonly<Record<LlmFinishReason, string>> = {
  stop: 'stop',
  'tool-calls': 'tool_call',
  length: 'length',
  'content-filter': 'content_filter',
  error: 'error',
  other: 'other',
};

function split(model: string): { provider: string; id: string } {
  const at = model.indexOf('/');
  return at < 0 ? { provider: model, id: model } : { provider: model.slice(0, at), id: model.slice(at + 1) };
}

/**
 * Runs `call` (one provider call) inside a `chat` span when a crumbs span is active; `finish` gives the record the
 * call's usage was priced into, so the span's token counts are the ones `llm_usage` holds.
 */
export async function inModelCallSpan(
  request: LlmRequest,
  content: TraceContentOptions | undefined,
  call: () => Promise<{ response: LlmResponse; record: LlmCallRecord }>,
): Promise<LlmResponse> {
  const tracer: Tracer | undefined = activeTracer();
  if (tracer === undefined) return (await call()).response;
  const { provider, id } = split(request.model);
  return tracer.startActiveSpan(
    `chat ${id}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': PROVIDERS[provider] ?? provider,
        'gen_ai.request.model': id,
        'gen_ai.output.type': request.responseSchema !== undefined ? 'json' : 'text',
        ...(request.maxOutputTokens !== undefined
          ? { 'gen_ai.request.max_tokens': request.maxOutputTokens }
          : {}),
        ...(request.temperature !== undefined ? { 'gen_ai.request.temperature': request.temperature } : {}),
        'crumbs.llm.model': request.model,
      },
    },
    async (span) => {
      try {
        const { response, record } = await call();
        span.setAttributes({
          'gen_ai.response.model': split(response.model).id,
          'gen_ai.response.finish_reasons': [FINISH_REASONS[response.finishReason]],
          'gen_ai.usage.input_tokens': record.input_tokens,
          'gen_ai.usage.output_tokens': record.output_tokens,
          ...(record.cost_nusd !== undefined ? { 'crumbs.llm.cost_nusd': record.cost_nusd } : {}),
        });
        if (content?.capture) recordContent(span, contentOf(request, response), content.mask);
        return response;
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * The one place prompt and completion reach a span. `mask` (a guardrail's) sees all of it first; what it returns
 * is recorded, and when it returns nothing, nothing is.
 */
export function recordContent(
  span: Pick<Span, 'setAttributes'>,
  content: GenAiContent,
  mask: TraceContentOptions['mask'],
): void {
  const shown = mask === undefined ? content : mask(content);
  if (shown === undefined) return;
  span.setAttributes({
    'gen_ai.system_instructions': JSON.stringify(shown.systemInstructions),
    'gen_ai.input.messages': JSON.stringify(shown.inputMessages),
    'gen_ai.output.messages': JSON.stringify(shown.outputMessages),
  });
}

function contentOf(request: LlmRequest, response: LlmResponse): GenAiContent {
  return {
    systemInstructions: request.system === '' ? [] : [{ type: 'text', content: request.system }],
    inputMessages: request.messages.map(messageOf),
    outputMessages: [
      {
        role: 'assistant',
        parts: [
          ...(response.text !== '' ? [{ type: 'text' as const, content: response.text }] : []),
          ...response.toolCalls.map((c) => ({
            type: 'tool_call' as const,
            id: c.id,
            name: c.name,
            arguments: c.input,
          })),
        ],
        finish_reason: FINISH_REASONS[response.finishReason],
      },
    ],
  };
}

function messageOf(message: LlmMessage): GenAiMessage {
  if (message.role === 'user') return { role: 'user', parts: [{ type: 'text', content: message.content }] };
  if (message.role === 'assistant') {
    return {
      role: 'assistant',
      parts: [
        ...(message.content !== '' ? [{ type: 'text' as const, content: message.content }] : []),
        ...(message.toolCalls ?? []).map((c) => ({
          type: 'tool_call' as const,
          id: c.id,
          name: c.name,
          arguments: c.input,
        })),
      ],
    };
  }
  return {
    role: 'tool',
    parts: message.results.map((r) => ({
      type: 'tool_call_response' as const,
      id: r.toolCallId,
      response: r.output,
    })),
  };
}

function failed(span: Span, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  span.setAttribute('error.type', e.name);
}

/**
 * Runs one tool execution inside an `execute_tool` span when a crumbs span is active (the tool kind's trigger).
 * `callId` is the model's tool call id the request answers, when a model asked for it.
 */
export async function inToolSpan<T>(
  tool: { name: string; callId?: string | undefined; description?: string | undefined },
  work: () => Promise<T>,
): Promise<T> {
  const tracer = activeTracer();
  if (tracer === undefined) return work();
  return tracer.startActiveSpan(
    `execute_tool ${tool.name}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool.name,
        'gen_ai.tool.type': 'function',
        ...(tool.callId !== undefined ? { 'gen_ai.tool.call.id': tool.callId } : {}),
        ...(tool.description !== undefined ? { 'gen_ai.tool.description': tool.description } : {}),
      },
    },
    async (span) => {
      try {
        return await work();
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
