/**
 * The claims port: at most one live execution per (executor, trigger id, trigger version), so duplicate
 * deliveries do not run twice at once and a finished trigger is not run again. Adapters: DynamoDB
 * (`shared/adapters/dynamodb/claims.ts`, items in the breadcrumbs table) and in memory.
 *
 * Exactly-once *responses* do not rest on claims but on deterministic output ids (a repeated create is a replay);
 * a claim keeps work from being repeated while another worker is on it and lets a finished trigger be skipped
 * cheaply. A claim's lease is the function timeout: a live worker cannot still be running after it, so a claim
 * whose lease ran out belongs to a worker that died, and the next delivery takes it over.
 */

export interface ClaimKey {
  workspace: string;
  /** The definition id. */
  executor: string;
  triggerId: string;
  triggerVersion: number;
}

export type ClaimOutcome =
  | {
      status: 'acquired';
      token: string;
      /** A previous holder's lease ran out: this is a re-execution. */
      takeover: boolean;
    }
  | { status: 'done' }
  | { status: 'busy'; leaseUntil: number };

export interface Claims {
  acquire(key: ClaimKey, leaseMs: number): Promise<ClaimOutcome>;
  /** Marks the trigger answered (whoever completes: outputs have deterministic ids). */
  complete(key: ClaimKey, token: string): Promise<void>;
  /** Gives a claim up early (a retriable failure), so the retry need not wait for the lease. */
  release(key: ClaimKey, token: string): Promise<void>;
}
