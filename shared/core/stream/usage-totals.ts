/**
 * Usage totals from the stream: the `llm_usage` records (`shared/domain/llm-usage.ts`) in a batch's new
 * breadcrumb writes, summed per workspace and counter — the workspace's hour (`day`), the agent's, the run's and the
 * thread's — and added with one update per counter per batch, never a write per call.
 *
 * Exactly once: each write's contribution is named by `<breadcrumb id>@<version>`, and a counter adds a
 * contribution only if its set of applied names lacks it (conditional update, `UsageTotals.add`). A batch Lambda
 * hands over again (a failure later in the batch, a crash, a timeout) so adds nothing twice. The sets stay bounded
 * because counters are per UTC hour: a set holds one hour's writes into its counter.
 *
 * Only crumbs' own writers are believed (`writtenUsageOf`). The agent a record counts for is its writer, never
 * what it claims.
 */
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { writtenUsageOf } from '#shared/domain/llm-usage.ts';
import type { Log } from '#shared/ports/log.ts';
import {
  addAmounts,
  amountsOf,
  type UsageAmounts,
  type UsageContribution,
  type UsageCounter,
  type UsageTotals,
  zeroAmounts,
} from '#shared/ports/usage-totals.ts';

/** Counters updated at once; the rest wait (a batch of a busy workspace touches a few dozen). */
const CONCURRENCY = 8;

interface Pending {
  workspace: string;
  counter: UsageCounter;
  contributions: UsageContribution[];
  /** The earliest stream record that contributes. */
  sequence: string;
}

/** The counters a batch's writes add to, in stream order of their first contribution. */
export function usageCounters(writes: readonly { record: Breadcrumb; sequence: string }[]): Pending[] {
  const counters = new Map<string, Pending>();
  for (const { record, sequence } of writes) {
    const usage = writtenUsageOf(record);
    if (usage === undefined) continue;
    const amounts = amountsOf(usage);
    const writer = record.updated_by;
    const hour = record.updated_at.slice(0, 13);
    const agent = writer.startsWith('agent:') ? writer.slice('agent:'.length) : writer;
    const keys: [UsageCounter['dimension'], string | undefined][] = [
      ['day', '*'],
      ['agent', agent],
      ['run', usage.run_id],
      ['thread', usage.thread],
      // No counter per request: a request's calls are the `llm_usage` of what its invocations wrote (its answer,
      // its tool requests), and a counter per request would cost every turn a write unit or two more.
    ];
    const id = `${record.id}@${record.version}`;
    for (const [dimension, key] of keys) {
      if (key === undefined) continue;
      const name = `${record.workspace}\u0000${dimension}\u0000${hour}\u0000${key}`;
      let pending = counters.get(name);
      if (!pending) {
        pending = {
          workspace: record.workspace,
          counter: { dimension, key, hour },
          contributions: [],
          sequence,
        };
        counters.set(name, pending);
      }
      pending.contributions.push({ id, amounts: addAmounts(zeroAmounts(), amounts) });
    }
  }
  return [...counters.values()];
}

/**
 * Adds the writes' usage to the totals; returns the earliest stream sequence whose usage could not be added (the
 * batch is handed over again from there, and what was added already is not added twice), or undefined.
 */
export async function recordUsage(
  writes: readonly { record: Breadcrumb; sequence: string }[],
  totals: UsageTotals,
  log?: Log,
): Promise<string | undefined> {
  const pending = usageCounters(writes);
  const failed: string[] = [];
  for (let i = 0; i < pending.length; i += CONCURRENCY) {
    await Promise.all(
      pending.slice(i, i + CONCURRENCY).map(async (p) => {
        try {
          await totals.add(p.workspace, p.counter, p.contributions);
        } catch (error) {
          log?.warn('could not add usage totals; the records will be retried', {
            workspace: p.workspace,
            counter: `${p.counter.dimension}:${p.counter.key}@${p.counter.hour}`,
            error: (error as Error).message,
          });
          failed.push(p.sequence);
        }
      }),
    );
  }
  return failed.sort(compareSequence)[0];
}

/** Sums amounts (the API's totals over rows). */
export function sumAmounts(rows: readonly UsageAmounts[]): UsageAmounts {
  return rows.reduce((sum, row) => addAmounts(sum, row), zeroAmounts());
}

function compareSequence(a: string, b: string): number {
  return a.length === b.length ? a.localeCompare(b) : a.length - b.length;
}
