/**
 * A workspace's, and a token's, share of the streams crumbs holds open for callers: the SSE route, MCP progress
 * and A2A streaming each subscribe to a channel for their caller and hold it (and, on AWS, a Lambda) until the
 * answer ends. Without a share, one workspace's streams could take every connection the channels' service gives
 * the account (AppSync Events' quotas are per account and region; the local events server has a total) and the
 * neighbours' streams would fail. So each stream first takes a lease: one of `perWorkspace` slots of its workspace
 * and one of `perToken` slots of the caller's token, both below any total; over either, the caller is answered 429
 * with `Retry-After` and nothing is opened. Leases live in the table (`WorkspaceSlots`, shared by every Lambda
 * instance and by the local stack alike), are given back when the stream ends, and run out by themselves after
 * `leaseMs` (longer than any stream lasts) if the process holding one dies.
 *
 * A token is told apart by a digest of the bearer token itself (never stored or logged as it is): the same
 * person's refreshed token is another token, which the workspace's share still bounds.
 */
import { createHash, randomUUID } from 'node:crypto';
import { TooManyRequestsError } from '#shared/domain/errors.ts';
import { type Log, silentLog } from '#shared/ports/log.ts';
import type { WorkspaceSlots } from '#shared/ports/workspace-slots.ts';

export interface StreamLimits {
  /** Streams held open at once for one workspace's callers. */
  readonly perWorkspace: number;
  /** Streams held open at once for one token. */
  readonly perToken: number;
  /** How long a lease lasts if nobody gives it back (longer than the longest stream). */
  readonly leaseMs: number;
  /** What a refusal asks the caller to wait (seconds). */
  readonly retryAfterSeconds: number;
}

/**
 * 40 streams per workspace and 20 per token, each lease lasting 16 minutes: a stream lasts at most 10 minutes
 * (SSE) or a Lambda's 15. Below the local events server's share per workspace (100 connections), so a workspace
 * that reaches its share of streams still has connections for its CLI and dashboard.
 */
export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  perWorkspace: 40,
  perToken: 20,
  leaseMs: 16 * 60_000,
  retryAfterSeconds: 10,
};

/** The partition a token's leases are kept in: `#` is in no workspace name, so it is nobody's workspace. */
function tokenPartition(authorization: string): string {
  const token = authorization.replace(/^Bearer\s+/i, '');
  return `#token#${createHash('sha256').update(token).digest('hex').slice(0, 32)}`;
}

export class StreamLeases {
  constructor(
    private readonly slots: WorkspaceSlots,
    private readonly limits: StreamLimits = DEFAULT_STREAM_LIMITS,
    private readonly log: Log = silentLog,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Takes a lease for one stream of `workspace` opened with `authorization`; resolves with the function that
   * gives it back (once; later calls do nothing; it never rejects: a lease that cannot be given back runs out by
   * itself after `leaseMs`). Throws TooManyRequestsError over either share, holding nothing.
   */
  async take(workspace: string, authorization: string): Promise<() => Promise<void>> {
    const holder = randomUUID();
    const now = this.now();
    const until = now + this.limits.leaseMs;
    const { perWorkspace, perToken, retryAfterSeconds } = this.limits;
    if (!(await this.slots.take(workspace, holder, until, perWorkspace, now))) {
      throw new TooManyRequestsError(
        `workspace ${workspace} holds ${perWorkspace} streams open, its share; try again in ${retryAfterSeconds} s`,
        retryAfterSeconds,
      );
    }
    const token = tokenPartition(authorization);
    try {
      if (!(await this.slots.take(token, holder, until, perToken, now))) {
        throw new TooManyRequestsError(
          `this token holds ${perToken} streams open, its share; try again in ${retryAfterSeconds} s`,
          retryAfterSeconds,
        );
      }
    } catch (error) {
      await this.giveBack(workspace, holder);
      throw error;
    }
    let given: Promise<void> | undefined;
    return () => {
      given ??= Promise.all([this.giveBack(workspace, holder), this.giveBack(token, holder)]).then(
        () => undefined,
      );
      return given;
    };
  }

  private async giveBack(partition: string, holder: string): Promise<void> {
    try {
      await this.slots.give(partition, holder);
    } catch (error) {
      this.log.warn('a stream lease was not given back; it runs out by itself', {
        partition: partition.startsWith('#token#') ? '#token#…' : partition,
        error: error instanceof Error ? error.message : String(error),
        lease_ms: this.limits.leaseMs,
      });
    }
  }
}
