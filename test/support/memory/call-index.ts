/** The call index in memory (`#shared/ports/call-index.ts`), for unit tests of MCP's cancel. */
import type { CallIndex } from '#shared/ports/call-index.ts';

export class InMemoryCallIndex implements CallIndex {
  readonly entries = new Map<string, string>();

  async put(workspace: string, caller: string, callId: string | number, requestId: string): Promise<void> {
    this.entries.set(JSON.stringify([workspace, caller, callId]), requestId);
  }

  async get(workspace: string, caller: string, callId: string | number): Promise<string | undefined> {
    return this.entries.get(JSON.stringify([workspace, caller, callId]));
  }
}
