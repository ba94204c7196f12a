/**
 * Recording model usage without a write of its own. `metered` wraps an executor kind so each invocation runs in an
 * account of its own (`shared/core/model-calls/governed-llm.ts`): the governed model client checks each call
 * against the account's budget (the kind's `modelBudget`) and notes the call's priced tokens there, and the
 * invocation's calls ride, as `llm_usage`, in one breadcrumb it writes anyway (its answer, else the tool request of
 * its tool round, else its conversation, else its first output). The stream consumer adds them up
 * (`shared/core/stream/usage-totals.ts`).
 *
 * Calls of an invocation that fails are not recorded: its error answer is written by the pipeline, which never sees
 * the account.
 */
import {
  LLM_USAGE_FIELD,
  type LlmCallRecord,
  type LlmUsageRecord,
  MAX_RECORDED_CALLS,
  withoutUsageRecord,
} from '#shared/domain/llm-usage.ts';
import {
  AGENT_CONVERSATION_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
} from '#shared/domain/protocol.ts';
import { inInvocation } from '../model-calls/governed-llm.ts';
import type {
  ExecutionInput,
  ExecutionResult,
  ExecutorKindImplementation,
  OutputBreadcrumb,
} from './contract.ts';

/**
 * The kind whose invocations may call a model: each runs in an account holding the kind's request budget for it,
 * and records its model calls in one of its outputs.
 */
export function metered<D>(kind: ExecutorKindImplementation<D>): ExecutorKindImplementation<D> {
  return {
    ...kind,
    async execute(input) {
      const limits = kind.modelBudget?.(input) ?? {};
      const { result, calls } = await inInvocation(input.trigger.workspace, limits, async (account) => ({
        result: await kind.execute(input),
        calls: account.calls,
      }));
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
