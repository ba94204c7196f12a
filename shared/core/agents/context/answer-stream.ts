/**
 * A context agent's answer streamed as the model writes it, for a request that asks (`stream_id`): the model call
 * gets `onDelta`, the deltas go to the request's channel through a sink that coalesces them
 * (`shared/core/streaming/`), and after the answer is written the stream's last event names it (`afterWrite`).
 *
 * Cancel: between deltas, at most once per `CANCEL_CHECK_MS`, one read of the request's `request.cancel.v1` (its
 * id is derived from the stream's, `cancelIdOf`); once there, the call is aborted and the turn answers
 * `cancelled`. A request that does not stream pays nothing: no sink, no read. A cancel written before the first
 * delta is seen at the first delta.
 */

import { isPerson } from '#shared/domain/breadcrumb.ts';
import type { AgentDefinition } from '#shared/domain/definitions.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import { AGENT_RESPONSE_SCHEMA } from '#shared/domain/protocol.ts';
import { cancelIdOf, REQUEST_CANCEL_SCHEMA } from '#shared/domain/streaming.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { LlmDelta } from '#shared/ports/llm.ts';
import type { Log } from '#shared/ports/log.ts';
import type { ExecutionInput, OutputBreadcrumb } from '../../executor/contract.ts';
import type { FinalStatus } from '../../streaming/events.ts';
import { type AgentConversation, conversationOutput, turnAnswerTags } from './tool-rounds.ts';

/** How often a streaming call looks for a cancel: one small read a second of streaming. */
export const CANCEL_CHECK_MS = 1_000;

/** Where one answer's deltas go; coalescing and publishing are the sink's (`shared/core/streaming/`). */
export interface StreamSink {
  write(text: string): void;
  reset(reason: string): void;
  /** The last event: the stored answer's id and how the request ended. Publishes what is still held first. */
  final(status: FinalStatus, answerId: string): Promise<unknown>;
  /** Ends this invocation's part without a final event (a tool round: the next invocation goes on). */
  close(): Promise<unknown>;
}

/** Opens the sink of one invocation's part of a request's stream (`DeltaStream` on the request's channel). */
export type OpenStream = (workspace: string, streamId: string) => Promise<StreamSink>;

export interface Cancellation {
  readonly by: string;
  readonly reason?: string;
}

export interface AnswerStream {
  readonly onDelta: (delta: LlmDelta) => void;
  /** The model call's signal: the invocation's, and aborted by a cancel. */
  readonly signal: AbortSignal;
  /** Set once a cancel was seen (the call was aborted). */
  cancelled(): Cancellation | undefined;
  /** Ends the text of a round that called tools (the next invocation streams the rest). */
  toolRound(tools: readonly string[]): void;
  /** This invocation writes the request's answer: its first output (the stream's final event names it). */
  answered(): void;
}

export interface AnswerStreamDeps {
  readonly store: Pick<BreadcrumbStore, 'get'>;
  readonly open: OpenStream;
  readonly log?: Log;
  readonly now?: () => number;
}

/**
 * The stream of this invocation's model calls, or undefined when the request does not stream (or the function has
 * no channel). Registers the final event with the pipeline.
 */
export async function openAnswerStream(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  deps: AnswerStreamDeps | undefined,
): Promise<AnswerStream | undefined> {
  const streamId = conversation.stream_id;
  if (streamId === undefined || deps === undefined) return undefined;
  const workspace = input.trigger.workspace;
  const sink = await deps.open(workspace, streamId);
  const now = deps.now ?? Date.now;
  const abort = new AbortController();
  const signal = AbortSignal.any([input.signal, abort.signal]);
  let cancellation: Cancellation | undefined;
  let lastCheck = Number.NEGATIVE_INFINITY;
  let checking = false;

  const check = (): void => {
    if (checking || cancellation !== undefined || now() - lastCheck < CANCEL_CHECK_MS) return;
    checking = true;
    lastCheck = now();
    deps.store
      .get(workspace, cancelIdOf(workspace, streamId))
      .then((cancel) => {
        // Only a person stops an answer (the API's cancel route writes as the caller): a breadcrumb of that id an
        // agent, a tool or a plain put wrote stops nothing.
        if (cancel.schema_name !== REQUEST_CANCEL_SCHEMA || !isPerson(cancel.created_by)) return;
        const c = cancel.context as { reason?: unknown };
        cancellation = {
          by: cancel.created_by,
          ...(typeof c.reason === 'string' ? { reason: c.reason } : {}),
        };
        abort.abort(new Error(`cancelled by ${cancel.created_by}`));
      })
      .catch((error: unknown) => {
        if (!(error instanceof NotFoundError)) {
          deps.log?.warn('could not look for a cancel of a streaming request', { error: String(error) });
        }
      })
      .finally(() => {
        checking = false;
      });
  };

  // The answer (or the error answer the pipeline writes for a failure) is the first output; an invocation that
  // ends in a tool round answers nothing, and the stream goes on in the next.
  let answered = false;
  input.afterWrite?.(async ({ outputIds, failure }) => {
    const answerId = outputIds[0];
    if (answerId === undefined || (!answered && failure === undefined)) {
      await sink.close();
      return;
    }
    const status: FinalStatus =
      cancellation !== undefined ? 'cancelled' : failure !== undefined ? 'failed' : 'completed';
    await sink.final(status, answerId);
  });

  return {
    signal,
    cancelled: () => cancellation,
    onDelta: (delta) => {
      if (delta.type === 'text') sink.write(delta.text);
      else sink.reset(delta.reason);
      check();
    },
    toolRound: (tools) => sink.reset(`calling ${tools.join(', ')}`),
    answered: () => {
      answered = true;
    },
  };
}

/** The answer of a turn a person cancelled while the model was writing it: the text so far is not kept. */
export function cancelledOutputs(
  input: ExecutionInput<AgentDefinition>,
  conversation: AgentConversation,
  cancellation: Cancellation,
): OutputBreadcrumb[] {
  const def = input.definition;
  const requestId = conversation.request_id ?? conversation.trigger_id;
  const message = `cancelled by ${cancellation.by}${cancellation.reason !== undefined ? `: ${cancellation.reason}` : ''}`;
  return [
    {
      schema_name: AGENT_RESPONSE_SCHEMA,
      title: `${def.agent_id}: ${message.slice(0, 80)}`,
      tags: turnAnswerTags(def.agent_id, conversation),
      context: {
        agent_id: def.agent_id,
        request_id: requestId,
        status: 'cancelled',
        message,
        text: message,
        cancelled_by: cancellation.by,
        ...(cancellation.reason !== undefined ? { cancel_reason: cancellation.reason } : {}),
        thread: conversation.thread,
        response_to: conversation.response_to,
        trigger_id: conversation.trigger_id,
        tool_rounds: conversation.round,
        ...(conversation.budget !== undefined ? { turn_usage: conversation.budget.used } : {}),
      },
    },
    conversationOutput({ ...conversation, status: 'answered', pending: [] }),
  ];
}
