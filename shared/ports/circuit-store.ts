/**
 * Where circuit breakers keep their state, shared by every Lambda instance (DynamoDB on AWS and locally; an
 * in-memory fake in unit tests). Writes are conditional on the version read, so concurrent instances agree.
 */

export interface CircuitState {
  readonly state: 'closed' | 'open' | 'half-open';
  /** Consecutive failures since the last success. */
  readonly failures: number;
  /** When the circuit last opened (ms since epoch); with the cool-down, when a trial call may go through. */
  readonly openedAt?: number;
  /** When the half-open trial started (ms), so a trial that crashed does not block the circuit forever. */
  readonly trialAt?: number;
  readonly lastError?: string;
}

export interface StoredCircuit {
  readonly circuit: CircuitState;
  readonly version: number;
}

export interface CircuitStore {
  get(workspace: string, key: string): Promise<StoredCircuit | undefined>;
  /** Writes if the stored version is still `expectedVersion` (0: absent); false when someone else wrote first. */
  put(workspace: string, key: string, circuit: CircuitState, expectedVersion: number): Promise<boolean>;
}
