import { describe, expect, it } from 'vitest';
import {
  addToPlacement,
  PLACEMENT_ID,
  PlacementRoutes,
  readPlacement,
} from '#shared/routing/bus-placement.ts';
import { InMemoryBreadcrumbStore } from '../../support/memory/breadcrumb-store.ts';

describe('bus placement', () => {
  it('adds each bus once, under concurrent writers, to the workspace placement breadcrumb', async () => {
    const store = new InMemoryBreadcrumbStore();
    expect(await readPlacement(store, 'ws')).toEqual({ buses: [], addedAt: {}, version: 0 });
    const results = await Promise.all(
      ['b.2', 'b.3', 'b.2', 'b.4'].map((bus) => addToPlacement(store, 'ws', bus, 'system:rule-manager')),
    );
    expect(results.filter((r) => r.added)).toHaveLength(3);
    const placement = await readPlacement(store, 'ws');
    expect([...placement.buses].sort()).toEqual(['b.2', 'b.3', 'b.4']);
    expect((await store.get('ws', PLACEMENT_ID)).schema_name).toBe('system.bus_placement.v1');
  });

  it('routes the first bus always, reads a workspace placement at most once per cache period, and only pool buses', async () => {
    const store = new InMemoryBreadcrumbStore();
    let now = 1_000;
    const routes = new PlacementRoutes(store, ['b', 'b.2', 'b.3'], 5000, () => now);
    expect(await routes.busesFor('ws')).toEqual(['b']);
    await addToPlacement(store, 'ws', 'b.3', 'system:rule-manager');
    await addToPlacement(store, 'ws', 'gone', 'system:rule-manager');
    now += 4999;
    expect(await routes.busesFor('ws')).toEqual(['b']);
    now += 1;
    expect(await routes.busesFor('ws')).toEqual(['b', 'b.3']);
    // A pool of one bus reads nothing.
    const single = new PlacementRoutes(store, ['b'], 5000);
    expect(await single.busesFor('ws')).toEqual(['b']);
  });
});
