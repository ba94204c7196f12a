/**
 * wait_for steps through the real pipeline on the in-memory store and wait index: a matching write resumes the
 * waiting run (and a non-matching one does not), correlation picks the right run, duplicates and a second write
 * resume once, the timeout fails or gives `on_timeout`, a crash before the outputs is repaired by the redelivery,
 * the fan-out per invocation is bounded without losing a run, and the definition's checks.
 */
import { describe, expect, it } from 'vitest';
import type { Run } from '#shared/core/orchestration/run.ts';
import { createWorkflowKind } from '#shared/core/orchestration/workflow-kind.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { triggerSelectors } from '#shared/domain/definitions.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import { WorkflowDefinitionSchema } from '#shared/domain/workflow-definition.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import type { OneTimeTimer, Timers } from '#shared/ports/timers.ts';
import { Harness } from '../../../support/executor-harness.ts';
import { MemoryWaitIndex } from '../../../support/memory/wait-index.ts';

class FakeTimers implements Timers {
  readonly set_: OneTimeTimer[] = [];
  async set(timer: OneTimeTimer): Promise<void> {
    if (!this.set_.some((t) => t.id === timer.id)) this.set_.push(timer);
  }
  async cancel(): Promise<void> {}
}

class WaitHarness extends Harness {
  readonly timers = new FakeTimers();
  maxResumes = 50;

  constructor(readonly waits = new MemoryWaitIndex()) {
    super();
  }

  override deps(overrides: Parameters<Harness['deps']>[0] = {}) {
    const base = super.deps(overrides);
    const store: ExecutorStore = base.store;
    return {
      ...base,
      implementations: {
        workflow: createWorkflowKind({
          store,
          log: silentLog,
          clock: this.clock,
          timers: this.timers,
          waits: this.waits,
          maxResumesPerInvocation: this.maxResumes,
        }),
      },
      ...overrides,
    };
  }

  workflowDef(context: Record<string, unknown>): Promise<Breadcrumb> {
    return this.put({ schema_name: 'workflow.def.v1', context: { workflow_id: 'wf', ...context } });
  }

  async start(def: Breadcrumb, input: unknown): Promise<string> {
    const request = await this.put({
      schema_name: 'workflow.request.v1',
      context: { workflow: 'wf', input },
    });
    await this.process(def, request);
    return `run-${request.id}`;
  }

  async run(runId: string): Promise<Run> {
    return (await this.store.get(this.workspace, runId)).context as unknown as Run;
  }

  shipped(orderId: unknown, extra: Record<string, unknown> = {}): Promise<Breadcrumb> {
    return this.put({ schema_name: 'order.shipped.v1', context: { order_id: orderId, ...extra } });
  }

  async fire(def: Breadcrumb, timer: OneTimeTimer): Promise<void> {
    const { breadcrumb } = await this.store.create(
      this.workspace,
      {
        schema_name: timer.breadcrumb.schema_name,
        title: '',
        tags: timer.breadcrumb.tags,
        context: timer.breadcrumb.context,
      },
      { principal: 'system:scheduler', id: timer.breadcrumb.id },
    );
    await this.process(def, breadcrumb);
  }
}

const correlated = {
  steps: [
    {
      id: 'shipped',
      wait_for: {
        selector: { schema_name: 'order.shipped.v1' },
        correlate: { field: '$.order_id', equals: 'input.order_id' },
        timeout_seconds: 600,
      },
    },
  ],
  output: '=steps.shipped.context.carrier',
};

describe('wait_for step', () => {
  it('waits with an index entry and resumes on the matching write, not on others', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef(correlated);
    const runId = await h.start(def, { order_id: 'o-1' });
    const waiting = await h.run(runId);
    expect(waiting.status).toBe('running');
    expect(waiting.steps.shipped).toMatchObject({
      status: 'waiting',
      waiting_for: {
        selector: { schema_name: 'order.shipped.v1' },
        correlation: { field: '$.order_id', value: 'o-1' },
      },
    });
    expect(h.waits.size()).toBe(1);
    expect(h.timers.set_).toHaveLength(1);

    await h.process(def, await h.shipped('o-2', { carrier: 'wrong' }));
    await h.process(def, await h.put({ schema_name: 'order.created.v1', context: { order_id: 'o-1' } }));
    expect((await h.run(runId)).steps.shipped?.status).toBe('waiting');

    const match = await h.shipped('o-1', { carrier: 'ups' });
    await h.process(def, match);
    const done = await h.run(runId);
    expect(done).toMatchObject({ status: 'succeeded', output: 'ups' });
    expect(done.steps.shipped).toMatchObject({
      status: 'succeeded',
      answer_id: `${match.id}@1`,
      output: { id: match.id, schema_name: 'order.shipped.v1', context: { order_id: 'o-1', carrier: 'ups' } },
    });
    expect(h.waits.size()).toBe(0);
    expect(await h.list('workflow.result.v1')).toHaveLength(1);
  });

  it('picks the run whose correlation value the write carries, of two waiting', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef(correlated);
    const first = await h.start(def, { order_id: 'a' });
    const second = await h.start(def, { order_id: 'b' });
    await h.process(def, await h.shipped('b', { carrier: 'dhl' }));
    expect((await h.run(first)).steps.shipped?.status).toBe('waiting');
    expect(await h.run(second)).toMatchObject({ status: 'succeeded', output: 'dhl' });
    // A number is not the string that prints like it.
    const numeric = await h.start(def, { order_id: 7 });
    await h.process(def, await h.shipped('7'));
    expect((await h.run(numeric)).steps.shipped?.status).toBe('waiting');
    await h.process(def, await h.shipped(7, { carrier: 'fedex' }));
    expect(await h.run(numeric)).toMatchObject({ status: 'succeeded', output: 'fedex' });
  });

  it('resumes a step once under a duplicate delivery and a second matching write', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef({
      ...correlated,
      steps: [...correlated.steps, { id: 'after', wait: { seconds: 0 } }],
    });
    const runId = await h.start(def, { order_id: 'x' });
    const match = await h.shipped('x', { carrier: 'one' });
    await h.process(def, match);
    const versionAfter = (await h.store.get(h.workspace, runId)).version;
    await h.process(def, match);
    await h.process(def, await h.shipped('x', { carrier: 'two' }));
    const run = await h.run(runId);
    expect(run.status).toBe('succeeded');
    expect(run.steps.shipped?.output).toMatchObject({ context: { carrier: 'one' } });
    expect((await h.store.get(h.workspace, runId)).version).toBe(versionAfter);
    expect(await h.list('workflow.result.v1')).toHaveLength(1);
  });

  it('repairs a crash between the resumed run write and its outputs on redelivery', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef(correlated);
    const runId = await h.start(def, { order_id: 'c' });
    const match = await h.shipped('c', { carrier: 'late' });
    let crashes = 0;
    const crashing: ExecutorStore = Object.create(h.store, {
      create: {
        value: async (...args: Parameters<ExecutorStore['create']>) => {
          if (args[1].schema_name === 'workflow.result.v1' && crashes++ === 0)
            throw new RetriableError('crash');
          return h.store.create(...args);
        },
      },
    });
    await expect(h.process(def, match, h.deps({ store: crashing }))).rejects.toThrow();
    expect((await h.run(runId)).status).toBe('succeeded');
    expect(await h.list('workflow.result.v1')).toHaveLength(0);
    // The entry is still there, so the redelivery finds the run and re-emits its result.
    expect(h.waits.size()).toBe(1);
    await h.process(def, match);
    expect(await h.list('workflow.result.v1')).toHaveLength(1);
    expect(h.waits.size()).toBe(0);
  });

  it('fails at the timeout saying what it waited for, or succeeds with on_timeout', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef(correlated);
    const runId = await h.start(def, { order_id: 't' });
    await h.fire(def, h.timers.set_[0] as OneTimeTimer);
    const failed = await h.run(runId);
    expect(failed.status).toBe('failed');
    expect(failed.error).toContain(
      'no breadcrumb matching the wait_for selector with $.order_id = "t" was written within 600 s',
    );
    expect(h.waits.size()).toBe(0);

    const h2 = new WaitHarness();
    const lenient = await h2.workflowDef({
      steps: [
        {
          id: 'shipped',
          wait_for: { ...correlated.steps[0]?.wait_for, on_timeout: { output: { late: true } } },
        },
      ],
    });
    const run2 = await h2.start(lenient, { order_id: 't' });
    await h2.fire(lenient, h2.timers.set_[0] as OneTimeTimer);
    expect(await h2.run(run2)).toMatchObject({ status: 'succeeded', output: { late: true } });
  });

  it('resumes at most the bound per invocation; the rest through continuations, none lost', async () => {
    const h = new WaitHarness();
    h.maxResumes = 2;
    const def = await h.workflowDef({
      steps: [{ id: 'go', wait_for: { selector: { schema_name: 'go.signal.v1' }, timeout_seconds: 60 } }],
    });
    const runs: string[] = [];
    for (let i = 0; i < 5; i++) runs.push(await h.start(def, {}));
    const deadlines = h.timers.set_.length;
    const signal = await h.put({ schema_name: 'go.signal.v1', context: { go: true } });
    await h.process(def, signal);
    const statuses = async () => Promise.all(runs.map(async (r) => (await h.run(r)).status));
    expect((await statuses()).filter((s) => s === 'succeeded')).toHaveLength(2);
    // A continuation written by anyone but the timer function replays nothing.
    const continuation = h.timers.set_[deadlines] as OneTimeTimer;
    expect(continuation.breadcrumb.context).toMatchObject({ wait_match: { id: signal.id, version: 1 } });
    const forged = await h.put({
      schema_name: continuation.breadcrumb.schema_name,
      tags: continuation.breadcrumb.tags,
      context: continuation.breadcrumb.context,
    });
    await h.process(def, forged);
    expect((await statuses()).filter((s) => s === 'succeeded')).toHaveLength(2);
    await h.fire(def, continuation);
    expect((await statuses()).filter((s) => s === 'succeeded')).toHaveLength(4);
    await h.fire(def, h.timers.set_[deadlines + 1] as OneTimeTimer);
    expect(await statuses()).toEqual(runs.map(() => 'succeeded'));
    expect(h.timers.set_).toHaveLength(deadlines + 2);
    expect(h.waits.size()).toBe(0);
  });

  it('goes on past entries that stay (runs not written yet) instead of taking them again each round', async () => {
    const h = new WaitHarness();
    h.maxResumes = 2;
    const def = await h.workflowDef({
      steps: [{ id: 'go', wait_for: { selector: { schema_name: 'go.signal.v1' }, timeout_seconds: 60 } }],
    });
    const key = { workspace: h.workspace, workflow: 'wf', step: 'go' };
    const since = new Date(h.clock.now().getTime() - 1000).toISOString();
    const until = new Date(h.clock.now().getTime() + 60_000).toISOString();
    for (const n of [1, 2]) {
      await h.waits.add(key, {
        attempt_id: `run-ghost${n}.go.1`,
        run_id: `run-ghost${n}`,
        step: 'go',
        since,
        until,
      });
    }
    const runs = [await h.start(def, {}), await h.start(def, {})];
    const deadlines = h.timers.set_.length;
    await h.process(def, await h.put({ schema_name: 'go.signal.v1', context: {} }));
    await h.fire(def, h.timers.set_[deadlines] as OneTimeTimer);
    for (const runId of runs) expect((await h.run(runId)).status).toBe('succeeded');
    // The entries of runs never written stay until well past their deadline.
    expect(h.waits.size()).toBe(2);
  });

  it('fails a wait_for step past the per-key bound at once, saying why', async () => {
    const h = new WaitHarness(new MemoryWaitIndex(1));
    const def = await h.workflowDef({
      steps: [{ id: 'go', wait_for: { selector: { schema_name: 'go.signal.v1' }, timeout_seconds: 60 } }],
    });
    const first = await h.start(def, {});
    expect((await h.run(first)).steps.go?.status).toBe('waiting');
    const second = await h.start(def, {});
    const refused = await h.run(second);
    expect(refused.status).toBe('failed');
    expect(refused.steps.go).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('1 runs already wait'),
    });
    expect(h.waits.size()).toBe(1);
    await h.process(def, await h.put({ schema_name: 'go.signal.v1', context: {} }));
    expect((await h.run(first)).status).toBe('succeeded');
  });

  it('does not start a run for a write only its wait_for selectors match', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef(correlated);
    await h.process(def, await h.shipped('nobody'));
    expect(await h.list('workflow.run.v1')).toHaveLength(0);
  });

  it('does not see fields llm_hints hide: they neither correlate nor reach the output', async () => {
    const h = new WaitHarness();
    const def = await h.workflowDef(correlated);
    const runId = await h.start(def, { order_id: 'h' });
    const hidden = await h.put({
      schema_name: 'order.shipped.v1',
      context: { order_id: 'h', carrier: 'ups', secret: 's3' },
      llm_hints: { exclude: ['secret'] },
    });
    await h.process(def, hidden);
    const run = await h.run(runId);
    expect(run.status).toBe('succeeded');
    expect(JSON.stringify(run.steps.shipped?.output)).not.toContain('s3');
  });
});

describe('wait_for definitions', () => {
  it('join their selectors to the workflow rule and refuse bad fields', () => {
    const parsed = WorkflowDefinitionSchema.parse({ workflow_id: 'wf', ...correlated });
    expect(triggerSelectors('workflow', parsed)).toContainEqual(
      expect.objectContaining({ schema_name: 'order.shipped.v1', role: 'trigger' }),
    );
    const bad = WorkflowDefinitionSchema.safeParse({
      workflow_id: 'wf',
      steps: [{ id: 'w', wait_for: { selector: { schema_name: 'x.y.v1' }, timeout_seconds: 0 } }],
    });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain('timeout_seconds');
    const many = WorkflowDefinitionSchema.safeParse({
      workflow_id: 'wf',
      steps: Array.from({ length: 11 }, (_, i) => ({
        id: `w${i}`,
        wait_for: { selector: { schema_name: 'x.y.v1' }, timeout_seconds: 5 },
      })),
    });
    expect(many.success).toBe(false);
    expect(JSON.stringify(many.error?.issues)).toContain('at most 10 wait_for steps');
  });
});
