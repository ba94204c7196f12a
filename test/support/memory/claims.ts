/**
 * The claims port in memory, with the DynamoDB adapter's semantics (`shared/adapters/dynamodb/claims.ts`): a claim
 * is acquired when there is none or when the running holder's lease has run out (a takeover), `done` once
 * completed by anyone, and released only by the token that holds it. For unit tests and the chaos suite; the
 * clock is injectable so a test can let a lease run out.
 */
import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { ClaimKey, ClaimOutcome, Claims } from '#shared/ports/claims.ts';

interface Claim {
  state: 'running' | 'done';
  token: string;
  leaseUntil: number;
}

export class InMemoryClaims implements Claims {
  private readonly claims = new Map<string, Claim>();
  private readonly clock: Clock;

  constructor(options: { clock?: Clock } = {}) {
    this.clock = options.clock ?? systemClock;
  }

  async acquire(key: ClaimKey, leaseMs: number): Promise<ClaimOutcome> {
    const now = this.clock.now().getTime();
    const id = claimKey(key);
    const current = this.claims.get(id);
    if (current === undefined || (current.state === 'running' && current.leaseUntil < now)) {
      const token = randomUUID();
      this.claims.set(id, { state: 'running', token, leaseUntil: now + leaseMs });
      return { status: 'acquired', token, takeover: current !== undefined };
    }
    if (current.state === 'done') return { status: 'done' };
    return { status: 'busy', leaseUntil: current.leaseUntil };
  }

  async complete(key: ClaimKey, token: string): Promise<void> {
    const current = this.claims.get(claimKey(key));
    if (current) this.claims.set(claimKey(key), { ...current, state: 'done', token });
  }

  async release(key: ClaimKey, token: string): Promise<void> {
    const current = this.claims.get(claimKey(key));
    if (current?.state === 'running' && current.token === token) this.claims.delete(claimKey(key));
  }
}

function claimKey(key: ClaimKey): string {
  return `${key.workspace}\u0000${key.executor}\u0000${key.triggerId}@${key.triggerVersion}`;
}
