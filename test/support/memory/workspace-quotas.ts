/** The WorkspaceQuotas port in memory, for unit tests (the DynamoDB adapter is tested against DynamoDB Local). */
import type { QuotaName, WorkspaceQuotas } from '#shared/ports/workspace-quotas.ts';

export class InMemoryWorkspaceQuotas implements WorkspaceQuotas {
  private readonly slots = new Map<string, Set<string>>();

  private held(workspace: string, quota: QuotaName): Set<string> {
    const key = `${workspace}\u0000${quota}`;
    let set = this.slots.get(key);
    if (set === undefined) {
      set = new Set();
      this.slots.set(key, set);
    }
    return set;
  }

  async acquire(workspace: string, quota: QuotaName, member: string, limit: number): Promise<boolean> {
    const held = this.held(workspace, quota);
    if (held.has(member)) return true;
    if (held.size >= limit) return false;
    held.add(member);
    return true;
  }

  async release(workspace: string, quota: QuotaName, member: string): Promise<void> {
    this.held(workspace, quota).delete(member);
  }

  async used(workspace: string, quota: QuotaName): Promise<number> {
    return this.held(workspace, quota).size;
  }
}
