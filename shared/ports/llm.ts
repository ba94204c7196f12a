/**
 * The LLM port: one model call, no tool execution. Tools are offered by name, description and JSON Schema; the
 * model's tool calls come back as data (`toolCalls`) and the caller decides what to do with them — the agent
 * executor turns each into a `tool.request.v1` breadcrumb and returns (agents never wait inside a Lambda).
 *
 * Messages are plain JSON so a conversation can be stored in a breadcrumb (`agent.conversation.v1`) and resumed by
 * another invocation when the tool responses arrive.
 */

export interface LlmToolCall {
  /** Provider-assigned call id; echoed back in the matching tool result. */
  id: string;
  name: string;
  input: unknown;
}

export interface LlmToolResult {
  toolCallId: string;
  toolName: string;
  /** The tool's output (JSON), or the error text when `isError`. */
  output: unknown;
  isError?: boolean;
}

/**
 * A file handed to the model beside a user message. Conversations store it as a reference (`ref`); the attachments
 * room (`shared/rooms/attachments/model-input.ts`) fills `data` or `s3Uri` just before the call, after checking the
 * provider's limits, and turns a file the model cannot read into `text`.
 */
export interface LlmAttachment {
  readonly ref: {
    readonly id: string;
    readonly media_type: string;
    readonly bytes: number;
    readonly sha256: string;
    readonly name?: string | undefined;
  };
  readonly kind?: 'image' | 'document' | 'video' | 'audio';
  /** The name the provider sees (Converse: letters, digits, single spaces, `-`, `()`, `[]`). */
  readonly name?: string;
  /** The bytes, base64 (only in the request being made; never stored). */
  readonly data?: string;
  /** Where the model reads it itself (Bedrock `s3Location`, for the models the capability table names). */
  readonly s3Uri?: string;
  /** The file as text, for a model that cannot read its type (CSV, or an older image: its reference and caption). */
  readonly text?: string;
}

export type LlmMessage =
  | { role: 'user'; content: string; attachments?: LlmAttachment[] }
  | { role: 'assistant'; content: string; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; results: LlmToolResult[] };

export interface LlmToolSpec {
  /** The crumbs tool name (may contain `.`; adapters encode names the provider refuses). */
  name: string;
  description: string;
  /** JSON Schema of the tool's input (an object schema). */
  inputSchema: Record<string, unknown>;
}

export type LlmFinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error' | 'other';

export interface LlmUsage {
  /** All input tokens, those read from a prompt cache included. */
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  /** Of the input tokens, those the provider read from its prompt cache (billed at its cached price). */
  cachedInputTokens?: number | undefined;
}

export interface LlmRequest {
  /** `<provider>/<model id>`, e.g. `bedrock/anthropic.claude-3-5-haiku-20241022-v1:0`, `offline/echo`. */
  model: string;
  system: string;
  messages: LlmMessage[];
  tools?: LlmToolSpec[];
  temperature?: number;
  /**
   * Ask for a JSON object matching this JSON Schema (structured output); the text is that JSON, bare: an adapter
   * takes it out of markdown fences or surrounding prose. Validating it against the schema is the caller's job.
   */
  responseSchema?: Record<string, unknown>;
  /**
   * The shape a text answer should take (agent modes: plans and deliverables). The caller also says it in the
   * system prompt, which is what real models read; adapters send nothing more. The offline model follows it.
   */
  responseFormat?: ResponseFormat;
  maxOutputTokens?: number;
  signal?: AbortSignal;
  /**
   * Stream the answer: given, the adapter asks its provider for a stream and calls this with the answer's text as
   * it arrives (never tool-call arguments); `generate` still resolves to the whole response, assembled from the
   * stream. Absent, the call is the plain request it always was. Called synchronously between reads of the
   * stream: a slow consumer slows the call, and one that throws fails it (not retried).
   */
  onDelta?: (delta: LlmDelta) => void;
}

/**
 * A piece of a streamed answer. `text` pieces concatenate to the answer's text (with a response schema, the final
 * text is the JSON taken out of what was streamed). `reset`: drop the text streamed so far — the stream broke and
 * the call is being retried, so that partial text never becomes the answer; the retry streams the answer anew.
 */
export type LlmDelta = { type: 'text'; text: string } | { type: 'reset'; reason: string };

export interface ResponseFormat {
  readonly kind: 'json' | 'markdown' | 'yaml' | 'html';
  /** Headings the answer must have, in order (markdown, html). */
  readonly sections?: readonly string[];
  /** A template the answer follows (markdown). */
  readonly template?: string;
}

/** The `$id` of the JSON Schema an orchestrating agent asks its model to plan sub-agent calls with. */
export const ORCHESTRATION_PLAN_SCHEMA_ID = 'crumbs:orchestration-plan';

export interface LlmResponse {
  text: string;
  toolCalls: LlmToolCall[];
  finishReason: LlmFinishReason;
  usage: LlmUsage;
  /** The provider and model that answered, e.g. `offline/crumbs`. */
  model: string;
}

export interface LlmClient {
  generate(request: LlmRequest): Promise<LlmResponse>;
}
