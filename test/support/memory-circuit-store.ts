/** The CircuitStore port in memory, for unit tests (DynamoDB's conditional writes, without DynamoDB). */
import type { CircuitState, CircuitStore, StoredCircuit } from '#shared/ports/circuit-store.ts';

export class InMemoryCircuitStore implements CircuitStore {
  readonly items = new Map<string, StoredCircuit>();

  async get(workspace: string, key: string): Promise<StoredCircuit | undefined> {
    return this.items.get(`${workspace}\u0000${key}`);
  }

  async put(
    workspace: string,
    key: string,
    circuit: CircuitState,
    expectedVersion: number,
  ): Promise<boolean> {
    const id = `${workspace}\u0000${key}`;
    if ((this.items.get(id)?.version ?? 0) !== expectedVersion) return false;
    this.items.set(id, { circuit, version: expectedVersion + 1 });
    return true;
  }
}
