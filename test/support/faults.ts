/**
 * Fault injection for the chaos suite: wraps the pipeline's IO (the store and the claims) so that a chosen call
 * is throttled (DynamoDB's own ProvisionedThroughputExceededException, as the SDK throws it) or is where the
 * worker dies (the call never returns: whatever the worker held, it keeps holding, as a crashed Lambda does).
 */
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import type { Claims } from '#shared/ports/claims.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';

export type Fault = 'ok' | 'throttle' | 'die-before' | 'die-after';

/** Decides the fate of IO call number `n` (1-based, counted over store and claims) named `op`. */
export type FaultPlan = (n: number, op: string) => Fault;

export function throttlingError(): Error {
  return new ProvisionedThroughputExceededException({
    message: 'The level of configured provisioned throughput for the table was exceeded',
    $metadata: { httpStatusCode: 400 },
  });
}

/** The port methods (each one DynamoDB call or more); an adapter's own helpers are not IO calls. */
const STORE_METHODS: readonly (keyof ExecutorStore)[] = [
  'create',
  'get',
  'getContextView',
  'getVersion',
  'history',
  'update',
  'upsert',
  'delete',
  'list',
  'contextViews',
];
const CLAIMS_METHODS: readonly (keyof Claims)[] = ['acquire', 'complete', 'release'];

export interface FaultyIo {
  store: ExecutorStore;
  claims: Claims;
  /** IO calls made so far. */
  readonly calls: string[];
  /** Resolves when the worker has died (a `die-*` fault was reached). */
  readonly died: Promise<string>;
}

export function faultyIo(io: { store: ExecutorStore; claims: Claims }, plan: FaultPlan): FaultyIo {
  const calls: string[] = [];
  let onDeath: (op: string) => void = () => undefined;
  const died = new Promise<string>((resolve) => {
    onDeath = resolve;
  });
  const wrap = <T extends object>(target: T, prefix: string, methods: readonly string[]): T =>
    new Proxy(target, {
      get(object, property, receiver) {
        const value: unknown = Reflect.get(object, property, receiver);
        if (typeof value !== 'function' || !methods.includes(String(property))) return value;
        const op = `${prefix}.${String(property)}`;
        return async (...args: unknown[]) => {
          calls.push(op);
          const fault = plan(calls.length, op);
          if (fault === 'throttle') throw throttlingError();
          if (fault === 'die-before') {
            onDeath(op);
            return new Promise(() => undefined);
          }
          const result: unknown = await (value as (...a: unknown[]) => unknown).apply(receiver, args);
          if (fault === 'die-after') {
            onDeath(op);
            return new Promise(() => undefined);
          }
          return result;
        };
      },
    });
  return {
    store: wrap(io.store, 'store', STORE_METHODS),
    claims: wrap(io.claims, 'claims', CLAIMS_METHODS),
    calls,
    died,
  };
}

/** A seeded PRNG (mulberry32), so a random fault schedule is the same on every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
