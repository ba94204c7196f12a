/**
 * MCP's `notifications/cancelled` on a stateless server: the client names the JSON-RPC id of a call it gave up on,
 * in a POST of its own that any instance may take. A call that can be stopped — an agent's answer streamed as
 * progress, whose model call looks for a cancel between its deltas — records which request it wrote under
 * (caller, JSON-RPC id) in the call index (`#shared/ports/call-index.ts`) once the request is written; the cancel
 * reads that entry and stops the request as A2A's `CancelTask` does (`stopRequest`): the agent answers `cancelled`,
 * and the call, if it still waits, returns that answer. Only the caller's own calls are found (the key holds the
 * caller) and only its own requests are stopped (the request's writer is checked again).
 *
 * A cancel may overtake its call's entry (sent at once, or taken by an instance while the call's is still writing
 * the request); and a client starts its ids over in every session, so an entry may name an earlier call that has
 * already answered. So a cancel that finds no entry, or one whose request cannot be stopped any more, looks again
 * a few times (`LOOKS_MS`) before it gives up. A call nothing can stop (a tool, an agent call without progress) has
 * no entry: its cancel changes nothing, as the spec allows (the result may still arrive; the client ignores it).
 */
import type { Caller } from '#shared/core/api/http.ts';
import { isOk, stopRequest, type WorkspaceApi } from '#shared/core/api/in-process.ts';
import type { CallIndex } from '#shared/ports/call-index.ts';

/** When a cancel looks (again) for the request of the call it names, from its arrival. */
export const LOOKS_MS = [0, 200, 600, 1500] as const;

/** The longest JSON-RPC id (as JSON) a call is indexed under: a longer one is not indexed, so not cancellable. */
export const MAX_CALL_ID_CHARS = 200;

export type CancelOutcome = 'stopped' | 'not-found' | 'not-stoppable';

export function indexable(callId: string | number): boolean {
  return JSON.stringify(callId).length <= MAX_CALL_ID_CHARS;
}

/** Stops the request the caller's call `callId` wrote (see the header). */
export async function cancelCall(
  api: WorkspaceApi,
  calls: CallIndex,
  call: { workspace: string; caller: Caller },
  callId: string | number,
  reason: string | undefined,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<CancelOutcome> {
  if (!indexable(callId)) return 'not-found';
  let outcome: CancelOutcome = 'not-found';
  let waited = 0;
  for (const at of LOOKS_MS) {
    if (at > waited) await sleep(at - waited);
    waited = at;
    const requestId = await calls.get(call.workspace, call.caller.principal, callId);
    if (requestId === undefined) continue;
    const read = await api('GET', `breadcrumbs/${encodeURIComponent(requestId)}/full`);
    const request = read.body as { id?: unknown; created_by?: unknown; context?: unknown };
    if (
      !isOk(read) ||
      request.created_by !== call.caller.principal ||
      typeof request.id !== 'string' ||
      request.context === null ||
      typeof request.context !== 'object'
    ) {
      continue;
    }
    const stopped = await stopRequest(
      api,
      { id: request.id, context: request.context as Record<string, unknown> },
      `MCP notifications/cancelled${reason ? `: ${reason}` : ''}`,
      undefined,
    );
    if ('stopped' in stopped) return 'stopped';
    // Answered already, or an earlier call's request: the call named may still be writing its own.
    outcome = 'not-stoppable';
  }
  return outcome;
}
