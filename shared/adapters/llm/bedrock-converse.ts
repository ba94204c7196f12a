/**
 * One Amazon Bedrock Converse call through the AWS SDK's BedrockRuntimeClient: the SDK signs with the function's
 * role (no keys in env), retries throttling with its own policy (`maxAttempts` on the client), and is what
 * `aws-sdk-client-mock` intercepts in tests.
 *
 * Structured output puts the schema in the system prompt rather than forcing a `json` tool. Forcing a tool needs
 * `toolChoice`, which Converse accepts only for some model families (Claude, Nova, Mistral Large) and answers with
 * a ValidationException for the rest; and agents offer their real tools beside a response schema, where a forced
 * tool would leave the model no way to call them. The prompt works on every model, with or without tools; the
 * caller validates the answer against the schema, so a model that ignores the instruction is reported, not missed.
 */
import { randomUUID } from 'node:crypto';
import {
  type BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  type Message,
  type Tool,
  type ToolUseBlock,
} from '@aws-sdk/client-bedrock-runtime';
import { asCrumbsError } from '#shared/domain/errors.ts';
import type {
  LlmFinishReason,
  LlmMessage,
  LlmRequest,
  LlmResponse,
  LlmToolCall,
  LlmUsage,
} from '#shared/ports/llm.ts';
import { abortedError, isAbort } from './call-errors.ts';
import { jsonText, withSchemaInstruction } from './structured-output.ts';
import { ToolNames, toolResultText } from './tool-wire.ts';

type Document = NonNullable<ToolUseBlock['input']>;

const STOP_REASONS: Record<string, LlmFinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool-calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  content_filtered: 'content-filter',
  guardrail_intervened: 'content-filter',
};

export async function bedrockConverse(
  client: BedrockRuntimeClient,
  modelId: string,
  request: LlmRequest,
): Promise<LlmResponse> {
  const model = `bedrock/${modelId}`;
  const names = new ToolNames();
  const tools = (request.tools ?? []).map(
    (spec): Tool => ({
      toolSpec: {
        name: names.encode(spec.name),
        // Converse refuses an empty description.
        ...(spec.description ? { description: spec.description } : {}),
        inputSchema: { json: spec.inputSchema as Document },
      },
    }),
  );
  const schema = request.responseSchema;
  const system = schema !== undefined ? withSchemaInstruction(request.system, schema) : request.system;
  const input: ConverseCommandInput = {
    modelId,
    messages: toConverseMessages(request.messages, names, tools.length > 0),
    ...(system.trim() !== '' ? { system: [{ text: system }] } : {}),
    ...(tools.length > 0 ? { toolConfig: { tools } } : {}),
    ...(request.temperature !== undefined || request.maxOutputTokens !== undefined
      ? {
          inferenceConfig: {
            ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
            ...(request.maxOutputTokens !== undefined ? { maxTokens: request.maxOutputTokens } : {}),
          },
        }
      : {}),
  };
  let out: ConverseCommandOutput;
  try {
    out = await client.send(
      new ConverseCommand(input),
      request.signal !== undefined ? { abortSignal: request.signal } : {},
    );
  } catch (error) {
    throw classify(error, model, request.signal);
  }
  return toResponse(out, model, names, schema !== undefined);
}

/**
 * Converse messages alternate user and assistant, so consecutive messages of one role are merged (several tool
 * results, or tool results followed by a user message, become one user message). Converse also refuses tool
 * blocks in a request that offers no tools: tool history is left out then (the agent keeps offering its tools
 * once the conversation used them), and blank text blocks are refused too.
 */
function toConverseMessages(messages: LlmMessage[], names: ToolNames, withTools: boolean): Message[] {
  const out: Message[] = [];
  const push = (role: 'user' | 'assistant', content: ContentBlock[]): void => {
    if (content.length === 0) return;
    const last = out[out.length - 1];
    if (last?.role === role) last.content = [...(last.content ?? []), ...content];
    else out.push({ role, content });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'user':
        push('user', textBlocks(m.content));
        break;
      case 'assistant':
        push('assistant', [
          ...textBlocks(m.content),
          ...(withTools ? (m.toolCalls ?? []) : []).map(
            (c): ContentBlock => ({
              toolUse: { toolUseId: c.id, name: names.encode(c.name), input: (c.input ?? {}) as Document },
            }),
          ),
        ]);
        break;
      default:
        if (!withTools) break;
        // The error flag is in the text, not Converse's `status: 'error'`, which only Claude models accept.
        push(
          'user',
          m.results.map(
            (r): ContentBlock => ({
              toolResult: { toolUseId: r.toolCallId, content: [{ text: toolResultText(r) }] },
            }),
          ),
        );
    }
  }
  return out;
}

function textBlocks(text: string): ContentBlock[] {
  return text.trim() === '' ? [] : [{ text }];
}

function toResponse(
  out: ConverseCommandOutput,
  model: string,
  names: ToolNames,
  structured: boolean,
): LlmResponse {
  let text = '';
  const toolCalls: LlmToolCall[] = [];
  for (const block of out.output?.message?.content ?? []) {
    if (block.text !== undefined) text += block.text;
    if (block.toolUse !== undefined) {
      toolCalls.push({
        id: block.toolUse.toolUseId ?? `tooluse_${randomUUID()}`,
        name: names.decode(block.toolUse.name ?? ''),
        input: block.toolUse.input ?? {},
      });
    }
  }
  return {
    text: structured ? jsonText(text) : text,
    toolCalls,
    finishReason: toolCalls.length > 0 ? 'tool-calls' : (STOP_REASONS[out.stopReason ?? ''] ?? 'other'),
    usage: bedrockUsage(out.usage),
    model,
  };
}

/** By the SDK error's HTTP status and name: throttling, 5xx, timeouts retry via SQS; the rest will not pass. */
function classify(error: unknown, model: string, signal: AbortSignal | undefined): Error {
  if (isAbort(error, signal)) return abortedError(model, error);
  const e = (error ?? {}) as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  return asCrumbsError(
    error,
    `${model} answered ${status ?? 'no status'}: ${name}: ${e.message ?? String(error)}`,
  );
}

/** Converse counts cache reads apart from `inputTokens`; crumbs' usage counts them among the input tokens. */
function bedrockUsage(
  usage: { inputTokens?: number; outputTokens?: number; cacheReadInputTokens?: number } | undefined,
): LlmUsage {
  const cached = usage?.cacheReadInputTokens;
  return {
    inputTokens: usage?.inputTokens === undefined ? undefined : usage.inputTokens + (cached ?? 0),
    outputTokens: usage?.outputTokens,
    ...(cached !== undefined && cached > 0 ? { cachedInputTokens: cached } : {}),
  };
}
