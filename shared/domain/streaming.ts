/**
 * The words of streamed answers a request carries (`shared/core/streaming/` has the channel and its events): the
 * request's `stream_id`, and the breadcrumb that asks for a streaming request to stop.
 */
import { createHash } from 'node:crypto';

export const STREAM_ID_PATTERN = /^[A-Za-z0-9-]{8,64}$/;

/** The schema of a person's (or client's) ask to stop a streaming request while its model call runs. */
export const REQUEST_CANCEL_SCHEMA = 'request.cancel.v1';

/**
 * The id of the cancel breadcrumb of a streaming request, by its stream: one per stream, so a second ask replays
 * the first, and the agent finds it whichever breadcrumb triggered it (a chat message reaches its agent through a
 * context builder's `agent.context.v1`, which carries the `stream_id` on). The shape of the executor's
 * `deterministicId`, `cancel-<32 hex>`.
 */
export function cancelIdOf(workspace: string, streamId: string): string {
  return `cancel-${createHash('sha256').update(`${workspace}\u0000${streamId}`).digest('hex').slice(0, 32)}`;
}
