/**
 * Recording model usage without a write of its own. `pricedLlm` wraps a function's model client: each call's
 * tokens are priced (`shared/domain/llm-usage.ts`) and noted in the meter of the invocation it runs in; `metered`
 * wraps an executor kind so each invocation runs in a meter of its own and its calls ride, as `llm_usage`, in one
 * breadcrumb the invocation writes anyway (its answer, else the tool request of its tool round, else its
 * conversation, else its first output). The stream consumer adds them up (`shared/core/stream/usage-totals.ts`).
 *
 * The meter is an AsyncLocalStorage: the model client is built once per function and handed to several layers
 * (agent types, modes, orchestrations, the `llm` tool), so a call site cannot be asked to pass the meter along.
 * A call made outside a metered invocation is priced and not recorded. Calls of an invocation that fails are not
 * recorded either: its error answer is written by the pipeline, which never sees the meter.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  callRecord,
  LLM_USAGE_FIELD,
  type LlmCallRecord,
  type LlmUsageRecord,
  MAX_RECORDED_CALLS,
  type PriceTable,
  withoutUsageRecord,
} from '#shared/domain/llm-usage.ts';
import {
  AGENT_CONVERSATION_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { LlmClient } from '#shared/ports/llm.ts';
import type {
  ExecutionInput,
  ExecutionResult,
  ExecutorKindImplementation,
  OutputBreadcrumb,
} from './contract.ts';

const meters = new AsyncLocalStorage<LlmCallRecord[]>();

/** The model client whose calls are priced from `prices` and recorded in the current invocation's meter. */
export function pricedLlm(llm: LlmClient, prices: PriceTable): LlmClient {
  return {
    async generate(request) {
      const response = await llm.generate(request);
      meters.getStore()?.push(callRecord(response.model, response.usage, prices));
      return response;
    },
  };
}

/** The kind whose invocations record their model calls in one of their outputs. */
export function metered<D>(kind: ExecutorKindImplementation<D>): ExecutorKindImplementation<D> {
  return {
    ...kind,
    async execute(input) {
      const calls: LlmCallRecord[] = [];
      const result = await meters.run(calls, () => kind.execute(input));
      return calls.length === 0 ? withoutStaleUsage(result) : withUsage(input, result, calls);
    },
  };
}

const CARRIERS = [
  AGENT_RESPONSE_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  AGENT_CONVERSATION_SCHEMA,
];

/**
 * The outputs without any `llm_usage` record but the one this invocation adds: a record an output carries
 * otherwise was copied from what an earlier invocation wrote (a conversation read back and written again), or
 * written by the agent's own code, and would be counted again.
 */
function withoutStaleUsage(result: ExecutionResult, keep?: OutputBreadcrumb): ExecutionResult {
  if (!result.outputs.some((o) => o !== keep && LLM_USAGE_FIELD in (o.context as object))) return result;
  return {
    ...result,
    outputs: result.outputs.map((o) => {
      if (o === keep || !(LLM_USAGE_FIELD in (o.context as object))) return o;
      return { ...o, context: withoutUsageRecord(o.context as Record<string, unknown>) };
    }),
  };
}

function withUsage<D>(
  input: ExecutionInput<D>,
  result: ExecutionResult,
  calls: LlmCallRecord[],
): ExecutionResult {
  const outputs = result.outputs;
  if (outputs.length === 0) return result;
  const at =
    CARRIERS.map((schema) => outputs.findIndex((o) => o.schema_name === schema)).find((i) => i >= 0) ?? 0;
  const record: LlmUsageRecord = {
    agent_id: input.principal.replace(/^agent:/, ''),
    thread: input.causation.thread,
    ...attribution(outputs, input.trigger.tags),
    calls: calls.length <= MAX_RECORDED_CALLS ? calls : squeezed(calls),
  };
  const carrier = outputs[at] as OutputBreadcrumb;
  const next = [...outputs];
  const carried = { ...carrier, context: { ...carrier.context, [LLM_USAGE_FIELD]: record } };
  next[at] = carried;
  return withoutStaleUsage({ ...result, outputs: next }, carried);
}

/** The request and run the calls served: named by the turn's outputs (answer, conversation), else the trigger. */
function attribution(
  outputs: readonly OutputBreadcrumb[],
  triggerTags: readonly string[],
): { request_id?: string; run_id?: string } {
  let requestId: string | undefined;
  const tags: string[] = [];
  for (const output of outputs) {
    const context = output.context as Record<string, unknown>;
    const conversation = (context.conversation ?? {}) as Record<string, unknown>;
    const conversationOwn = output.schema_name === AGENT_CONVERSATION_SCHEMA ? context : conversation;
    requestId ??= str(context.request_id) ?? str(conversationOwn.request_id);
    tags.push(...(output.tags ?? []));
    if (Array.isArray(conversationOwn.answer_tags)) tags.push(...conversationOwn.answer_tags.map(String));
  }
  tags.push(...triggerTags);
  const run = tags.find((t) => t.startsWith('run:'))?.slice('run:'.length);
  return {
    ...(requestId !== undefined ? { request_id: requestId } : {}),
    ...(run ? { run_id: run } : {}),
  };
}

/** More calls than a breadcrumb itemises: the rest summed per model into the last entries. */
function squeezed(calls: LlmCallRecord[]): LlmCallRecord[] {
  const kept = calls.slice(0, MAX_RECORDED_CALLS - 1);
  const rest = calls.slice(MAX_RECORDED_CALLS - 1);
  const sum: LlmCallRecord = {
    model: rest[0]!.model,
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    calls: rest.length,
  };
  for (const c of rest) {
    sum.input_tokens += c.input_tokens;
    sum.output_tokens += c.output_tokens;
    sum.cached_tokens += c.cached_tokens;
    if (c.cost_nusd !== undefined) sum.cost_nusd = (sum.cost_nusd ?? 0) + c.cost_nusd;
  }
  return [...kept, sum];
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
