/**
 * Which request an MCP caller's JSON-RPC call wrote, so that the call's `notifications/cancelled` — sent by the
 * client as a POST of its own, which a stateless server may take on any instance — finds the request to stop
 * (`shared/core/mcp/cancel.ts`). Keyed by (workspace, caller, JSON-RPC id); a later call under the same id (a new
 * session starts its ids over) replaces the entry. Entries expire (`CALL_INDEX_TTL_SECONDS`).
 */

/** How long a call can be cancelled by its JSON-RPC id. */
export const CALL_INDEX_TTL_SECONDS = 60 * 60;

export interface CallIndex {
  put(workspace: string, caller: string, callId: string | number, requestId: string): Promise<void>;
  /** The request the caller's call `callId` wrote last, within the TTL; undefined otherwise. */
  get(workspace: string, caller: string, callId: string | number): Promise<string | undefined>;
}
