/**
 * A workspace's deletion record: one item in the table's own partition (`#workspace#<ws>` under `#crumbs`, which no
 * workspace can be named, so sweeping the workspace never touches it), holding the deletion job's progress
 * (`workspace-sweeper.ts`) and, from the deletion's `seal` phase on, its seal: `sealed_at`. A sealed workspace takes
 * no writes (`item-rules.ts` refuses them with a WorkspaceDeletedError, whoever sends them) until the record ends:
 * `expires_at`, set when the deletion is done, WORKSPACE_TOMBSTONE_SECONDS (two days, `workspace-deletion.ts` says
 * why) later; reads check it, and TTL removes the item up to two days after that.
 *
 * Writers learn of a seal through a cache per client (`WorkspaceSeals`): a workspace's record is read at most once
 * per SEAL_CACHE_MS per process (one consistent GetItem), so a write may still land up to that long after the seal
 * — the deletion's last pass starts after it (`workspace-routes.ts`).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { WORKSPACE_PATTERN } from '#shared/domain/breadcrumb.ts';
import { WorkspaceDeletedError } from '#shared/domain/errors.ts';
import { SEAL_WINDOW_MS, type SealedWorkspaces } from '#shared/ports/workspace-deletion.ts';
import { TableReads } from './table-reads.ts';
import { TABLE_PARTITION } from './workspace-index.ts';

/** How long a writer trusts what it read of a workspace's seal. */
export const SEAL_CACHE_MS = SEAL_WINDOW_MS;

export const DELETION_RECORD_KIND = 'workspace-deletion';

export function deletionRecordKey(workspace: string): { id: string; workspace: string } {
  return { id: `#workspace#${workspace}`, workspace: TABLE_PARTITION };
}

/** What a workspace's deletion record says of its seal: since when, and until when (once the deletion is done). */
export interface Seal {
  sealedAt: string;
  until?: string;
}

/** The seal of a record as read, or undefined: no record, no seal yet, or its tombstone ended. */
export function sealOf(item: Record<string, unknown> | undefined, nowMs: number): Seal | undefined {
  if (item === undefined || item.kind !== DELETION_RECORD_KIND || typeof item.sealed_at !== 'string')
    return undefined;
  const expires = typeof item.expires_at === 'number' ? item.expires_at : undefined;
  if (expires !== undefined && expires * 1000 <= nowMs) return undefined;
  return {
    sealedAt: item.sealed_at,
    ...(expires !== undefined ? { until: new Date(expires * 1000).toISOString() } : {}),
  };
}

/** The seals of workspaces as one process knows them, read through a cache (see the header). */
export class WorkspaceSeals {
  private readonly cache = new Map<string, { seal: Seal | undefined; readAt: number }>();

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly now: () => number = Date.now,
  ) {}

  /** The workspace's seal, or undefined; names that are not a workspace's (the table's own partition) have none. */
  async sealed(tableName: string, workspace: string): Promise<Seal | undefined> {
    if (!WORKSPACE_PATTERN.test(workspace)) return undefined;
    const key = `${tableName}\u0000${workspace}`;
    const now = this.now();
    const cached = this.cache.get(key);
    if (cached !== undefined && now - cached.readAt < SEAL_CACHE_MS) {
      return cached.seal?.until !== undefined && Date.parse(cached.seal.until) <= now
        ? undefined
        : cached.seal;
    }
    const item = await new TableReads(this.client, tableName).getItem(deletionRecordKey(workspace));
    const seal = sealOf(item, now);
    if (this.cache.size >= 10_000) this.cache.clear();
    this.cache.set(key, { seal, readAt: now });
    return seal;
  }

  /** Throws WorkspaceDeletedError when the workspace is sealed. */
  async refuseSealed(tableName: string, workspace: string): Promise<void> {
    const seal = await this.sealed(tableName, workspace);
    if (seal !== undefined) throw new WorkspaceDeletedError(workspace, seal.sealedAt, seal.until);
  }

  /** Forgets what was read of a workspace (the deletion that seals it knows at once). */
  forget(tableName: string, workspace: string): void {
    this.cache.delete(`${tableName}\u0000${workspace}`);
  }
}

/** A guard for writes that are not the table's (timers): throws WorkspaceDeletedError for a sealed workspace. */
export function sealGuard(
  client: DynamoDBDocumentClient,
  tableName: string,
): { refuseSealed(workspace: string): Promise<void> } {
  const seals = workspaceSeals(client);
  return { refuseSealed: (workspace) => seals.refuseSealed(tableName, workspace) };
}

/** The SealedWorkspaces port on a client's seal cache, for one table (the publisher's). */
export function sealedWorkspaces(client: DynamoDBDocumentClient, tableName: string): SealedWorkspaces {
  const seals = workspaceSeals(client);
  return { isSealed: async (workspace) => (await seals.sealed(tableName, workspace)) !== undefined };
}

const sealsByClient = new WeakMap<object, WorkspaceSeals>();

/** The one seal cache of a client: what its item rules check, and what the publisher and timers ask. */
export function workspaceSeals(client: DynamoDBDocumentClient): WorkspaceSeals {
  let seals = sealsByClient.get(client.middlewareStack);
  if (seals === undefined) {
    seals = new WorkspaceSeals(client);
    sealsByClient.set(client.middlewareStack, seals);
  }
  return seals;
}
