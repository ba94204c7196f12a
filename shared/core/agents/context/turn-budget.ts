/**
 * A context agent turn's budget (`shared/domain/budget.ts`): the limits of the agent's own `budget`, tightened by
 * the share of a run's budget its request carries (`budget` on an `agent.request.v1`; a request can only lower
 * them), and the turn's usage so far. Both ride in the turn state (`AgentConversation.budget`), which every round
 * writes anyway (the tool request, or the conversation), so counting costs no request. Before each model call the
 * worst case (prompt estimate + output cap) is checked against what remains; the call's output is capped to it.
 * A call that would cross a budget is not made and the turn answers an error naming the budget and the figures.
 * Every call also passes the checks of the one path all model calls take (`shared/core/model-calls/`): the
 * invocation's request budget (the same limits, this invocation's calls only: never tighter than the turn's) and the
 * workspace's daily budget, whose refusal the turn answers the same way.
 */
import {
  addUsage,
  agentLimits,
  type BudgetLimits,
  type BudgetStop,
  type BudgetUsed,
  budgetMessage,
  callRefusal,
  hasLimits,
  inputEstimate,
  NO_USAGE,
  priceFor,
  RequestBudgetSchema,
  requestLimits,
  tighter,
} from '#shared/domain/budget.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { callRecord, type PriceTable, priceTable } from '#shared/domain/llm-usage.ts';
import { AGENT_REQUEST_SCHEMA, AGENT_RESPONSE_SCHEMA } from '#shared/domain/protocol.ts';
import type { LlmResponse, LlmToolSpec } from '#shared/ports/llm.ts';
import type { Tokenizers } from '#shared/ports/tokenizer.ts';
import type { ExecutionInput, OutputBreadcrumb } from '../../executor/contract.ts';
import { promptTokens } from '../../model-calls/prompt-estimate.ts';
import { asObject } from './fields.ts';
import { type AgentConversation, conversationOutput, turnAnswerTags } from './tool-rounds.ts';

export interface TurnBudget {
  limits: BudgetLimits;
  used: BudgetUsed;
  /** The last call's input and output tokens (the next call's prompt holds them), and the model that answered. */
  last?: { input: number; output: number; model?: string | undefined } | undefined;
}

export interface TurnBudgetDeps {
  readonly tokenizers?: Tokenizers | undefined;
  /** The operator's price table (`CRUMBS_LLM_PRICES` over the defaults). @default the defaults */
  readonly prices?: PriceTable | undefined;
  /**
   * A definition's model as calls are priced, `<provider>/<model id>` (aliases and the default provider
   * resolved); without it a bare id is priced once its first call has answered (the answer names the model).
   */
  readonly priceModel?: ((model: string) => string) | undefined;
}

/** A new turn's budget: the agent's, tightened by its request's share of a run's budget. */
export function turnBudgetOf(
  def: AgentDefinition,
  trigger: ExecutionInput<AgentDefinition>['trigger'],
): TurnBudget {
  let limits = agentLimits(def.budget);
  if (trigger.schema_name === AGENT_REQUEST_SCHEMA) {
    const carried = RequestBudgetSchema.safeParse(asObject(trigger.context).budget);
    if (carried.success) limits = tighter(limits, requestLimits(carried.data));
  }
  return { limits, used: { ...NO_USAGE } };
}

/** Whether the next call may be made, and with what output cap; reads nothing unless a budget is set. */
export async function beforeCall(
  conversation: AgentConversation,
  tools: readonly LlmToolSpec[],
  deps: TurnBudgetDeps,
): Promise<{ stop: BudgetStop } | { maxOutputTokens: number | undefined }> {
  const budget = conversation.budget;
  if (budget === undefined || !hasLimits(budget.limits)) return { maxOutputTokens: undefined };
  const estimate = inputEstimate(
    await promptTokens({ ...conversation, tools }, deps.tokenizers),
    budget.last,
  );
  const prices = deps.prices ?? priceTable();
  const model = budget.last?.model ?? deps.priceModel?.(conversation.model) ?? conversation.model;
  return callRefusal(budget.limits, budget.used, estimate, priceFor(model, prices), undefined);
}

/** The conversation with the call's usage counted (exactly as `llm_usage` records it). */
export function afterCall(
  conversation: AgentConversation,
  response: LlmResponse,
  prices: PriceTable | undefined,
): AgentConversation {
  const record = callRecord(response.model, response.usage, prices ?? priceTable());
  const budget = conversation.budget ?? { limits: {}, used: { ...NO_USAGE } };
  return {
    ...conversation,
    budget: {
      ...budget,
      used: addUsage(budget.used, {
        tokens: record.input_tokens + record.output_tokens,
        cost_nusd: record.cost_nusd ?? 0,
      }),
      last: { input: record.input_tokens, output: record.output_tokens, model: response.model },
    },
  };
}

/** The turn's answer when a budget stops it: an error naming the budget and the figures; the turn ends. */
export function budgetStopOutputs(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  stop: BudgetStop,
): OutputBreadcrumb[] {
  const def = input.definition;
  const error = budgetMessage(stop);
  const requestId = conversation.request_id ?? conversation.trigger_id;
  return [
    {
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id}: ${error.slice(0, 80)}`,
      tags: turnAnswerTags(def.agent_id, conversation),
      context: {
        agent_id: def.agent_id,
        request_id: requestId,
        status: 'error',
        error,
        // Said as the turn's message too, so a chat shows why the agent stopped.
        message: error,
        text: error,
        budget_stop: stop,
        turn_usage: conversation.budget?.used ?? NO_USAGE,
        thread: conversation.thread,
        response_to: conversation.response_to,
        trigger_id: conversation.trigger_id,
        tool_rounds: conversation.round,
      },
    },
    conversationOutput({ ...conversation, status: 'answered', pending: [] }),
  ];
}

/** The limits of an invocation: the agent's budget, tightened by the share its request carries. */
export function invocationLimits(
  def: AgentDefinition,
  trigger: ExecutionInput<AgentDefinition>['trigger'],
): BudgetLimits {
  return turnBudgetOf(def, trigger).limits;
}

export { BudgetExceededError } from '#shared/domain/budget.ts';
export { budgetMessage };
