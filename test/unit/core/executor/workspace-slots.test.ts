import { describe, expect, it } from 'vitest';
import {
  type SlotPolicy,
  WorkspaceBusyError,
  type WorkspaceSlots,
  withWorkspaceSlot,
} from '#shared/core/executor/workspace-slots.ts';

/** Slots in memory, counting requests (a table would see the same). */
function memorySlots() {
  const held = new Map<string, Map<string, number>>();
  const slots: WorkspaceSlots & { requests: number } = {
    requests: 0,
    async take(workspace, holder, until, cap, now) {
      this.requests++;
      const m = held.get(workspace) ?? new Map<string, number>();
      held.set(workspace, m);
      for (const [h, end] of m) if (end < now) m.delete(h);
      if (m.size >= cap) return false;
      m.set(holder, until);
      return true;
    },
    async give(workspace, holder) {
      this.requests++;
      held.get(workspace)?.delete(holder);
    },
  };
  return { slots, held };
}

const policy = (slots: WorkspaceSlots, cap = 1, graceMs = 10): SlotPolicy => ({
  slots,
  cap,
  graceMs,
  leaseMs: 60_000,
});

/** Work that ends when told, or when aborted (as the sandbox and HTTP calls do). */
function work() {
  let finish: (v: string) => void = () => undefined;
  return {
    run: (signal: AbortSignal) =>
      new Promise<string>((resolve, reject) => {
        finish = resolve;
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
    finish: (v: string) => finish(v),
  };
}

const never = new AbortController().signal;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('withWorkspaceSlot', () => {
  it('costs no request for work that ends within the grace period', async () => {
    const { slots } = memorySlots();
    const out = await withWorkspaceSlot(
      policy(slots, 1, 1000),
      { workspace: 'ws', holder: 'a' },
      never,
      async () => 'quick',
    );
    expect(out).toBe('quick');
    expect(slots.requests).toBe(0);
  });

  it('lets long work hold a slot and gives it back when done', async () => {
    const { slots, held } = memorySlots();
    const w = work();
    const running = withWorkspaceSlot(policy(slots), { workspace: 'ws', holder: 'a' }, never, w.run);
    await sleep(40);
    expect(held.get('ws')?.has('a')).toBe(true);
    w.finish('done');
    expect(await running).toBe('done');
    expect(held.get('ws')?.size).toBe(0);
  });

  it('aborts long work beyond the cap with a retriable WorkspaceBusyError, and leaves other workspaces alone', async () => {
    const { slots } = memorySlots();
    const first = work();
    const second = work();
    const other = work();
    const p = policy(slots);
    const a = withWorkspaceSlot(p, { workspace: 'team-b', holder: 'a' }, never, first.run);
    const b = withWorkspaceSlot(p, { workspace: 'team-b', holder: 'b' }, never, second.run);
    const c = withWorkspaceSlot(p, { workspace: 'team-a', holder: 'c' }, never, other.run);
    const refused = await b.catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkspaceBusyError);
    expect((refused as WorkspaceBusyError).retriable).toBe(true);
    expect((refused as WorkspaceBusyError).retryAfterSeconds).toBeGreaterThan(0);
    first.finish('a');
    other.finish('c');
    expect(await a).toBe('a');
    expect(await c).toBe('c');
  });

  it('runs on when the slot cannot be counted (fails open)', async () => {
    const slots: WorkspaceSlots = {
      take: async () => {
        throw new Error('throttled');
      },
      give: async () => undefined,
    };
    const w = work();
    const running = withWorkspaceSlot(policy(slots), { workspace: 'ws', holder: 'a' }, never, w.run);
    await sleep(40);
    w.finish('ok');
    expect(await running).toBe('ok');
  });
});
