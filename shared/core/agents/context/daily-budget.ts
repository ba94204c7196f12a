/**
 * The workspace's daily budget (operator-set, `ENV.dailyBudgets`): a model call is refused once the
 * workspace's spend today (UTC) has reached its limit. The spend is the stream consumer's hourly totals
 * (`shared/core/stream/usage-totals.ts`), read once per workspace per `CACHE_MS` per process, and only for a
 * workspace that has a limit: without one nothing is read.
 *
 * Not exact, and said so: a call's cost reaches the totals when the publisher's batch that carries its write is
 * summed (the stream's batching window, about a second locally and on AWS), and a process goes on with the spend it
 * read for up to `CACHE_MS` (`NEAR_CACHE_MS` once the spend it read is past 80 % of the limit). The overshoot is
 * therefore at most what the workspace's calls cost in one batch window plus one cache period after the limit is
 * crossed — plus each call already in flight, which is never cut off. Request and run budgets are the exact ones.
 */
import type { BudgetStop } from '#shared/domain/budget.ts';
import { usdToNusd } from '#shared/domain/budget.ts';
import type { Clock } from '#shared/ports/breadcrumb-store.ts';
import type { UsageTotals } from '#shared/ports/usage-totals.ts';
import { ENV } from '#shared/topology.ts';

/** How long a process goes on with the spend it read: a turn of several calls reads it about once. */
export const CACHE_MS = 10_000;
/** …and once the spend read is past `NEAR` of the limit, only this long: reads grow only near the limit. */
export const NEAR_CACHE_MS = 1000;
const NEAR = 0.8;

/** The operator's limits in USD per day: a default for every workspace and overrides per workspace. */
export interface DailyBudgetSettings {
  readonly default?: number | undefined;
  readonly workspaces?: Readonly<Record<string, number>> | undefined;
}

export interface DailyBudget {
  /** The workspace's limit in nano-dollars; undefined when it has none. */
  limitFor(workspace: string): number | undefined;
  /** Why the next call of `workspace` may not be made, or undefined when it may. */
  refusal(workspace: string): Promise<BudgetStop | undefined>;
}

/** At most this many workspaces' spend is remembered per process. */
const MAX_CACHED = 1000;

export function dailyBudget(
  settings: DailyBudgetSettings,
  totals: UsageTotals,
  clock: Clock,
  cacheMs: number = CACHE_MS,
  nearCacheMs: number = NEAR_CACHE_MS,
): DailyBudget | undefined {
  const overrides = settings.workspaces ?? {};
  if (settings.default === undefined && Object.keys(overrides).length === 0) return undefined;
  const cache = new Map<string, { day: string; at: number; cost_nusd: number; calls: number }>();

  const limitFor = (workspace: string): number | undefined => {
    const usd = Object.hasOwn(overrides, workspace) ? overrides[workspace] : settings.default;
    return usd === undefined ? undefined : usdToNusd(usd);
  };

  async function spend(workspace: string, limit: number): Promise<{ cost_nusd: number; calls: number }> {
    const now = clock.now();
    const day = now.toISOString().slice(0, 10);
    const cached = cache.get(workspace);
    const ttl = cached !== undefined && cached.cost_nusd >= limit * NEAR ? nearCacheMs : cacheMs;
    if (cached !== undefined && cached.day === day && now.getTime() - cached.at < ttl) return cached;
    const { rows } = await totals.read(workspace, 'day', { fromHour: `${day}T00`, toHour: `${day}T23` }, 24);
    const entry = {
      day,
      at: now.getTime(),
      cost_nusd: rows.reduce((n, r) => n + r.cost_nusd, 0),
      calls: rows.reduce((n, r) => n + r.calls, 0),
    };
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
    cache.set(workspace, entry);
    return entry;
  }

  return {
    limitFor,
    async refusal(workspace) {
      const limit = limitFor(workspace);
      if (limit === undefined) return undefined;
      const today = await spend(workspace, limit);
      if (today.cost_nusd < limit) return undefined;
      return {
        budget: `${ENV.dailyBudgets} (workspace ${workspace}, today UTC)`,
        unit: 'usd',
        limit,
        used: today.cost_nusd,
        calls: today.calls,
      };
    },
  };
}
