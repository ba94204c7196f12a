/**
 * Slots of per-workspace quotas on shared capacity (definitions, rules of the bus pool): a member (a definition id)
 * holds at most one slot of each quota, and no more than `limit` members of a workspace hold one. Taking and
 * giving back are idempotent, and two members asking for the last slot at once get one between them.
 */

export type QuotaName = 'definitions' | 'rules';

export interface WorkspaceQuotas {
  /** Takes a slot for `member` unless `limit` are held by others; true when `member` holds one (now or before). */
  acquire(workspace: string, quota: QuotaName, member: string, limit: number): Promise<boolean>;
  /** Gives `member`'s slot back; nothing when it holds none. */
  release(workspace: string, quota: QuotaName, member: string): Promise<void>;
  /** How many slots of the workspace's quota are held. */
  used(workspace: string, quota: QuotaName): Promise<number>;
}
