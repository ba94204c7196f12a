/**
 * The wait index in memory, for unit tests: the port's semantics (per-key bound, idempotent add, oldest first)
 * without DynamoDB. The DynamoDB adapter is exercised against DynamoDB Local by the integration tests.
 */
import {
  byOldestWait,
  correlationText,
  MAX_WAITERS_PER_KEY,
  type Waiter,
  type WaitIndex,
  WaitIndexFullError,
  type WaitKey,
} from '#shared/ports/wait-index.ts';

export class MemoryWaitIndex implements WaitIndex {
  readonly keys = new Map<string, Map<string, Waiter>>();

  constructor(private readonly maxPerKey = MAX_WAITERS_PER_KEY) {}

  private keyOf(key: WaitKey): string {
    return [key.workspace, key.workflow, key.step, correlationText(key.correlation)].join('\u0000');
  }

  async add(key: WaitKey, waiter: Waiter): Promise<void> {
    const k = this.keyOf(key);
    const waiters = this.keys.get(k) ?? new Map<string, Waiter>();
    if (waiters.has(waiter.attempt_id)) return;
    if (waiters.size >= this.maxPerKey) throw new WaitIndexFullError(`${this.maxPerKey} runs already wait`);
    waiters.set(waiter.attempt_id, { ...waiter });
    this.keys.set(k, waiters);
  }

  async remove(key: WaitKey, attemptId: string): Promise<void> {
    const k = this.keyOf(key);
    const waiters = this.keys.get(k);
    waiters?.delete(attemptId);
    if (waiters?.size === 0) this.keys.delete(k);
  }

  async waiting(key: WaitKey): Promise<Waiter[]> {
    return [...(this.keys.get(this.keyOf(key))?.values() ?? [])].sort(byOldestWait);
  }

  /** Every entry, for assertions. */
  size(): number {
    let n = 0;
    for (const waiters of this.keys.values()) n += waiters.size;
    return n;
  }
}
