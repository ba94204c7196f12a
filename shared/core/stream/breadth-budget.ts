/**
 * The breadth budget (DESIGN.md "Tenants", breadth): the publisher routes at most `threadBudget` events of
 * breadcrumbs that executors wrote in one thread, and at most `workspaceEventRate` events of one workspace per
 * window. Over a budget it sheds: the events are not routed (the breadcrumbs stay in the table), one
 * `system.loop_stopped.v1` names the budget (deterministic id, so a repeat replays it), and the batch never fails.
 *
 * Counting without a write per breadcrumb: each publisher instance counts in memory and adds its count to a
 * shared counter item (one UpdateItem ADD per key) only once it reaches a flush step (a twentieth of the limit),
 * or when its last known total plus its count would pass the limit. A thread or a window of ordinary
 * size never costs a request; a storm costs one UpdateItem per step. What an instance has not flushed (less than
 * a step) can pass the limit before the stop, so a budget holds within `step × publisher instances`; a shard's
 * records are handled by one instance at a time, so locally (one poller) that is one step. A counter that cannot
 * be written routes (the budget fails open for a moment rather than failing a batch that holds neighbours).
 */

import { createHash } from 'node:crypto';
import { CreateBreadcrumbSchema, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { LOOP_STOPPED_SCHEMA, threadTag } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { BudgetCounters } from '#shared/ports/budget-counters.ts';
import type { BusEntry } from '#shared/ports/event-bus.ts';
import type { Log } from '#shared/ports/log.ts';
import { ENV } from '#shared/topology.ts';

export const BUDGET_PRINCIPAL = 'system:breadth-budget';

export interface BreadthLimits {
  threadBudget: number;
  workspaceEventRate: number;
  workspaceEventWindowSeconds: number;
}

export interface BreadthBudgetDeps {
  counters: Pick<BudgetCounters, 'add'>;
  store: Pick<BreadcrumbStore, 'create'>;
  limits: BreadthLimits;
  log?: Log | undefined;
  now?: () => number;
}

/** Thread counters live a week past their last event: a thread quiet that long starts a fresh budget. */
const THREAD_COUNTER_TTL_SECONDS = 7 * 24 * 60 * 60;
/** Keys remembered per instance (least recently used are forgotten: their unflushed counts are lost). */
const MAX_KEYS = 20_000;

interface Budget {
  key: string;
  workspace: string;
  limit: number;
  kind: 'thread' | 'workspace_rate';
  expiresAt: number;
  thread?: string;
  windowStart?: number;
}

interface Tally {
  /** Counted here, not yet added to the shared counter. */
  pending: number;
  /** The shared total as last read back. */
  known: number;
  /** Over its budget: everything more is shed. */
  stopped: boolean;
  /** The stop record is written. */
  recorded: boolean;
}

/** The counter key of a thread's budget (executors read it: `shared/core/executor/pipeline.ts`). */
export function threadBudgetKey(thread: string): string {
  return `thread#${thread}`;
}

function budgetId(budget: Budget): string {
  return `${budget.workspace}\u0000${budget.key}`;
}

/** A twentieth of the limit: the most one instance can route past it before it knows (5 %). */
export function flushStep(limit: number): number {
  return Math.max(1, Math.floor(limit / 20));
}

/**
 * Decides, for a batch of entries in stream order, which may be routed. One instance per publisher (module scope):
 * its memory is what spares the happy path a write.
 */
export class BreadthBudget {
  private readonly tallies = new Map<string, Tally>();

  constructor(private readonly deps: BreadthBudgetDeps) {}

  /** Entries to route (in order); shed ones are dropped and their stop recorded once. Never throws. */
  async admit<T extends { entry: BusEntry }>(items: readonly T[]): Promise<{ admitted: T[]; shed: number }> {
    const now = (this.deps.now ?? Date.now)();
    const perItem = items.map((item) => this.budgetsOf(item.entry, now));
    const counts = new Map<string, { budget: Budget; n: number }>();
    for (const budgets of perItem)
      for (const b of budgets) {
        const c = counts.get(budgetId(b)) ?? { budget: b, n: 0 };
        c.n++;
        counts.set(budgetId(b), c);
      }
    // Per key: how many of this batch's events still fit (Infinity: all).
    const room = new Map<string, number>();
    await Promise.all(
      [...counts.values()].map(async ({ budget, n }) =>
        room.set(budgetId(budget), await this.count(budget, n)),
      ),
    );
    const used = new Map<string, number>();
    const admitted: T[] = [];
    const firstShed = new Map<string, { budget: Budget; entry: BusEntry }>();
    items.forEach((item, i) => {
      let ok = true;
      for (const b of perItem[i] ?? []) {
        const id = budgetId(b);
        const u = (used.get(id) ?? 0) + 1;
        used.set(id, u);
        if (u > (room.get(id) ?? Number.POSITIVE_INFINITY)) {
          ok = false;
          if (!firstShed.has(id)) firstShed.set(id, { budget: b, entry: item.entry });
        }
      }
      if (ok) admitted.push(item);
    });
    for (const { budget, entry } of firstShed.values()) await this.recordStop(budget, entry);
    return { admitted, shed: items.length - admitted.length };
  }

  /** The budgets an event counts against: its workspace's window, and its thread when an executor wrote it. */
  private budgetsOf(entry: BusEntry, now: number): Budget[] {
    const detail = entry.detail as {
      workspace?: unknown;
      schema_name?: unknown;
      created_by?: unknown;
      causation?: { thread?: unknown; hop?: unknown } | null;
    };
    const workspace = String(detail.workspace);
    // The stop records themselves pass: they end a storm, and whatever they trigger is in the stopped thread.
    if (detail.schema_name === LOOP_STOPPED_SCHEMA && String(detail.created_by).startsWith('system:'))
      return [];
    const { limits } = this.deps;
    const windowMs = limits.workspaceEventWindowSeconds * 1000;
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const budgets: Budget[] = [
      {
        key: `rate#${windowStart}`,
        workspace,
        limit: limits.workspaceEventRate,
        kind: 'workspace_rate',
        expiresAt: Math.floor((windowStart + windowMs) / 1000) + 3600,
        windowStart,
      },
    ];
    const thread = detail.causation?.thread;
    if (typeof thread === 'string' && Number(detail.causation?.hop ?? 0) >= 1) {
      budgets.push({
        key: threadBudgetKey(thread),
        workspace,
        limit: limits.threadBudget,
        kind: 'thread',
        expiresAt: Math.floor(now / 1000) + THREAD_COUNTER_TTL_SECONDS,
        thread,
      });
    }
    return budgets;
  }

  /** Counts `n` more events against `budget`; returns how many of them fit. */
  private async count(budget: Budget, n: number): Promise<number> {
    const id = budgetId(budget);
    const tally = this.tallies.get(id) ?? { pending: 0, known: 0, stopped: false, recorded: false };
    this.tallies.delete(id);
    this.tallies.set(id, tally);
    if (this.tallies.size > MAX_KEYS) this.tallies.delete(this.tallies.keys().next().value as string);
    if (tally.stopped) return 0;
    tally.pending += n;
    if (tally.pending < flushStep(budget.limit) && tally.known + tally.pending <= budget.limit)
      return Number.POSITIVE_INFINITY;
    const adding = tally.pending;
    let total: number;
    try {
      total = await this.deps.counters.add(budget.workspace, budget.key, adding, budget.expiresAt);
    } catch (error) {
      this.deps.log?.warn('could not count against the breadth budget; routing', {
        workspace: budget.workspace,
        budget: budget.key,
        error: (error as Error).message,
      });
      return Number.POSITIVE_INFINITY;
    }
    tally.pending = 0;
    tally.known = total;
    // This batch's events are the last `n` of the total (anything else added since came before them).
    const fit = Math.max(0, budget.limit - (total - n));
    tally.stopped = total >= budget.limit;
    return fit;
  }

  private async recordStop(budget: Budget, entry: BusEntry): Promise<void> {
    const tally = this.tallies.get(budgetId(budget));
    if (tally) tally.stopped = true;
    if (tally?.recorded) return;
    const detail = entry.detail as {
      id: string;
      version: number;
      schema_name: string;
      causation?: { thread: string; hop: number } | null;
    };
    const { limits } = this.deps;
    const context =
      budget.kind === 'thread'
        ? {
            budget: 'thread',
            thread: budget.thread,
            limit: budget.limit,
            reason: `executors wrote more than ${budget.limit} breadcrumbs in thread ${budget.thread} (the thread budget, ${ENV.threadBudget}); nothing more of it is routed`,
          }
        : {
            budget: 'workspace_rate',
            limit: budget.limit,
            window_seconds: limits.workspaceEventWindowSeconds,
            window_start: new Date(budget.windowStart ?? 0).toISOString(),
            reason: `workspace ${budget.workspace} changed more than ${budget.limit} breadcrumbs in ${limits.workspaceEventWindowSeconds} s (the workspace event rate, ${ENV.workspaceEventRate}); nothing more is routed until the window ends`,
          };
    const first = { id: detail.id, version: detail.version, schema_name: detail.schema_name };
    try {
      await this.deps.store.create(
        budget.workspace,
        parseOrThrow(CreateBreadcrumbSchema, {
          schema_name: LOOP_STOPPED_SCHEMA,
          title:
            budget.kind === 'thread'
              ? `Loop stopped: thread ${budget.thread} reached its budget of ${budget.limit} breadcrumbs`
              : `Routing paused: the workspace reached ${budget.limit} events in ${limits.workspaceEventWindowSeconds} s`,
          tags: [
            'system:loop_stopped',
            `budget:${budget.kind}`,
            ...(budget.thread ? [threadTag(budget.thread)] : []),
          ],
          context: { ...context, first_shed: first },
        }),
        {
          principal: BUDGET_PRINCIPAL,
          id: `budget-${createHash('sha256').update(budgetId(budget)).digest('hex').slice(0, 26)}`,
          ...(budget.thread && detail.causation
            ? {
                causation: {
                  caused_by: `${detail.id}@${detail.version}`,
                  thread: budget.thread,
                  hop: detail.causation.hop + 1,
                },
              }
            : {}),
        },
      );
      if (tally) tally.recorded = true;
      this.deps.log?.warn('breadth budget reached; shedding', {
        workspace: budget.workspace,
        budget: budget.key,
        limit: budget.limit,
      });
    } catch (error) {
      // Shedding goes on; the record is tried again with the next shed event.
      this.deps.log?.warn('could not record the breadth budget stop', {
        workspace: budget.workspace,
        budget: budget.key,
        error: (error as Error).message,
      });
    }
  }
}
