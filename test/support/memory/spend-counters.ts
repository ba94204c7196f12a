/**
 * The spend counters in memory, with the DynamoDB adapter's semantics (`shared/adapters/dynamodb/budget-counters.ts`):
 * a reservation adds to `committed` only while it stays within `max` (atomic: JavaScript runs one update at a time,
 * as the conditional write does), a settlement adds each field. Counts the requests a table would see.
 */
import type { SpendCounter, SpendCounters } from '#shared/ports/budget-counters.ts';

export class InMemorySpendCounters implements SpendCounters {
  readonly items = new Map<string, SpendCounter>();
  writes = 0;
  reads = 0;

  /** The counter of `workspace` and `key` (zeros when there is none). */
  counter(workspace: string, key: string): SpendCounter {
    return { ...(this.items.get(`${workspace}/${key}`) ?? { committed: 0, spent: 0, calls: 0 }) };
  }

  async reserve(workspace: string, key: string, amount: number, max: number) {
    this.writes++;
    const counter = this.counter(workspace, key);
    // As the condition `attribute_not_exists(committed) OR committed <= :max`.
    if (this.items.has(`${workspace}/${key}`) && counter.committed > max) return { reserved: false, counter };
    counter.committed += amount;
    this.items.set(`${workspace}/${key}`, counter);
    return { reserved: true, counter: { ...counter } };
  }

  async settle(workspace: string, key: string, change: SpendCounter) {
    this.writes++;
    const counter = this.counter(workspace, key);
    this.items.set(`${workspace}/${key}`, {
      committed: counter.committed + change.committed,
      spent: counter.spent + change.spent,
      calls: counter.calls + change.calls,
    });
  }

  async readSpend(workspace: string, key: string) {
    this.reads++;
    return this.counter(workspace, key);
  }
}
