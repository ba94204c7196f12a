/**
 * What each executor kind answers when it cannot process a trigger: a non-retriable failure in the pipeline, or a
 * message that ended in a dead-letter queue (dlq.ts). One definition serves both, so a caller sees the same error
 * breadcrumb whichever way the trigger failed; the tool kind answers with `toolResponse` either way. Schema names,
 * tags and request ids are the protocol's (`#shared/domain/protocol.ts`).
 *
 * It lives apart from the kinds' `execute` on purpose: the DLQ handler only answers, and importing the kinds would
 * load everything executing needs (built-in tools, JSONata, JSON Schema, model clients) into the function that
 * must keep working when the others fail.
 */

import type { BudgetStop } from '#shared/domain/budget.ts';
import type { DefinitionByKind, ParsedDefinition, ToolDefinition } from '#shared/domain/definitions.ts';
import { memoryErrorAnswer } from '#shared/domain/memory.ts';
import {
  AGENT_CONTEXT_SCHEMA,
  AGENT_ERROR_SCHEMA,
  AGENT_REQUEST_SCHEMA,
  AGENT_RESPONSE_SCHEMA,
  CONTEXT_ERROR_SCHEMA,
  correlationTags,
  requestIdOf,
  requestTag,
  TOOL_REQUEST_SCHEMA,
  TOOL_RESPONSE_SCHEMA,
  threadTag,
  toolRequestIdOf,
  WORKFLOW_ERROR_SCHEMA,
  WORKFLOW_REQUEST_SCHEMA,
} from '#shared/domain/protocol.ts';
import type { ExecutorKind } from '#shared/topology.ts';
import type { ExecutionInput, OutputBreadcrumb } from './contract.ts';

type Trigger = ExecutionInput<unknown>['trigger'];

export interface ErrorAnswerInput<D> {
  definition: D;
  /** The trigger as stored; undefined when it is gone (a dead letter can outlive it). */
  trigger: Trigger | undefined;
  error: string;
}

/** The thread a trigger belongs to: its causation's, or its own id when it starts one. */
export function threadOf(trigger: Trigger): string {
  return trigger.causation?.thread ?? trigger.id;
}

function contextOf(trigger: Trigger): Record<string, unknown> {
  const c = trigger.context;
  return c !== null && typeof c === 'object' && !Array.isArray(c) ? (c as Record<string, unknown>) : {};
}

/** What an agent answers: the user message an `agent.context.v1` was built for, or the trigger itself. */
export function responseTo(trigger: Trigger): string {
  const c = contextOf(trigger);
  return trigger.schema_name === AGENT_CONTEXT_SCHEMA && typeof c.trigger_event_id === 'string'
    ? c.trigger_event_id
    : trigger.id;
}

export interface ToolRequest {
  requestId: string;
  requestedBy: string;
  input: unknown;
  /** The request's correlation tags, copied onto the response. */
  correlation?: string[];
}

/** A `tool.request.v1` gives `input`; any other trigger (a tool subscribed to other schemas) is the input. */
export function readToolRequest(trigger: Trigger): ToolRequest {
  const context = contextOf(trigger);
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  return {
    requestId: toolRequestIdOf(trigger),
    requestedBy: str(context.requestedBy) ?? str(context.requested_by) ?? trigger.created_by,
    input: trigger.schema_name === TOOL_REQUEST_SCHEMA ? (context.input ?? {}) : context,
    correlation: correlationTags(trigger.tags),
  };
}

/** The `tool.response.v1` for a request, tagged `request:<id>` so the requester finds it. */
export function toolResponse(
  definition: ToolDefinition,
  request: Pick<ToolRequest, 'requestId' | 'requestedBy' | 'correlation'>,
  result:
    | { status: 'success'; output: unknown }
    | { status: 'error'; error: string; budget_stop?: BudgetStop },
  durationMs: number,
): OutputBreadcrumb {
  return {
    schema_name: TOOL_RESPONSE_SCHEMA,
    title: `${definition.name}: ${result.status}`,
    tags: [
      requestTag(request.requestId),
      'tool:response',
      `tool:${definition.name}`,
      ...(request.correlation ?? []),
    ],
    context: {
      request_id: request.requestId,
      tool: definition.name,
      ...result,
      duration_ms: durationMs,
      requestedBy: request.requestedBy,
    },
  };
}

export const ERROR_ANSWERS: {
  readonly [K in ExecutorKind]: (input: ErrorAnswerInput<DefinitionByKind[K]>) => OutputBreadcrumb;
} = {
  agent: ({ definition, trigger, error }) => {
    // A request (`agent.request.v1`) is answered like a success would be, with status "error" (shared/domain/CONVENTIONS.md).
    if (trigger?.schema_name === AGENT_REQUEST_SCHEMA) {
      const requestId = requestIdOf(trigger);
      return {
        schema_name: AGENT_RESPONSE_SCHEMA,
        title: `${definition.agent_id} failed`,
        tags: [
          'agent:response',
          `agent:${definition.agent_id}`,
          threadTag(threadOf(trigger)),
          requestTag(requestId),
          ...correlationTags(trigger.tags),
        ],
        context: {
          agent_id: definition.agent_id,
          request_id: requestId,
          status: 'error',
          error,
          thread: threadOf(trigger),
          response_to: trigger.id,
          trigger_id: trigger.id,
        },
      };
    }
    return {
      schema_name: AGENT_ERROR_SCHEMA,
      title: `${definition.agent_id} failed`,
      // Tagged with the thread like a response, so a caller waiting for the answer sees the failure instead.
      tags: [
        'agent:error',
        `agent:${definition.agent_id}`,
        ...(trigger
          ? [threadTag(threadOf(trigger)), requestTag(trigger.id), ...correlationTags(trigger.tags)]
          : []),
      ],
      context: {
        agent_id: definition.agent_id,
        error,
        status: 'error',
        request_id: trigger?.id ?? null,
        response_to: trigger ? responseTo(trigger) : null,
        trigger_id: trigger?.id ?? null,
        thread: trigger ? threadOf(trigger) : null,
      },
    };
  },
  tool: ({ definition, trigger, error }) => {
    const request = trigger ? readToolRequest(trigger) : { requestId: 'unknown', requestedBy: 'unknown' };
    return toolResponse(definition, request, { status: 'error', error }, 0);
  },
  workflow: ({ definition, trigger, error }) => {
    // A request is answered like a run would answer it (shared/domain/CONVENTIONS.md), so a parent run or a caller waiting on
    // `request:<id>` hears of the failure; any other trigger (an answer to one of its runs) gets a plain error.
    const request = trigger?.schema_name === WORKFLOW_REQUEST_SCHEMA ? requestIdOf(trigger) : undefined;
    return {
      schema_name: WORKFLOW_ERROR_SCHEMA,
      title: `${definition.workflow_id}: error`,
      tags: [
        ...definition.answer.tags,
        `workflow:${definition.workflow_id}`,
        'workflow:error',
        ...(request !== undefined && trigger !== undefined
          ? [requestTag(request), ...correlationTags(trigger.tags)]
          : []),
      ],
      context: {
        workflow_id: definition.workflow_id,
        status: 'failed',
        ...(request !== undefined ? { request_id: request } : {}),
        trigger_id: trigger?.id ?? null,
        error,
      },
    };
  },
  'context-builder': ({ definition, trigger, error }) => ({
    schema_name: CONTEXT_ERROR_SCHEMA,
    title: `context for ${definition.consumer_id} failed`,
    tags: [
      'context:error',
      `consumer:${definition.consumer_id}`,
      ...(trigger ? [threadTag(threadOf(trigger))] : []),
    ],
    context: { consumer_id: definition.consumer_id, error, trigger_event_id: trigger?.id ?? null },
  }),
  memory: ({ definition, trigger, error }) => memoryErrorAnswer(definition, trigger, error),
};

/** The error answer for a parsed definition of any kind. */
export function errorAnswer(
  parsed: ParsedDefinition,
  trigger: Trigger | undefined,
  error: string,
): OutputBreadcrumb {
  switch (parsed.kind) {
    case 'agent':
      return ERROR_ANSWERS.agent({ definition: parsed.definition, trigger, error });
    case 'tool':
      return ERROR_ANSWERS.tool({ definition: parsed.definition, trigger, error });
    case 'workflow':
      return ERROR_ANSWERS.workflow({ definition: parsed.definition, trigger, error });
    case 'context-builder':
      return ERROR_ANSWERS['context-builder']({ definition: parsed.definition, trigger, error });
    case 'memory':
      return ERROR_ANSWERS.memory({ definition: parsed.definition, trigger, error });
  }
}
