/**
 * The per-workspace request rate (DESIGN.md "Tenants", share): every request a caller makes in a workspace — to the
 * API, and each JSON-RPC message to the MCP and A2A servers — takes from that workspace's allowance of
 * `requestsPerSecond` with bursts up to `burst`; past it the request is answered 429 with `Retry-After` and a
 * problem naming the limit (`TooManyRequestsError`), before it reads or writes anything. One workspace's flood
 * therefore costs its neighbours one small conditional write per admitted request, not the API's time.
 *
 * The state is shared by every instance (Lambda containers, `crumbs dev`'s processes): a GCRA cell per workspace in
 * the table (`RateCells`; `shared/adapters/dynamodb/rate-cells.ts`). An in-process bucket per instance would limit
 * nothing, since Lambda spreads a flood over as many containers as it needs. GCRA (the generic cell rate
 * algorithm, a token bucket kept as one timestamp) needs one number per workspace and one conditional write per
 * admitted request, and gives an exact `Retry-After`.
 *
 * What an instance learns it keeps: the TAT a cell last showed, and what its own takes still in flight would add
 * to it. The TAT only moves forward, so a request that would not fit even at that TAT plus the takes in flight is
 * refused here without a write: if those takes are admitted the cell has no room left for it, and if they are
 * refused the cell was fuller still. Without the takes in flight a flood's concurrent requests would each send the
 * cell a write whenever it had room for one more (one admitted, the rest refused by the table, each a billed write);
 * with them an instance sends about as many writes as the cell admits. One that might fit goes to the cell, which
 * decides.
 *
 * Failing open: a cell that cannot be reached (throttled, a network fault) admits the request and logs it — an
 * API that stops for everybody when the limiter's storage hiccups would be worse than a moment without the limit.
 *
 * The cost (`npm run bench:throttle`): one UpdateItem per admitted request (1 WRU); a refusal costs a write only when
 * another instance filled the cell since this one last saw it.
 */
import { PayloadTooLargeError, TooManyRequestsError, WorkspaceDeletedError } from '#shared/domain/errors.ts';
import type { Log } from '#shared/ports/log.ts';
import type { RateCells } from '#shared/ports/rate-cells.ts';
import { ENV } from '#shared/topology.ts';

export interface RequestRateLimit {
  /** Sustained requests per second; 0 turns the limit off. */
  readonly requestsPerSecond: number;
  /** How many requests may come at once above the sustained rate (at least 1). */
  readonly burst: number;
}

export interface RequestRateLimits extends RequestRateLimit {
  /** Workspaces the operator set apart, with limits of their own (either number may be left out). */
  readonly workspaces?: Readonly<
    Record<string, { readonly requestsPerSecond?: number | undefined; readonly burst?: number | undefined }>
  >;
}

export interface RequestRateDeps {
  readonly cells: RateCells;
  readonly limits: RequestRateLimits;
  /** Named in the 429's problem: where the operator raises the limit. */
  readonly setting?: string;
  readonly log?: Log | undefined;
  readonly now?: () => number;
}

/** The key of the request cell under each workspace (`#rate#requests`). */
export const REQUEST_CELL = 'requests';
/** How many workspaces' last seen TATs an instance keeps (the oldest are forgotten first). */
const MAX_REMEMBERED = 10_000;

export const DEFAULT_RATE_SETTING = `${ENV.workspaceRequestRate} and ${ENV.workspaceRequestBurst} (CDK context crumbs:tenantLimits workspaceRequestRate, workspaceRequestBurst; one workspace: crumbs:workspaceQuotas)`;

export class RequestRate {
  private readonly seen = new Map<string, number>();
  /** Per workspace, the milliseconds of TAT this instance's takes in flight would add if admitted. */
  private readonly inFlight = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly deps: RequestRateDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** The limit that applies to `workspace`. */
  limitOf(workspace: string): RequestRateLimit {
    const own = this.deps.limits.workspaces?.[workspace];
    return {
      requestsPerSecond: own?.requestsPerSecond ?? this.deps.limits.requestsPerSecond,
      burst: own?.burst ?? this.deps.limits.burst,
    };
  }

  /**
   * Takes `cost` requests (a JSON-RPC batch takes one per message) from the workspace's allowance, or throws
   * `TooManyRequestsError` saying when to come back. Nothing is read or written when the limit is off.
   */
  async admit(workspace: string, cost = 1): Promise<void> {
    const limit = this.limitOf(workspace);
    if (limit.requestsPerSecond <= 0) return;
    const interval = 1000 / limit.requestsPerSecond;
    const burst = Math.max(1, limit.burst);
    if (cost > burst) {
      throw new PayloadTooLargeError(
        `this request counts as ${cost} requests, more than the ${burst} workspace ${workspace} may make at once (its request rate's burst): send it in smaller parts`,
      );
    }
    const now = this.now();
    const incrementMs = cost * interval;
    const capacityMs = burst * interval;
    const hint = this.seen.get(workspace);
    const pending = this.inFlight.get(workspace) ?? 0;
    // The least the cell can hold: the last TAT seen (or an idle cell), plus what this instance's takes in flight add.
    const least = Math.max(hint ?? now, now) + pending;
    if (least + incrementMs - now > capacityMs) {
      throw this.refusal(workspace, limit, least + incrementMs - capacityMs - now);
    }
    this.inFlight.set(workspace, pending + incrementMs);
    let result: Awaited<ReturnType<RateCells['take']>>;
    try {
      result = await this.deps.cells.take(workspace, REQUEST_CELL, {
        now,
        incrementMs,
        capacityMs,
        // With takes in flight the cell is likely busy by the time this one lands: try that update first.
        ...(pending > 0 ? { hintTat: least } : hint !== undefined ? { hintTat: hint } : {}),
      });
    } catch (error) {
      // A workspace its deletion has sealed takes no writes, its cell included: the request is admitted to be
      // answered as the workspace's state says (the deletion's own calls go on; a write gets its 410).
      if (error instanceof WorkspaceDeletedError) return;
      this.deps.log?.warn('the request rate could not be checked; the request is admitted', {
        workspace,
        error,
      });
      return;
    } finally {
      const left = (this.inFlight.get(workspace) ?? incrementMs) - incrementMs;
      if (left > 0) this.inFlight.set(workspace, left);
      else this.inFlight.delete(workspace);
    }
    this.remember(workspace, result.tat);
    if (!result.admitted) throw this.refusal(workspace, limit, result.tat + incrementMs - capacityMs - now);
  }

  private remember(workspace: string, tat: number): void {
    if (!Number.isFinite(tat)) return;
    // Takes answer out of order; the TAT only moves forward, so the latest seen is the largest.
    const latest = Math.max(tat, this.seen.get(workspace) ?? tat);
    this.seen.delete(workspace);
    if (this.seen.size >= MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
    this.seen.set(workspace, latest);
  }

  private refusal(workspace: string, limit: RequestRateLimit, waitMs: number): TooManyRequestsError {
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    return new TooManyRequestsError(
      `workspace ${workspace} is over its request rate of ${limit.requestsPerSecond} requests per second (bursts of ${limit.burst}); retry after ${seconds} s`,
      seconds,
      {
        limit: {
          name: 'workspace_request_rate',
          scope: `workspace ${workspace}`,
          requests_per_second: limit.requestsPerSecond,
          burst: limit.burst,
          setting: this.deps.setting ?? DEFAULT_RATE_SETTING,
        },
      },
    );
  }
}

/**
 * What a JSON-RPC body (MCP, A2A) costs of the request rate: one per message of a batch, else one. A body that is
 * not JSON costs one (the server answers it with a JSON-RPC error).
 */
export function jsonRpcCost(body: string | undefined): number {
  const text = body?.trimStart() ?? '';
  if (!text.startsWith('[')) return 1;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? Math.max(1, parsed.length) : 1;
  } catch {
    return 1;
  }
}
