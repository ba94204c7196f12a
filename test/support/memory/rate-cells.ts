/**
 * In-memory rate cells for unit tests: the same contract as `DynamoRateCells` (`shared/ports/rate-cells.ts`),
 * GCRA's `max(tat, now)` computed directly. `test/integration/request-rate.test.ts` holds the DynamoDB adapter to
 * the same behaviour on DynamoDB Local.
 */
import type { RateCells, RateTake, RateTakeResult } from '#shared/ports/rate-cells.ts';

export class InMemoryRateCells implements RateCells {
  readonly cells = new Map<string, number>();
  takes = 0;

  async take(workspace: string, key: string, request: RateTake): Promise<RateTakeResult> {
    this.takes++;
    const id = `${workspace}\u0000${key}`;
    const tat = this.cells.get(id);
    const next = Math.max(tat ?? request.now, request.now) + request.incrementMs;
    if (next - request.now > request.capacityMs) return { admitted: false, tat: tat ?? request.now };
    this.cells.set(id, next);
    return { admitted: true, tat: next };
  }
}
