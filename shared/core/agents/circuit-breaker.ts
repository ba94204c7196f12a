/**
 * A circuit breaker per partner, with its state in a shared store (`CircuitStore`: DynamoDB), so every Lambda
 * instance sees the same circuit and a partner that is down fails fast everywhere.
 *
 *   closed     calls go through; each transport failure counts, a success resets the count.
 *   open       after `failureThreshold` consecutive failures: calls fail at once with CircuitOpenError, which says
 *              since when and until when, without touching the partner.
 *   half-open  once `cooldownMs` has passed, one caller (the one whose conditional write wins) makes a trial call,
 *              after a health check when the partner has one; success closes the circuit, failure re-opens it.
 *              Others still fail fast; a trial that never reported back (its Lambda died) is replaced after
 *              another cool-down.
 *
 * Only transport failures count (`isFailure`: unreachable, timeouts, 5xx); a partner that answers — even with a
 * failed task — is up. When a failure opens the circuit, the caller gets CircuitOpenError (not retriable) rather
 * than the transport error, so the request is answered now instead of being retried into an open circuit.
 */
import { NonRetriableError } from '#shared/domain/errors.ts';
import { type Clock, systemClock } from '#shared/ports/breadcrumb-store.ts';
import type { CircuitState, CircuitStore, StoredCircuit } from '#shared/ports/circuit-store.ts';

export interface CircuitSettings {
  readonly failureThreshold: number;
  readonly cooldownMs: number;
}

export class CircuitOpenError extends NonRetriableError {}

export interface CircuitCall<T> {
  readonly call: () => Promise<T>;
  /** Run before the trial call of a half-open circuit; throwing counts as the trial failing. */
  readonly probe?: () => Promise<void>;
  /** Whether an error means the partner is unavailable (default: every error). */
  readonly isFailure?: (error: unknown) => boolean;
}

const CLOSED: CircuitState = { state: 'closed', failures: 0 };
const WRITE_ATTEMPTS = 3;

export class CircuitBreaker {
  constructor(
    private readonly store: CircuitStore,
    private readonly clock: Clock = systemClock,
  ) {}

  async run<T>(workspace: string, key: string, settings: CircuitSettings, c: CircuitCall<T>): Promise<T> {
    const trial = await this.admit(workspace, key, settings);
    try {
      if (trial && c.probe) await c.probe();
      const result = await c.call();
      await this.update(workspace, key, (s) =>
        s.state === 'closed' && s.failures === 0 ? undefined : CLOSED,
      );
      return result;
    } catch (error) {
      if (!(c.isFailure ?? (() => true))(error)) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      const now = this.clock.now().getTime();
      const after = await this.update(workspace, key, (s) => {
        const failures = s.failures + 1;
        return trial || s.state !== 'closed' || failures >= settings.failureThreshold
          ? { state: 'open', failures, openedAt: now, lastError: reason }
          : { state: 'closed', failures, lastError: reason };
      });
      if (after?.state === 'open') throw openError(key, after, settings, error);
      throw error;
    }
  }

  /** Lets a call through (returns whether it is the half-open trial), or throws CircuitOpenError. */
  private async admit(workspace: string, key: string, settings: CircuitSettings): Promise<boolean> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const stored = await this.store.get(workspace, key);
      const circuit = stored?.circuit ?? CLOSED;
      if (circuit.state === 'closed') return false;
      const now = this.clock.now().getTime();
      const since = circuit.state === 'open' ? (circuit.openedAt ?? 0) : (circuit.trialAt ?? 0);
      if (now < since + settings.cooldownMs) throw openError(key, circuit, settings);
      const taken = await this.store.put(
        workspace,
        key,
        { ...circuit, state: 'half-open', trialAt: now },
        stored?.version ?? 0,
      );
      if (taken) return true;
    }
    throw new CircuitOpenError(`${key}: another call is trying the partner; try again shortly`);
  }

  /** Re-reads and applies `next` until the conditional write wins; `undefined` from `next` writes nothing. */
  private async update(
    workspace: string,
    key: string,
    next: (current: CircuitState) => CircuitState | undefined,
  ): Promise<CircuitState | undefined> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const stored: StoredCircuit | undefined = await this.store.get(workspace, key);
      const value = next(stored?.circuit ?? CLOSED);
      if (value === undefined) return stored?.circuit ?? CLOSED;
      if (await this.store.put(workspace, key, value, stored?.version ?? 0)) return value;
    }
    return undefined;
  }
}

function openError(
  key: string,
  circuit: CircuitState,
  settings: CircuitSettings,
  cause?: unknown,
): CircuitOpenError {
  const opened = circuit.openedAt ?? circuit.trialAt ?? 0;
  const retryAt = new Date(opened + settings.cooldownMs).toISOString();
  return new CircuitOpenError(
    `${key} is unavailable: the circuit is open after ${circuit.failures} consecutive failures` +
      `${circuit.lastError ? ` (last: ${circuit.lastError})` : ''}; the next attempt goes through after ${retryAt}`,
    cause !== undefined ? { cause } : undefined,
  );
}
