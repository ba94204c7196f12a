import { describe, expect, it } from 'vitest';
import { handleTimerMessage } from '#shared/core/orchestration/timers.ts';
import type { Breadcrumb, CreateBreadcrumb } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { CreateOptions, CreateResult } from '#shared/ports/breadcrumb-store.ts';

/** Just enough of a store: create-if-absent by id, and get. */
function fakeStore(seed: Breadcrumb[] = []) {
  const items = new Map(seed.map((b) => [`${b.workspace}/${b.id}`, b]));
  return {
    items,
    async create(workspace: string, input: CreateBreadcrumb, options: CreateOptions): Promise<CreateResult> {
      const id = options.id ?? `gen-${items.size}`;
      const existing = items.get(`${workspace}/${id}`);
      if (existing) return { breadcrumb: existing, replayed: true };
      const now = new Date(0).toISOString();
      const breadcrumb: Breadcrumb = {
        id,
        workspace,
        schema_name: input.schema_name,
        title: input.title,
        tags: input.tags,
        context: input.context,
        version: 1,
        checksum: '',
        created_at: now,
        updated_at: now,
        created_by: options.principal,
        updated_by: options.principal,
      };
      items.set(`${workspace}/${id}`, breadcrumb);
      return { breadcrumb, replayed: false };
    },
    async get(workspace: string, id: string): Promise<Breadcrumb> {
      const found = items.get(`${workspace}/${id}`);
      if (!found) throw new NotFoundError(`breadcrumb ${id}`);
      return found;
    },
  };
}

const timerBody = {
  kind: 'timer',
  workspace: 'ws',
  breadcrumb: {
    id: 'run-1.nap.1.wait',
    schema_name: 'workflow.timer.v1',
    tags: ['run:run-1', 'step:nap', 'reply-to:workflow:wf'],
    context: { timer_id: 'run-1.nap.1.wait' },
  },
};

describe('handleTimerMessage', () => {
  it('writes a fired timer once, by system:scheduler, under its own id', async () => {
    const store = fakeStore();
    expect(await handleTimerMessage(timerBody, { store })).toEqual({
      status: 'written',
      id: 'run-1.nap.1.wait',
      replayed: false,
    });
    expect(await handleTimerMessage(timerBody, { store })).toMatchObject({ replayed: true });
    expect(store.items.get('ws/run-1.nap.1.wait')).toMatchObject({
      created_by: 'system:scheduler',
      tags: ['run:run-1', 'step:nap', 'reply-to:workflow:wf'],
    });
  });

  it("writes a schedule's breadcrumb per firing, reading its current definition", async () => {
    const definition = (
      await fakeStore().create(
        'ws',
        {
          schema_name: 'schedule.def.v1',
          title: '',
          tags: [],
          context: {
            schedule_id: 'daily',
            cron: '0 9 ? * * *',
            breadcrumb: { schema_name: 'workflow.request.v1', tags: ['x'], context: { workflow: 'report' } },
          },
        },
        { principal: 'user:ann', id: 'sched-1' },
      )
    ).breadcrumb;
    const store = fakeStore([definition]);
    const firing = {
      kind: 'schedule',
      workspace: 'ws',
      definition_id: 'sched-1',
      fired_at: '2026-01-05T09:00:00Z',
    };
    const out = await handleTimerMessage(firing, { store });
    expect(out).toEqual({ status: 'written', id: 'sched-1.20260105T090000Z', replayed: false });
    expect(store.items.get('ws/sched-1.20260105T090000Z')).toMatchObject({
      schema_name: 'workflow.request.v1',
      tags: ['x', 'schedule:daily'],
      context: { workflow: 'report' },
      created_by: 'system:scheduler',
    });
    expect(await handleTimerMessage(firing, { store })).toMatchObject({ replayed: true });
  });

  it('drops what it cannot act on', async () => {
    const store = fakeStore();
    expect(await handleTimerMessage({ nope: 1 }, { store })).toEqual({
      status: 'dropped',
      reason: 'not a timer message',
    });
    expect(
      await handleTimerMessage(
        { kind: 'schedule', workspace: 'ws', definition_id: 'gone', fired_at: 'x' },
        { store },
      ),
    ).toEqual({ status: 'dropped', reason: 'the schedule definition is gone' });
  });
});
