import { describe, expect, it } from 'vitest';
import { BreadthBudget, type BreadthLimits, flushStep } from '#shared/core/stream/breadth-budget.ts';
import type { BudgetCounters } from '#shared/ports/budget-counters.ts';
import type { BusEntry } from '#shared/ports/event-bus.ts';

/** Counters in memory, counting the requests a DynamoDB table would see. */
function memoryCounters() {
  const totals = new Map<string, number>();
  const counters: Pick<BudgetCounters, 'add'> & { requests: number; totals: Map<string, number> } = {
    requests: 0,
    totals,
    async add(workspace, key, n) {
      this.requests++;
      const total = (totals.get(`${workspace}/${key}`) ?? 0) + n;
      totals.set(`${workspace}/${key}`, total);
      return total;
    },
  };
  return counters;
}

function memoryStore() {
  const created = new Map<string, { workspace: string; context: Record<string, unknown>; tags: string[] }>();
  return {
    created,
    async create(
      workspace: string,
      input: { context: Record<string, unknown>; tags: string[] },
      options: { id?: string },
    ) {
      created.set(options.id ?? '', { workspace, context: input.context, tags: input.tags });
      return { breadcrumb: {} as never, replayed: false };
    },
  };
}

let n = 0;
const event = (workspace: string, thread?: string, hop = 1): { entry: BusEntry } => ({
  entry: {
    source: 'crumbs',
    detailType: 'Breadcrumb Created',
    detail: {
      workspace,
      id: `b${++n}`,
      version: 1,
      schema_name: 'note.text.v1',
      created_by: 'agent:a',
      causation: thread ? { thread, hop, caused_by: 'x@1' } : null,
    },
  },
});

function budget(limits: Partial<BreadthLimits> = {}) {
  const counters = memoryCounters();
  const store = memoryStore();
  const b = new BreadthBudget({
    counters,
    store: store as never,
    limits: { threadBudget: 100, workspaceEventRate: 1000, workspaceEventWindowSeconds: 60, ...limits },
    now: () => 1_000_000,
  });
  return { b, counters, store };
}

describe('BreadthBudget', () => {
  it('routes ordinary threads without a single counter request', async () => {
    const { b, counters } = budget();
    for (let i = 0; i < 20; i++) {
      const { admitted, shed } = await b.admit([event('ws', `t${i}`), event('ws', `t${i}`)]);
      expect(admitted).toHaveLength(2);
      expect(shed).toBe(0);
    }
    expect(counters.requests).toBe(0);
  });

  it('stops a thread at its budget, once per flush step, with one stop record', async () => {
    const { b, counters, store } = budget({ threadBudget: 100 });
    let routed = 0;
    for (let i = 0; i < 300; i++) routed += (await b.admit([event('ws', 'storm')])).admitted.length;
    expect(routed).toBe(100);
    // One ADD per step of 5 up to the budget, then nothing (the stopped thread is known in memory); the
    // workspace's window adds one per step of 50.
    expect(counters.requests).toBe(100 / flushStep(100) + 300 / flushStep(1000));
    const stops = [...store.created.values()].filter((c) => c.context.budget === 'thread');
    expect(stops).toHaveLength(1);
    expect(stops[0]?.context).toMatchObject({ thread: 'storm', limit: 100 });
    expect(stops[0]?.tags).toContain('thread:storm');
  });

  it('sheds only the over-budget thread of a mixed batch', async () => {
    const { b } = budget({ threadBudget: 20 });
    for (let i = 0; i < 30; i++) await b.admit([event('team-b', 'storm')]);
    const batch = [event('team-b', 'storm'), event('team-a', 'quiet'), event('team-a')];
    const { admitted, shed } = await b.admit(batch);
    expect(admitted.map((a) => a.entry.detail.workspace)).toEqual(['team-a', 'team-a']);
    expect(shed).toBe(1);
  });

  it('counts a batch against the shared total (another instance used part of the budget)', async () => {
    const { b, counters } = budget({ threadBudget: 40 });
    counters.totals.set('ws/thread#shared', 38);
    const { admitted } = await b.admit(Array.from({ length: 5 }, () => event('ws', 'shared')));
    expect(admitted).toHaveLength(2);
  });

  it('limits the events of a workspace per window, naming the window once', async () => {
    const { b, store } = budget({ workspaceEventRate: 40 });
    let routed = 0;
    for (let i = 0; i < 60; i++)
      routed += (await b.admit(i % 2 ? [event('noisy')] : [event('noisy'), event('calm')])).admitted.length;
    expect(routed).toBe(40 + 30);
    const stops = [...store.created.values()].filter((c) => c.context.budget === 'workspace_rate');
    expect(stops).toHaveLength(1);
    expect(stops[0]?.workspace).toBe('noisy');
  });

  it('routes (fails open) when the counter cannot be written, and never throws', async () => {
    const b = new BreadthBudget({
      counters: {
        add: async () => {
          throw new Error('throttled');
        },
      },
      store: memoryStore() as never,
      limits: { threadBudget: 2, workspaceEventRate: 1000, workspaceEventWindowSeconds: 60 },
    });
    const { admitted } = await b.admit([event('ws', 't'), event('ws', 't'), event('ws', 't')]);
    expect(admitted).toHaveLength(3);
  });

  it('does not count hop-0 writes (people, plain API calls) against the thread', async () => {
    const { b } = budget({ threadBudget: 2 });
    const { admitted } = await b.admit(Array.from({ length: 5 }, () => event('ws', 'human', 0)));
    expect(admitted).toHaveLength(5);
  });
});
