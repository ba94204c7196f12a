/**
 * Which buses of the pool (`topology.bus.pool`) hold a workspace's rules, and so which buses the publisher sends
 * that workspace's change events to. Keyed by workspace: every rule is pinned to its definition's workspace, and
 * EventBridge charges per event put on each bus, so a workspace that fits on the first bus costs one PutEvents entry
 * per event. The first bus receives every event (it holds the system rules, and its archive keeps every event).
 *
 * - The rule manager places a rule on the first bus with room (`LimitExceededException` says a bus is full: the
 *   quota is AWS's); a bus new to the workspace is recorded in its `system.bus_placement.v1` breadcrumb (id
 *   `bus-placement`, a conditional write on its version), and the definition is `active` only
 *   `placementCacheSeconds` (+1 s) later.
 * - The publisher reads that breadcrumb (a consistent read) and keeps it at most `placementCacheSeconds`, so an event
 *   written after a definition became `active` is sent to the bus holding its rule.
 * - A bus stays in a placement after its last rule there is deleted (one PutEvents entry per event, never a lost
 *   event): removing it safely would race with a placement on that bus.
 * - With a pool of one bus nothing is read or written: every event goes to that bus.
 */
import { NotFoundError, VersionConflictError } from '#shared/domain/errors.ts';
import { PLACEMENT_SCHEMA } from '#shared/domain/protocol.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';

export const PLACEMENT_ID = 'bus-placement';

export interface Placement {
  /** Buses of the pool, other than the first, that hold (or held) rules of the workspace, in placement order. */
  buses: string[];
  /** When each bus was added (epoch ms): publishers route to it from `placementCacheMs` after that. */
  addedAt: Record<string, number>;
  version: number;
}

export async function readPlacement(store: BreadcrumbStore, workspace: string): Promise<Placement> {
  try {
    const record = await store.get(workspace, PLACEMENT_ID);
    const buses = Array.isArray(record.context.buses)
      ? record.context.buses.filter((b): b is string => typeof b === 'string')
      : [];
    const added = record.context.added_at;
    const addedAt: Record<string, number> = {};
    for (const bus of buses) {
      const at =
        added && typeof added === 'object'
          ? Date.parse(String((added as Record<string, unknown>)[bus]))
          : NaN;
      // A bus without a time (written by hand) counts as added when the placement was last written.
      addedAt[bus] = Number.isFinite(at) ? at : Date.parse(record.updated_at);
    }
    return { buses, addedAt, version: record.version };
  } catch (error) {
    if (error instanceof NotFoundError) return { buses: [], addedAt: {}, version: 0 };
    throw error;
  }
}

/**
 * Adds `bus` to the workspace's placement (a conditional write; concurrent writers are read again). Says when the
 * bus was added — now, or earlier by another writer — since a rule on it is routed only `placementCacheMs` later.
 */
export async function addToPlacement(
  store: BreadcrumbStore,
  workspace: string,
  bus: string,
  principal: string,
  now: () => number = Date.now,
): Promise<{ added: boolean; addedAt: number }> {
  for (let attempt = 0; ; attempt++) {
    const current = await readPlacement(store, workspace);
    const earlier = current.addedAt[bus];
    if (current.buses.includes(bus) && earlier !== undefined) return { added: false, addedAt: earlier };
    const buses = [...current.buses, bus];
    const addedAt = now();
    const times = { ...current.addedAt, [bus]: addedAt };
    try {
      await store.upsert(
        workspace,
        PLACEMENT_ID,
        {
          schema_name: PLACEMENT_SCHEMA,
          title: `event buses holding rules of ${workspace}: ${buses.join(', ')}`,
          tags: ['system', 'bus-placement'],
          context: {
            buses,
            added_at: Object.fromEntries(
              Object.entries(times).map(([b, t]) => [b, new Date(t).toISOString()]),
            ),
          },
        },
        current.version === 0
          ? { principal, createOnly: true }
          : { principal, expectedVersion: current.version },
      );
      return { added: true, addedAt };
    } catch (error) {
      if (!(error instanceof VersionConflictError) || attempt >= 10) throw error;
    }
  }
}

/** The buses an event of a workspace goes to: the first bus, then the workspace's other buses in the pool. */
export interface BusRoutes {
  busesFor(workspace: string): Promise<readonly string[]>;
}

/** The publisher's routes: placements read from the store, each kept for at most `cacheMs`. */
export class PlacementRoutes implements BusRoutes {
  private readonly cache = new Map<string, { buses: readonly string[]; readAt: number }>();
  private readonly now: () => number;

  constructor(
    private readonly store: BreadcrumbStore,
    private readonly pool: readonly string[],
    private readonly cacheMs: number,
    now: () => number = Date.now,
  ) {
    this.now = now;
  }

  async busesFor(workspace: string): Promise<readonly string[]> {
    const [first] = this.pool;
    if (first === undefined) throw new Error('the bus pool is empty');
    if (this.pool.length === 1) return [first];
    const cached = this.cache.get(workspace);
    const now = this.now();
    if (cached && now - cached.readAt < this.cacheMs) return cached.buses;
    const { buses } = await readPlacement(this.store, workspace);
    const routed = [first, ...this.pool.filter((b) => b !== first && buses.includes(b))];
    // Bounded: a publisher that has seen many workspaces forgets the oldest reads first.
    if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(workspace, { buses: routed, readAt: now });
    return routed;
  }
}
