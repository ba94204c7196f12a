import { describe, expect, it } from 'vitest';
import { createRunDriver } from '#shared/core/orchestration/driver.ts';
import type { RunEvent } from '#shared/core/orchestration/events.ts';
import { readAddressedMessage } from '#shared/core/orchestration/messages.ts';
import { WorkflowDefinitionSchema } from '#shared/domain/workflow-definition.ts';
import { systemClock } from '#shared/ports/breadcrumb-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';
import { RunHarness, startEvent, workflow } from '../../../support/run-harness.ts';

const def = workflow({
  steps: [
    { id: 'approve', human: { prompt: 'Ship?' } },
    { id: 'ship', tool: 'echo' },
  ],
});

async function waiting(overrides: Parameters<RunHarness['start']>[1] = {}) {
  const h = new RunHarness(def);
  await h.start({}, overrides);
  expect(h.current.status).toBe('waiting');
  return h;
}

function response(h: RunHarness, by: string, extra: Partial<RunEvent> = {}): RunEvent {
  return {
    type: 'human',
    id: `resp-${by}`,
    request_id: h.request('approve').id,
    decision: 'approve',
    by,
    ...extra,
  } as RunEvent;
}

describe('who may act on a run', () => {
  it.each([
    'agent:mallory',
    'tool:breadcrumb.create',
    'system:plain-put',
    'user:plain-put',
    'workflow:other',
  ])(
    'refuses a human response written by %s: the step keeps waiting, with an error saying why',
    async (by) => {
      const h = await waiting();
      const refused = await h.send(response(h, by));
      expect(h.current.refused).toEqual([
        expect.objectContaining({ id: `resp-${by}`, by, reason: expect.stringContaining('only a person') }),
      ]);
      expect((await h.send(response(h, by))).changed).toBe(false);
      expect(refused.effects).toContainEqual(
        expect.objectContaining({
          type: 'response_error',
          response_id: `resp-${by}`,
          step: 'approve',
          error: expect.stringContaining('only a person answers a human step'),
        }),
      );
      expect(h.current.status).toBe('waiting');
      expect(h.state('approve').status).toBe('waiting');
      // Its controls still work, and a person's approval then goes through.
      await h.control('pause');
      expect(h.current.status).toBe('paused');
      await h.control('resume');
      await h.human('approve', 'approve', undefined, { by: 'user:ann' });
      expect(h.state('approve')).toMatchObject({ status: 'succeeded', by: 'user:ann' });
    },
  );

  it("takes a response from the run's driver only when it relays a person's message", async () => {
    const h = await waiting({ driver: 'agent:boss' });
    const alone = await h.send(response(h, 'agent:boss', { relay_of: 'req-9@1' }));
    expect(alone.effects).toContainEqual(
      expect.objectContaining({
        type: 'response_error',
        error: expect.stringContaining("relays no person's"),
      }),
    );
    expect(h.state('approve').status).toBe('waiting');
    const other = await h.send(response(h, 'agent:other', { id: 'x', on_behalf_of: 'user:ann' }));
    expect(other.effects).toContainEqual(expect.objectContaining({ type: 'response_error' }));
    await h.send(response(h, 'agent:boss', { id: 'relayed', relay_of: 'req-9@1', on_behalf_of: 'user:ann' }));
    expect(h.state('approve')).toMatchObject({ status: 'succeeded', by: 'user:ann' });
  });

  it('takes controls from people, and a cancel from the parent run that started it; from nobody else', async () => {
    const h = await waiting({ parent: { run_id: 'run-p', step: 'sub', workflow: 'parent' } });
    for (const by of [
      'agent:mallory',
      'tool:echo',
      'system:plain-put',
      'user:plain-put',
      'workflow:parent',
    ]) {
      await h.send({ type: 'control', id: `pause-${by}`, action: 'pause', by });
      expect(h.current.status).toBe('waiting');
      expect(h.current.refused?.at(-1)).toMatchObject({ id: `pause-${by}`, what: 'control pause' });
    }
    await h.send({ type: 'control', id: 'cancel-other', action: 'cancel', by: 'workflow:other' });
    expect(h.current.status).toBe('waiting');
    await h.send({ type: 'control', id: 'cancel-parent', action: 'cancel', by: 'workflow:parent' });
    expect(h.current).toMatchObject({ status: 'cancelled', error: 'cancelled by workflow:parent' });
  });
});

describe('the driver reads what a relayed response names', () => {
  const ws = 'ws-relay';
  const definition = WorkflowDefinitionSchema.parse({
    workflow_id: 'agent:boss',
    steps: [{ id: 'approve', human: { prompt: 'Go?' } }],
  });

  async function setup() {
    const store = new InMemoryBreadcrumbStore();
    const driver = createRunDriver({ store, clock: systemClock, log: silentLog });
    const base = {
      workspace: ws,
      runId: 'run-req1',
      principal: 'agent:boss',
      causation: { caused_by: 'req1@1', thread: 'req1', hop: 1 },
      context: {},
      definitionFor: async () => definition,
    };
    await driver.transition({
      ...base,
      event: startEvent({}, { run_id: 'run-req1', driver: 'agent:boss', definition: { ...definition } }),
    });
    const run = await store.get(ws, 'run-req1');
    const attempt = (run.context as { steps: { approve: { attempt_id: string } } }).steps.approve.attempt_id;
    return { store, driver, base, attempt };
  }

  async function relay(writer: string) {
    const { store, driver, base, attempt } = await setup();
    const { breadcrumb: asked } = await store.create(
      ws,
      { schema_name: 'agent.request.v1', title: 'approve it', tags: [], context: { agent: 'boss' } },
      { principal: writer },
    );
    const message = readAddressedMessage({
      id: 'orchctl-1',
      schema_name: 'human.response.v1',
      tags: ['run:run-req1', 'reply-to:agent:boss'],
      context: { request_id: attempt, decision: 'approve' },
      created_by: 'agent:boss',
      caused_by: `${asked.id}@${asked.version}`,
    });
    if ('ignored' in message) throw new Error(message.ignored);
    const done = await driver.transition({ ...base, event: message.event });
    return done?.run.steps.approve;
  }

  it("approves when the relayed breadcrumb was written by a person of the run's workspace", async () => {
    expect(await relay('user:ann')).toMatchObject({ status: 'succeeded', by: 'user:ann' });
  });

  it('keeps waiting when it was written by an agent', async () => {
    expect(await relay('agent:mallory')).toMatchObject({ status: 'waiting' });
  });

  it('keeps waiting when the relayed breadcrumb does not exist in the workspace', async () => {
    const { driver, base, attempt } = await setup();
    const done = await driver.transition({
      ...base,
      event: {
        type: 'human',
        id: 'orchctl-2',
        request_id: attempt,
        decision: 'approve',
        by: 'agent:boss',
        relay_of: 'no-such-breadcrumb@1',
        on_behalf_of: 'user:forged',
      },
    });
    expect(done?.run.steps.approve).toMatchObject({ status: 'waiting' });
  });
});

describe('events the driver applies together', () => {
  it('never joins events of two workspaces, even for runs of the same id', async () => {
    const definition = WorkflowDefinitionSchema.parse({
      workflow_id: 'wf',
      steps: [{ id: 'approve', human: { prompt: 'Go?' } }],
    });
    const store = new InMemoryBreadcrumbStore();
    const driver = createRunDriver({ store, clock: systemClock, log: silentLog });
    const base = (workspace: string) => ({
      workspace,
      runId: 'run-req1',
      principal: 'workflow:wf',
      causation: { caused_by: 'req1@1', thread: 'req1', hop: 1 },
      context: {},
      definitionFor: async () => definition,
    });
    const attempts: Record<string, string> = {};
    for (const ws of ['team-a', 'team-b']) {
      await driver.transition({ ...base(ws), event: startEvent({}, { run_id: 'run-req1' }) });
      const run = await store.get(ws, 'run-req1');
      attempts[ws] = (run.context as { steps: { approve: { attempt_id: string } } }).steps.approve.attempt_id;
    }

    // The answers reach the one driver at once, as one batch of its queue would: the first is written alone, and
    // team-a's redelivered answer and team-b's arrive during that write, so they wait for the next one together.
    const answer = (ws: string, decision: 'approve' | 'reject', by: string) =>
      driver.transition({
        ...base(ws),
        event: { type: 'human', id: `resp-${ws}`, request_id: attempts[ws], decision, by } as RunEvent,
      });
    await Promise.all([
      answer('team-a', 'approve', 'user:ann'),
      answer('team-a', 'approve', 'user:ann'),
      answer('team-b', 'reject', 'user:bob'),
    ]);

    const stepOf = async (ws: string) =>
      (
        (await store.get(ws, 'run-req1')).context as {
          steps: Record<string, { status: string; by?: string }>;
        }
      ).steps.approve;
    expect(await stepOf('team-a')).toMatchObject({ status: 'succeeded', by: 'user:ann' });
    expect(await stepOf('team-b')).toMatchObject({ by: 'user:bob' });
    expect((await stepOf('team-b'))?.status).not.toBe('succeeded');
  });
});
