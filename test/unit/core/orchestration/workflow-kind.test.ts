/**
 * The workflow executor (the engine's driver) through the real pipeline on the in-memory store: runs written with
 * conditional writes, requests answered by the real tool executor, timers through a fake Timers port, crashes and
 * write conflicts injected at the store.
 */
import { describe, expect, it } from 'vitest';
import type { Run } from '#shared/core/orchestration/run.ts';
import { createWorkflowKind } from '#shared/core/orchestration/workflow-kind.ts';
import { createToolKind } from '#shared/core/tools/tool-kind.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { RetriableError } from '#shared/domain/errors.ts';
import type { ExecutorStore } from '#shared/ports/executor-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import type { OneTimeTimer, Timers } from '#shared/ports/timers.ts';
import { Harness, tools } from '../../../support/executor-harness.ts';
import { InMemoryClaims } from '../../../support/memory/claims.ts';

class FakeTimers implements Timers {
  readonly set_: OneTimeTimer[] = [];
  readonly cancelled: string[] = [];
  async set(timer: OneTimeTimer): Promise<void> {
    if (!this.set_.some((t) => t.id === timer.id)) this.set_.push(timer);
  }
  async cancel(_workspace: string, id: string): Promise<void> {
    this.cancelled.push(id);
  }
}

class WorkflowHarness extends Harness {
  readonly timers = new FakeTimers();

  implementationsOn(store: ExecutorStore) {
    return {
      tool: createToolKind({ store, log: silentLog, clock: this.clock, tools }),
      workflow: createWorkflowKind({ store, log: silentLog, clock: this.clock, timers: this.timers }),
    };
  }

  override deps(overrides: Parameters<Harness['deps']>[0] = {}) {
    const base = super.deps(overrides);
    return { ...base, implementations: this.implementationsOn(base.store), ...overrides };
  }

  workflowDef(context: Record<string, unknown>): Promise<Breadcrumb> {
    return this.put({ schema_name: 'workflow.def.v1', context: { workflow_id: 'wf', ...context } });
  }

  startRequest(input: unknown): Promise<Breadcrumb> {
    return this.put({ schema_name: 'workflow.request.v1', context: { workflow: 'wf', input } });
  }

  async run(runId: string): Promise<Run> {
    return (await this.store.get(this.workspace, runId)).context as unknown as Run;
  }

  async one(schema: string, tag?: string): Promise<Breadcrumb> {
    const items = await this.list(schema, tag);
    if (items.length !== 1) throw new Error(`expected one ${schema} ${tag ?? ''}, got ${items.length}`);
    return items[0] as Breadcrumb;
  }
}

const twoTools = {
  steps: [
    { id: 'a', tool: 'echo', input: { n: '=input.n' } },
    { id: 'b', tool: 'calculator', input: { expression: '=$string(steps.a.n) & "*2"' } },
  ],
  output: '=steps.b.result',
};

describe('workflow executor', () => {
  it('runs a workflow hop by hop through the tool executor and answers the request', async () => {
    const h = new WorkflowHarness();
    const echo = await h.toolDef('echo');
    const calc = await h.toolDef('calculator');
    const def = await h.workflowDef(twoTools);
    const request = await h.startRequest({ n: 21 });

    expect(await h.process(def, request)).toMatchObject({ status: 'responded' });
    const runId = `run-${request.id}`;
    expect(await h.run(runId)).toMatchObject({
      status: 'running',
      steps: { a: { status: 'running', attempts: 1 } },
    });
    const toolRequest = await h.one('tool.request.v1', `run:${runId}`);
    expect(toolRequest.tags).toEqual([`run:${runId}`, 'step:a', 'reply-to:workflow:wf']);
    expect(toolRequest.created_by).toBe('workflow:wf');

    await h.process(echo, toolRequest);
    const response = await h.one('tool.response.v1', 'step:a');
    expect(response.tags).toEqual(expect.arrayContaining([`run:${runId}`, 'step:a', 'reply-to:workflow:wf']));

    await h.process(def, response);
    const second = await h.one('tool.request.v1', 'step:b');
    // An answer to the run's own request is a continuation: the next request is at the same hop as the first.
    expect(second.causation?.hop).toBe(toolRequest.causation?.hop);
    await h.process(calc, second);
    await h.process(def, await h.one('tool.response.v1', 'step:b'));

    expect(await h.run(runId)).toMatchObject({ status: 'succeeded', output: 42 });
    const result = await h.one('workflow.result.v1', `request:${request.id}`);
    expect(result.context).toMatchObject({
      workflow_id: 'wf',
      run_id: runId,
      status: 'succeeded',
      output: 42,
    });
    // The run breadcrumb's history is its audit log: one version per transition.
    expect((await h.store.get(h.workspace, runId)).version).toBe(3);
  });

  it('recovers from a crash between writing the run and writing its request', async () => {
    const h = new WorkflowHarness();
    await h.toolDef('echo');
    await h.toolDef('calculator');
    const def = await h.workflowDef(twoTools);
    const request = await h.startRequest({ n: 1 });
    let crashes = 0;
    const crashing: ExecutorStore = Object.create(h.store, {
      create: {
        value: async (...args: Parameters<ExecutorStore['create']>) => {
          if (args[1].schema_name === 'tool.request.v1' && crashes++ === 0) throw new RetriableError('crash');
          return h.store.create(...args);
        },
      },
    });
    const { deliveries } = await h.deliverUntilHandled(def, request, (n) =>
      n === 1 ? h.deps({ store: crashing }) : h.deps(),
    );
    expect(deliveries).toBe(2);
    expect(await h.list('tool.request.v1')).toHaveLength(1);
    expect((await h.run(`run-${request.id}`)).steps.a?.attempts).toBe(1);
  });

  it('recovers from a crash before the requests in the driver that wrote the run: the redelivery reads the run', async () => {
    const h = new WorkflowHarness();
    const echo = await h.toolDef('echo');
    await h.toolDef('calculator');
    const def = await h.workflowDef(twoTools);
    const request = await h.startRequest({ n: 1 });
    const runId = `run-${request.id}`;
    let crashes = 0;
    let runReads = 0;
    const crashing: ExecutorStore = Object.create(h.store, {
      create: {
        value: async (...args: Parameters<ExecutorStore['create']>) => {
          if (
            args[1].context.requestId !== undefined &&
            String(args[2].id).includes('.b.') &&
            crashes++ === 0
          )
            throw new RetriableError('crash');
          return h.store.create(...args);
        },
      },
      get: {
        value: async (...args: Parameters<ExecutorStore['get']>) => {
          if (args[1] === runId) runReads++;
          return h.store.get(...args);
        },
      },
    });
    // One driver for every delivery: it keeps the run it wrote last in memory.
    const one = h.deps({ store: crashing });
    await h.process(def, request, one);
    await h.process(echo, await h.one('tool.request.v1', 'step:a'));
    const answer = await h.one('tool.response.v1', 'step:a');
    const readsBefore = runReads;
    const { deliveries } = await h.deliverUntilHandled(def, answer, () => one);

    expect(deliveries).toBe(2);
    // The first delivery advanced the run it had written without reading it; the redelivery, a no-op on the run
    // in memory, read the run before re-emitting its effects.
    expect(runReads - readsBefore).toBe(1);
    expect(await h.list('tool.request.v1', 'step:b')).toHaveLength(1);
    expect((await h.store.get(h.workspace, runId)).version).toBe(2);
    expect((await h.run(runId)).steps.b?.attempts).toBe(1);
  });

  it('reads a run again when another worker moved it on since this driver wrote it (the write fails its condition)', async () => {
    const h = new WorkflowHarness();
    const echo = await h.toolDef('echo');
    const calc = await h.toolDef('calculator');
    const def = await h.workflowDef(twoTools);
    const request = await h.startRequest({ n: 21 });
    const runId = `run-${request.id}`;
    const mine = h.deps();
    await h.process(def, request, mine); // this driver wrote version 1
    await h.process(echo, await h.one('tool.request.v1', 'step:a'));
    const answerA = await h.one('tool.response.v1', 'step:a');
    await h.process(def, answerA, h.deps()); // another worker wrote version 2
    await h.process(calc, await h.one('tool.request.v1', 'step:b'));

    // A duplicate of the answer reaches this driver: applied to version 1 it would change the run, but the write is
    // conditional on version 1 and fails; the run read (version 2) has the answer, so nothing is written.
    // (a delivery the claims do not stop: the other worker's claim is on another executor's table, say)
    await h.process(def, answerA, { ...mine, claims: new InMemoryClaims({ clock: h.clock }) });
    expect((await h.store.get(h.workspace, runId)).version).toBe(2);
    expect(await h.list('tool.request.v1', 'step:b')).toHaveLength(1);

    await h.process(def, await h.one('tool.response.v1', 'step:b'), mine);
    expect(await h.run(runId)).toMatchObject({ status: 'succeeded', output: 42 });
    expect((await h.store.get(h.workspace, runId)).version).toBe(3);
  });

  it('lists tool definitions once for many runs, and sees a tool defined after a step found none at once', async () => {
    const h = new WorkflowHarness();
    await h.toolDef('echo');
    const def = await h.workflowDef({
      steps: [
        { id: 'a', tool: 'echo' },
        { id: 'b', tool: 'later' },
      ],
    });
    let listings = 0;
    const counting: ExecutorStore = Object.create(h.store, {
      list: {
        value: async (...args: Parameters<ExecutorStore['list']>) => {
          if (args[0].schema_name === 'tool.def.v1') listings++;
          return h.store.list(...args);
        },
      },
    });
    const one = h.deps({ store: counting });
    for (let i = 0; i < 3; i++) await h.process(def, await h.startRequest({ i }), one);
    expect(await h.list('tool.request.v1', 'step:a')).toHaveLength(3);
    expect(listings).toBe(1);

    // A name not found is looked up again: a run whose step names it fails only while nobody defines it.
    const [first, second] = await h.list('tool.request.v1', 'step:a');
    if (first === undefined || second === undefined) throw new Error('expected requests');
    const echo = (await h.list('tool.def.v1')).find((d) => d.context.name === 'echo') as Breadcrumb;
    await h.process(echo, first);
    await h.process(def, await h.one('tool.response.v1', `request:${first.id}`), one);
    expect(await h.run(String(first.tags.find((t) => t.startsWith('run:'))?.slice(4)))).toMatchObject({
      status: 'failed',
      error: 'step "b" failed: no tool.def.v1 named "later" in workspace ws',
    });
    await h.toolDef('later');
    await h.process(echo, second);
    await h.process(def, await h.one('tool.response.v1', `request:${second.id}`), one);
    expect(await h.list('tool.request.v1', 'step:b')).toHaveLength(1);
  });

  it('joins a parallel exactly once when its answers race for the run (write conflicts re-read and re-apply)', async () => {
    const h = new WorkflowHarness();
    const echo = await h.toolDef('echo');
    const def = await h.workflowDef({
      steps: [
        {
          id: 'p',
          parallel: [
            { id: 'l', tool: 'echo', input: { s: 'L' } },
            { id: 'r', tool: 'echo', input: { s: 'R' } },
          ],
        },
        { id: 'after', tool: 'echo', input: '=steps.p' },
      ],
    });
    const request = await h.startRequest({});
    await h.process(def, request);
    for (const req of await h.list('tool.request.v1')) await h.process(echo, req);
    const [first, second] = await h.list('tool.response.v1');
    if (first === undefined || second === undefined) throw new Error('expected two responses');
    // The first answer's update loses to the second's: the store reports a conflict once.
    let conflicted = false;
    const racing: ExecutorStore = Object.create(h.store, {
      update: {
        value: async (...args: Parameters<ExecutorStore['update']>) => {
          if (!conflicted) {
            conflicted = true;
            await h.process(def, second);
          }
          return h.store.update(...args);
        },
      },
    });
    await h.process(def, first, h.deps({ store: racing }));
    await h.process(def, second);
    const run = await h.run(`run-${request.id}`);
    expect(run.steps.p).toMatchObject({ status: 'succeeded', output: { l: { s: 'L' }, r: { s: 'R' } } });
    expect(await h.list('tool.request.v1', 'step:after')).toHaveLength(1);
  });

  it('applies answers that reach one run together in one write, without conflicts (a map is not serialized on its run)', async () => {
    const h = new WorkflowHarness();
    const echo = await h.toolDef('echo');
    const def = await h.workflowDef({
      steps: [
        {
          id: 'each',
          map: {
            items: '=input.items',
            max_concurrency: 10,
            step: { id: 'one', tool: 'echo', input: { n: '=item' } },
          },
        },
      ],
    });
    const request = await h.startRequest({ items: Array.from({ length: 20 }, (_, i) => i) });
    const runId = `run-${request.id}`;
    await h.process(def, request);
    for (const req of await h.list('tool.request.v1')) await h.process(echo, req);
    const answers = await h.list('tool.response.v1');
    expect(answers).toHaveLength(10);
    const before = (await h.store.get(h.workspace, runId)).version;

    // One executor instance (one driver) handles the ten answers at once, as a batch of its queue.
    let runWrites = 0;
    let conflicts = 0;
    const counting: ExecutorStore = Object.create(h.store, {
      update: {
        value: async (...args: Parameters<ExecutorStore['update']>) => {
          if (args[1] === runId) runWrites++;
          try {
            return await h.store.update(...args);
          } catch (error) {
            if (args[1] === runId) conflicts++;
            throw error;
          }
        },
      },
    });
    const deps = h.deps({ store: counting });
    await Promise.all(answers.map((answer) => h.process(def, answer, deps)));

    // The first answer may be written alone; every answer that arrives while it is written waits and joins the
    // next write. One write per answer (with a conflict and a re-read for each that lost) would serialize them.
    expect(conflicts).toBe(0);
    expect(runWrites).toBeLessThanOrEqual(2);
    const run = await h.run(runId);
    expect((await h.store.get(h.workspace, runId)).version - before).toBe(runWrites);
    const items = Object.entries(run.steps).filter(([key]) => key.startsWith('each['));
    expect(items.filter(([, s]) => s.status === 'succeeded')).toHaveLength(10);
    expect(items.filter(([, s]) => s.status === 'running')).toHaveLength(10);
    // Each next item is requested exactly once, whichever answer's message carried the group's effects.
    const requests = await h.list('tool.request.v1');
    expect(requests).toHaveLength(20);
    expect(new Set(requests.map((r) => r.id)).size).toBe(20);

    // The rest of the map ends the run as one answer at a time would.
    const firstWave = new Set(answers.map((a) => a.id));
    const answered = new Set(answers.map((a) => a.tags.find((t) => t.startsWith('request:'))));
    for (const req of requests) if (!answered.has(`request:${req.id}`)) await h.process(echo, req);
    for (const answer of await h.list('tool.response.v1')) {
      if (!firstWave.has(answer.id)) await h.process(def, answer);
    }
    expect(await h.run(runId)).toMatchObject({ status: 'succeeded' });
    expect(await h.one('workflow.result.v1', `request:${request.id}`)).toBeDefined();
  });

  it('fails a tool step at once when no tool.def.v1 names its tool', async () => {
    const h = new WorkflowHarness();
    const def = await h.workflowDef({ steps: [{ id: 'a', tool: 'nobody' }] });
    const request = await h.startRequest({});
    await h.process(def, request);
    expect(await h.run(`run-${request.id}`)).toMatchObject({
      status: 'failed',
      error: 'step "a" failed: no tool.def.v1 named "nobody" in workspace ws',
    });
    expect(await h.list('tool.request.v1')).toEqual([]);
    expect(await h.one('workflow.error.v1', `request:${request.id}`)).toMatchObject({
      context: { status: 'failed' },
    });
  });

  it('sets a timer for a wait and goes on when the fired timer breadcrumb arrives', async () => {
    const h = new WorkflowHarness();
    const def = await h.workflowDef({ steps: [{ id: 'nap', wait: { seconds: 3600 } }], output: '="woke"' });
    const request = await h.startRequest({});
    await h.process(def, request);
    const [timer] = h.timers.set_;
    expect(timer).toMatchObject({ workspace: 'ws', at: new Date(h.clock.now().getTime() + 3600_000) });
    if (timer === undefined) throw new Error('no timer');
    const fired = (
      await h.store.create(
        'ws',
        {
          schema_name: timer.breadcrumb.schema_name,
          title: '',
          tags: timer.breadcrumb.tags,
          context: timer.breadcrumb.context,
        },
        { principal: 'system:scheduler', id: timer.breadcrumb.id },
      )
    ).breadcrumb;
    await h.process(def, fired);
    expect(await h.run(`run-${request.id}`)).toMatchObject({ status: 'succeeded', output: 'woke' });
  });

  it('follows the definition version a run started with', async () => {
    const h = new WorkflowHarness();
    const echo = await h.toolDef('echo');
    const def = await h.workflowDef({ steps: [{ id: 'a', tool: 'echo', input: { v: 1 } }], output: '="v1"' });
    const request = await h.startRequest({});
    await h.process(def, request);
    const edited = await h.store.update(
      'ws',
      def.id,
      { context: { workflow_id: 'wf', steps: [{ id: 'other', tool: 'echo' }], output: '="v2"' } },
      { principal: 'user:tester' },
    );
    await h.process(echo, await h.one('tool.request.v1'));
    await h.process(edited, await h.one('tool.response.v1'));
    expect(await h.run(`run-${request.id}`)).toMatchObject({
      status: 'succeeded',
      output: 'v1',
      workflow_version: 1,
    });
  });
});
