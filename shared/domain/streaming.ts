/**
 * The words of streamed answers (`shared/core/streaming/`): a request's `stream_id`, the events a stream carries,
 * and the breadcrumb that asks for a streaming request to stop.
 *
 * Events are JSON, in order by (`segment`, `seq`): every invocation that streams opens a new segment (its start
 * time, so a retry or the next tool round comes after what it replaces) and numbers its events 1, 2, … within it.
 * A new segment replaces the text of the last; `reset` drops the text of its own segment so far (a model call that
 * broke mid-way and is tried again); `final` names the stored answer — the text a client shows from then on.
 */
import { createHash } from 'node:crypto';

export const STREAM_ID_PATTERN = /^[A-Za-z0-9-]{8,64}$/;

export type StreamStatus = 'completed' | 'failed' | 'cancelled';

export type StreamEvent =
  | { readonly type: 'delta'; readonly segment: number; readonly seq: number; readonly text: string }
  | { readonly type: 'reset'; readonly segment: number; readonly seq: number; readonly reason: string }
  | {
      readonly type: 'final';
      readonly segment: number;
      readonly seq: number;
      readonly status: StreamStatus;
      readonly answer_id: string;
    };

/** The schema of a person's (or client's) ask to stop a streaming request while its model call runs. */
export const REQUEST_CANCEL_SCHEMA = 'request.cancel.v1';

/**
 * The id of a request's cancel breadcrumb: one per request, so a second ask replays the first (the shape of the
 * executor's `deterministicId`, `cancel-<32 hex>`).
 */
export function cancelIdOf(workspace: string, requestId: string): string {
  return `cancel-${createHash('sha256').update(`${workspace}\u0000${requestId}`).digest('hex').slice(0, 32)}`;
}
