import { describe, expect, it } from 'vitest';
import { advance } from '#shared/core/orchestration/advance.ts';
import type { Effect } from '#shared/core/orchestration/effects.ts';
import { RunHarness, startEvent, workflow } from '../../../support/run-harness.ts';

const types = (effects: Effect[]) => effects.map((e) => `${e.type}:${'step' in e ? e.step : e.id}`);

describe('advance', () => {
  describe('sequential steps', () => {
    const def = workflow({
      input_schema: { type: 'object', required: ['n'], properties: { n: { type: 'number' } } },
      steps: [
        { id: 'a', tool: 'echo', input: { n: '=input.n' } },
        { id: 'skip_me', tool: 'echo', when: '=input.n > 100' },
        { id: 'b', tool: 'calculator', input: { expression: '=steps.a.n & "*2"' } },
      ],
      output: { doubled: '=steps.b.result', first: '=run.steps.a.by' },
    });

    it('runs each step as its own request, feeds outputs forward, skips on `when`, and ends with a result', async () => {
      const h = new RunHarness(def);
      const started = await h.start({ n: 21 });
      expect(types(started.effects)).toEqual(['request:a']);
      expect(h.request('a')).toMatchObject({ kind: 'tool', target: 'echo', input: { n: 21 }, attempt: 1 });
      expect(h.current.status).toBe('running');

      const afterA = await h.answer('a', { n: 21 });
      expect(types(afterA.effects)).toEqual(['request:b']);
      expect(h.state('skip_me').status).toBe('skipped');
      expect(h.request('b').input).toEqual({ expression: '21*2' });

      const done = await h.answer('b', { result: 42 });
      expect(h.current.status).toBe('succeeded');
      expect(h.current.output).toEqual({ doubled: 42, first: 'tool:echo' });
      expect(done.effects).toEqual([
        {
          type: 'result',
          id: `${h.current.run_id}.result.1`,
          status: 'succeeded',
          output: { doubled: 42, first: 'tool:echo' },
        },
      ]);
      expect(h.state('a')).toMatchObject({ status: 'succeeded', attempts: 1, output: { n: 21 } });
    });

    it('fails at start when the input breaks input_schema, naming the field', async () => {
      const h = new RunHarness(def);
      const started = await h.start({ n: 'x' });
      expect(h.current.status).toBe('failed');
      expect(h.current.error).toMatch(/input\.n: must be number/);
      expect(types(started.effects)).toEqual([`result:${h.current.run_id}.result.1`]);
    });

    it('a duplicate start, a duplicate answer and an unknown answer change nothing and re-emit the effects', async () => {
      const h = new RunHarness(def);
      await h.start({ n: 1 });
      const again = await h.start({ n: 1 });
      expect(again.changed).toBe(false);
      expect(types(again.effects)).toEqual(['request:a']);

      const answer = h.answerEvent('a', { n: 1 });
      await h.send(answer);
      const dup = await h.send(answer);
      expect(dup.changed).toBe(false);
      expect(types(dup.effects)).toEqual(['request:b']);

      const stray = await h.send({ type: 'answer', id: 'x', request_id: 'nobody', ok: true, by: 'tool:x' });
      expect(stray.changed).toBe(false);
      expect(stray.note).toMatch(/no current step attempt/);
    });

    it('recovers from a crash between writing the run and writing its request: the redelivery re-emits it', async () => {
      const h = new RunHarness(def);
      await h.start({ n: 1 });
      const answer = h.answerEvent('a', { n: 1 });
      await h.send(answer); // run written; pretend the request for b was never written
      const redelivered = await h.send(answer);
      expect(redelivered.changed).toBe(false);
      expect(redelivered.effects.find((e) => e.type === 'request')).toMatchObject({ step: 'b' });
    });

    it('continues past a failed step with on_error "continue", its output null', async () => {
      const h = new RunHarness(
        workflow({
          steps: [
            { id: 'a', tool: 'x', on_error: 'continue' },
            { id: 'b', tool: 'echo', input: { prev: '=steps.a' } },
          ],
        }),
      );
      await h.start();
      await h.fail('a', 'nope');
      expect(h.state('a')).toMatchObject({ status: 'failed', error: 'nope' });
      expect(h.request('b').input).toEqual({ prev: null });
    });

    it('fails the run with the step and its error when a step fails', async () => {
      const h = new RunHarness(
        workflow({
          steps: [
            { id: 'a', tool: 'x' },
            { id: 'b', tool: 'y' },
          ],
        }),
      );
      await h.start();
      const failed = await h.fail('a', 'bad input');
      expect(h.current).toMatchObject({
        status: 'failed',
        error: 'step "a" failed: bad input',
        failed_step: 'a',
      });
      expect(failed.effects).toEqual([
        expect.objectContaining({ type: 'result', status: 'failed', failed_step: 'a' }),
      ]);
      expect(h.current.steps.b).toBeUndefined();
    });

    it('fails a step whose expression fails, without retrying it', async () => {
      const h = new RunHarness(
        workflow({ steps: [{ id: 'a', tool: 'x', input: '=$error("no")', retry: { max_attempts: 3 } }] }),
      );
      await h.start();
      expect(h.state('a')).toMatchObject({ status: 'failed', attempts: 1 });
      expect(h.current.error).toMatch(/no/);
    });
  });

  describe('parallel', () => {
    const def = workflow({
      steps: [
        {
          id: 'both',
          parallel: [
            { id: 'left', tool: 'echo', input: { side: 'L' } },
            { id: 'right', tool: 'echo', input: { side: 'R' } },
          ],
        },
        { id: 'after', tool: 'echo', input: '=steps.both' },
      ],
    });

    it('starts every branch, joins once when all end, output by branch id; branches are steps too', async () => {
      const h = new RunHarness(def);
      const started = await h.start();
      expect(types(started.effects)).toEqual(['request:left', 'request:right']);
      const one = await h.answer('right', 'R!');
      expect(one.effects).toEqual([]);
      expect(h.state('both').status).toBe('running');
      const two = await h.answer('left', 'L!');
      expect(types(two.effects)).toEqual(['request:after']);
      expect(h.state('both')).toMatchObject({ status: 'succeeded', output: { left: 'L!', right: 'R!' } });
      expect(h.state('left').output).toBe('L!');
      expect(h.request('after').input).toEqual({ left: 'L!', right: 'R!' });
    });

    it('fails at the first failing branch and cancels the others', async () => {
      const h = new RunHarness(def);
      await h.start();
      await h.fail('left', 'down');
      expect(h.state('right').status).toBe('cancelled');
      expect(h.current).toMatchObject({ status: 'failed', failed_step: 'both' });
      expect(h.current.error).toContain('branch "left" failed: down');
    });
  });

  describe('map', () => {
    const def = workflow({
      steps: [
        {
          id: 'each',
          map: {
            items: '=input.xs',
            max_concurrency: 2,
            step: { id: 'one', tool: 'echo', input: { x: '=item', i: '=index', base: '=steps.prep' } },
          },
        },
      ],
      output: '=steps.each',
    });

    it('runs one step per item, at most max_concurrency at once, output in item order', async () => {
      const h = new RunHarness(def);
      const started = await h.start({ xs: ['a', 'b', 'c', 'd'] });
      expect(types(started.effects)).toEqual(['request:each[0]', 'request:each[1]']);
      expect(h.request('each[1]').input).toEqual({ x: 'b', i: 1, base: null });
      const next = await h.answer('each[1]', 'B');
      expect(types(next.effects)).toEqual(['request:each[2]']);
      await h.answer('each[2]', 'C');
      await h.answer('each[3]', 'D');
      expect(h.current.status).toBe('running');
      await h.answer('each[0]', 'A');
      expect(h.current).toMatchObject({ status: 'succeeded', output: ['A', 'B', 'C', 'D'] });
    });

    it('ends at once with [] for no items, and treats a single value as one item', async () => {
      const empty = new RunHarness(def);
      await empty.start({ xs: [] });
      expect(empty.current).toMatchObject({ status: 'succeeded', output: [] });
      const single = new RunHarness(def);
      await single.start({ xs: 'only' });
      expect(single.request('each[0]').input).toMatchObject({ x: 'only' });
    });

    it('fails when the items are null', async () => {
      const h = new RunHarness(def);
      await h.start({});
      expect(h.current.error).toContain('map items: expected an array');
    });
  });

  describe('human checkpoints', () => {
    const def = workflow({
      steps: [
        {
          id: 'approve',
          human: {
            prompt: '="Ship order " & input.order & "?"',
            input_schema: {
              type: 'object',
              required: ['carrier'],
              properties: { carrier: { type: 'string' } },
            },
          },
        },
        { id: 'ship', tool: 'echo', input: { carrier: '=steps.approve.carrier' } },
      ],
    });

    it('waits with a human request, then resumes with the approved input as the step output', async () => {
      const h = new RunHarness(def);
      const started = await h.start({ order: 'A-1' });
      expect(h.current.status).toBe('waiting');
      expect(h.request('approve')).toMatchObject({ kind: 'human', prompt: 'Ship order A-1?' });
      expect(types(started.effects)).toEqual(['request:approve']);
      h.tick(60);
      await h.human('approve', 'approve', { carrier: 'ups' }, { comment: 'fine', by: 'user:bob' });
      expect(h.state('approve')).toMatchObject({
        status: 'succeeded',
        output: { carrier: 'ups' },
        by: 'user:bob',
        decision: 'approve',
        comment: 'fine',
        answered_at: '2026-01-01T00:01:00.000Z',
      });
      expect(h.request('ship').input).toEqual({ carrier: 'ups' });
      expect(h.current.status).toBe('running');
    });

    it('answers input that breaks input_schema with an error and keeps waiting', async () => {
      const h = new RunHarness(def);
      await h.start({ order: 'A-1' });
      const bad = await h.human('approve', 'approve', { carrier: 7 }, { id: 'resp-bad' });
      expect(bad.changed).toBe(false);
      expect(bad.effects).toContainEqual(
        expect.objectContaining({
          type: 'response_error',
          response_id: 'resp-bad',
          error: expect.stringContaining('input.carrier: must be string'),
        }),
      );
      expect(h.current.status).toBe('waiting');
      expect(h.state('approve').status).toBe('waiting');
    });

    it('fails the run on reject, with who rejected and why', async () => {
      const h = new RunHarness(def);
      await h.start({ order: 'A-1' });
      await h.human('approve', 'reject', undefined, { comment: 'too late', by: 'user:bob' });
      expect(h.current).toMatchObject({
        status: 'failed',
        error: 'step "approve" failed: rejected by user:bob: too late',
      });
    });

    it('continues after a reject with on_error "continue"', async () => {
      const h = new RunHarness(
        workflow({
          steps: [
            { id: 'approve', human: { prompt: 'ok?' }, on_error: 'continue' },
            { id: 'next', tool: 'echo' },
          ],
        }),
      );
      await h.start();
      await h.human('approve', 'reject');
      expect(h.state('approve').status).toBe('failed');
      expect(h.request('next')).toBeDefined();
    });
  });

  describe('waits, timeouts and retries', () => {
    it('a wait step sets a timer and ends when it fires', async () => {
      const h = new RunHarness(
        workflow({
          steps: [
            { id: 'nap', wait: { seconds: 90 } },
            { id: 'after', tool: 'echo' },
          ],
        }),
      );
      const started = await h.start();
      expect(started.effects).toEqual([
        expect.objectContaining({
          type: 'timer',
          purpose: 'wait',
          step: 'nap',
          at: '2026-01-01T00:01:30.000Z',
        }),
      ]);
      h.tick(90);
      const fired = await h.fire('nap', 'wait');
      expect(types(fired.effects)).toEqual(['request:after']);
      expect(h.state('nap').status).toBe('succeeded');
    });

    it('retries a failed attempt after its back-off, doubling, with new request ids, then gives up', async () => {
      const h = new RunHarness(
        workflow({ steps: [{ id: 'a', tool: 'flaky', retry: { max_attempts: 3, backoff_seconds: 10 } }] }),
      );
      await h.start();
      const firstId = h.request('a').id;
      const failed = await h.fail('a');
      expect(failed.effects).toEqual([
        expect.objectContaining({ type: 'timer', purpose: 'retry', at: '2026-01-01T00:00:10.000Z' }),
      ]);
      expect(h.state('a')).toMatchObject({ status: 'waiting', attempts: 1, error: 'boom' });
      await h.fire('a', 'retry');
      expect(h.request('a')).toMatchObject({ attempt: 2 });
      expect(h.request('a').id).not.toBe(firstId);
      await h.fail('a');
      expect(h.openTimers()[0]?.at).toBe('2026-01-01T00:00:20.000Z');
      await h.fire('a', 'retry');
      await h.fail('a', 'third');
      expect(h.current).toMatchObject({ status: 'failed', error: 'step "a" failed: third' });
      expect(h.state('a').attempts).toBe(3);
    });

    it('retries at once without a back-off', async () => {
      const h = new RunHarness(workflow({ steps: [{ id: 'a', tool: 'flaky', retry: { max_attempts: 2 } }] }));
      await h.start();
      const retried = await h.fail('a');
      expect(retried.effects).toEqual([expect.objectContaining({ type: 'request', step: 'a', attempt: 2 })]);
    });

    it('times out an attempt, retries it, and ignores the late answer of the timed-out attempt', async () => {
      const h = new RunHarness(
        workflow({ steps: [{ id: 'a', tool: 'slow', timeout_seconds: 30, retry: { max_attempts: 2 } }] }),
      );
      await h.start();
      const late = h.answerEvent('a', 'too late');
      h.tick(30);
      const timedOut = await h.fire('a', 'timeout');
      expect(h.state('a')).toMatchObject({ status: 'running', attempts: 2, error: 'timed out after 30 s' });
      expect(types(timedOut.effects)).toEqual(['request:a', 'timer:a']);
      const ignored = await h.send(late);
      expect(ignored.changed).toBe(false);
      await h.answer('a', 'on time');
      expect(h.current).toMatchObject({ status: 'succeeded', output: 'on time' });
    });

    it('cancels the timeout timer of a step that answered in time', async () => {
      const h = new RunHarness(workflow({ steps: [{ id: 'a', tool: 'x', timeout_seconds: 30 }] }));
      await h.start();
      const timeout = h.openTimers()[0];
      const answered = await h.answer('a');
      expect(answered.effects).toContainEqual({ type: 'cancel_timer', id: timeout?.id });
    });
  });

  describe('control', () => {
    const def = workflow({
      steps: [
        { id: 'a', tool: 'echo' },
        { id: 'b', tool: 'echo' },
        { id: 'c', tool: 'echo' },
      ],
    });

    it('pause lets the running step finish but starts nothing; resume starts the next', async () => {
      const h = new RunHarness(def);
      await h.start();
      await h.control('pause');
      expect(h.current).toMatchObject({ status: 'paused', paused_by: 'user:ann' });
      const answered = await h.answer('a', 'A');
      expect(answered.effects).toEqual([]);
      expect(h.state('a').status).toBe('succeeded');
      expect(h.current.steps.b).toBeUndefined();
      const resumed = await h.control('resume');
      expect(types(resumed.effects)).toEqual(['request:b']);
      expect(h.current.status).toBe('running');
    });

    it('a wait paused past its end stays paused, and the run finishes after resume', async () => {
      const h = new RunHarness(workflow({ steps: [{ id: 'nap', wait: { seconds: 5 } }] }));
      await h.start();
      await h.control('pause');
      h.tick(10);
      await h.fire('nap', 'wait');
      expect(h.current.status).toBe('paused');
      await h.control('resume');
      expect(h.current.status).toBe('succeeded');
    });

    it('cancel ends the run, cancels active steps, and records later answers without applying them', async () => {
      const h = new RunHarness(def);
      await h.start();
      const late = h.answerEvent('a', 'A', true, 'late-1');
      const cancelled = await h.control('cancel');
      expect(h.current).toMatchObject({ status: 'cancelled', error: 'cancelled by user:ann' });
      expect(cancelled.effects).toEqual([expect.objectContaining({ type: 'result', status: 'cancelled' })]);
      await h.send(late);
      const again = await h.send(late);
      expect(again.changed).toBe(false);
      expect(h.state('a')).toMatchObject({
        status: 'cancelled',
        late_answers: [{ id: 'late-1', by: 'tool:echo', ok: true }],
      });
      expect(h.state('a').output).toBeUndefined();
    });

    it('retry from a step reruns that step and the ones after it as new attempts, keeping the ones before', async () => {
      const h = new RunHarness(def);
      await h.start();
      await h.answer('a', 'A1');
      await h.answer('b', 'B1');
      await h.answer('c', 'C1');
      const firstB = h.state('b').attempt_id;
      const retried = await h.control('retry', 'b');
      expect(types(retried.effects)).toEqual(['request:b']);
      expect(h.request('b').attempt).toBe(2);
      expect(h.request('b').id).not.toBe(firstB);
      expect(h.state('a')).toMatchObject({ attempts: 1, output: 'A1' });
      expect(h.state('c')).toEqual({ kind: 'tool', status: 'pending', attempts: 1 });
      await h.answer('b', 'B2');
      await h.answer('c', 'C2');
      expect(h.current).toMatchObject({ status: 'succeeded', output: 'C2', completions: 2 });
      expect(h.written.filter((e) => e.type === 'result').map((e) => e.id)).toEqual([
        `${h.current.run_id}.result.1`,
        `${h.current.run_id}.result.2`,
      ]);
    });

    it('retry without a step reruns from the failed one; a redelivered retry changes nothing', async () => {
      const h = new RunHarness(def);
      await h.start();
      await h.answer('a');
      await h.fail('b');
      await h.control('retry', undefined, 'ctl-retry');
      expect(h.request('b').attempt).toBe(2);
      const dup = await h.control('retry', undefined, 'ctl-retry');
      expect(dup.changed).toBe(false);
      expect(h.request('b').attempt).toBe(2);
    });

    it('refuses what does not apply, changing nothing', async () => {
      const h = new RunHarness(def);
      await h.start();
      expect((await h.control('resume')).note).toMatch(/not paused/);
      expect((await h.control('retry', 'nope')).note).toMatch(/no step "nope"/);
      await h.control('cancel');
      expect((await h.control('pause')).note).toMatch(/cancelled/);
      expect((await h.control('retry', 'b')).note).toMatch(/step "a" before "b" did not succeed/);
    });

    it('a rerun map gets fresh items with new request ids', async () => {
      const h = new RunHarness(
        workflow({ steps: [{ id: 'm', map: { items: '=[1,2]', step: { id: 'one', tool: 'echo' } } }] }),
      );
      await h.start();
      const firstIds = h.openRequests().map((r) => r.id);
      await h.answer('m[0]');
      await h.answer('m[1]');
      await h.control('retry', 'm');
      const secondIds = h.openRequests().map((r) => r.id);
      expect(secondIds).toHaveLength(2);
      expect(secondIds.some((id) => firstIds.includes(id))).toBe(false);
      expect(h.state('m[0]')).toMatchObject({ status: 'running', attempts: 1 });
    });
  });

  describe('agents and sub-workflows', () => {
    it('writes an agent request with its message and mode at depth + 1, and takes its answer', async () => {
      const h = new RunHarness(
        workflow({ steps: [{ id: 'ask', agent: 'helper', message: '="Hi " & input.name', mode: 'plan' }] }),
      );
      await h.start({ name: 'Ann' });
      expect(h.request('ask')).toMatchObject({
        kind: 'agent',
        target: 'helper',
        message: 'Hi Ann',
        mode: 'plan',
        depth: 1,
      });
      // Model calls are counted from the answers' usage, not per agent step started (run-budgets.test.ts).
      expect(h.current.counters).toEqual({ steps: 1, llm_calls: 0 });
      await h.answer('ask', { plan: ['x'] });
      expect(h.current.output).toEqual({ plan: ['x'] });
    });

    it('cancels a running sub-workflow when the run is cancelled', async () => {
      const h = new RunHarness(workflow({ steps: [{ id: 'sub', workflow: 'child', input: { a: 1 } }] }));
      await h.start();
      const request = h.request('sub');
      expect(request).toMatchObject({ kind: 'workflow', target: 'child', input: { a: 1 }, depth: 1 });
      const cancelled = await h.control('cancel');
      expect(cancelled.effects).toContainEqual(
        expect.objectContaining({ type: 'cancel_run', run_id: `run-${request.id}`, workflow: 'child' }),
      );
    });
  });

  describe('limits', () => {
    it('fails the run when max_steps would be exceeded, naming the limit', async () => {
      const h = new RunHarness(
        workflow({
          limits: { max_steps: 3 },
          steps: [
            { id: 'm', map: { items: '=[1,2,3,4]', max_concurrency: 4, step: { id: 'one', tool: 'echo' } } },
          ],
        }),
      );
      await h.start();
      expect(h.current.status).toBe('failed');
      expect(h.current.error).toMatch(/^limit max_steps \(3\) exceeded: step "m\[3\]"/);
    });

    it('pauses (does not fail) the run when max_llm_calls is used up, naming the budget', async () => {
      const h = new RunHarness(
        workflow({
          limits: { max_llm_calls: 1 },
          steps: [
            { id: 'a', agent: 'x' },
            { id: 'b', agent: 'x' },
          ],
        }),
      );
      await h.start();
      await h.send({ ...h.answerEvent('a', 'ok'), usage: { calls: 1, tokens: 10, cost_nusd: 0 } } as never);
      expect(h.current.status).toBe('paused');
      expect(h.current.stopped_by).toMatchObject({
        budget: 'limits.max_llm_calls',
        limit: 1,
        used: 1,
        step: 'b',
      });
    });

    it('fails a run started deeper than max_depth, and a sub-call that would go deeper', async () => {
      const deep = new RunHarness(workflow({ max_depth: 2, steps: [{ id: 'a', tool: 'x' }] }));
      await deep.start({}, { depth: 3 });
      expect(deep.current.error).toBe('limit max_depth (2) exceeded: this run would run at depth 3');

      const nested = new RunHarness(workflow({ max_depth: 2, steps: [{ id: 'sub', workflow: 'child' }] }));
      await nested.start({}, { depth: 2 });
      expect(nested.current.error).toBe('limit max_depth (2) exceeded: step "sub" would run at depth 3');
    });
  });

  it('keeps running definitions written before the engine: `trigger` in scope, last output is the output', async () => {
    const def = workflow({
      subscriptions: { selectors: [{ schema_name: 'calc.job.v1', role: 'trigger' }] },
      steps: [{ id: 'product', tool: 'calculator', input: { expression: '=trigger.a & "*" & trigger.b' } }],
      output: { schema_name: 'workflow.result.v1', tags: ['job:1'] },
    });
    const h = new RunHarness(def);
    await h.start(
      { a: 17, b: 23 },
      { trigger: { id: 't', schema_name: 'calc.job.v1', context: { a: 17, b: 23 } } },
    );
    expect(h.request('product').input).toEqual({ expression: '17*23' });
    await h.answer('product', { result: 391 });
    expect(h.current.output).toEqual({ result: 391 });
  });

  it('gives expressions the transition time as $now()', async () => {
    const def = workflow({ steps: [{ id: 'a', tool: 'echo', input: { at: '=$now()' } }] });
    const now = new Date('2030-05-05T05:05:05.000Z');
    const result = await advance({ definition: def, run: undefined, event: startEvent({}), now });
    expect(result.effects[0]).toMatchObject({ input: { at: '2030-05-05T05:05:05.000Z' } });
  });
});

describe('runs that could not be stored', () => {
  const def = workflow({
    steps: [
      { id: 'load', tool: 'echo' },
      { id: 'each', map: { items: '=steps.load.rows', step: { id: 'one', tool: 'echo', input: '=item' } } },
    ],
  });
  const rows = (n: number, bytes: number) =>
    Array.from({ length: n }, (_, i) => ({ i, pad: 'x'.repeat(bytes) }));

  it('fails a run whose map would hold more than a run can, naming the step, instead of writing it', async () => {
    const h = new RunHarness(def);
    await h.start({});
    // The answer fits in one breadcrumb, the run holding it as the step's output and again as the map's items
    // does not.
    const result = await h.answer('load', { rows: rows(200, 1000) });
    expect(h.current.status).toBe('failed');
    expect(h.current.error).toMatch(
      /the run would hold \d+ KB, over the 350 KB a run can hold \(step "load"/,
    );
    expect(JSON.stringify(h.current).length).toBeLessThan(350 * 1024);
    expect(result.effects.some((e) => e.type === 'result')).toBe(true);
    expect(h.openRequests()).toEqual([]);
  });

  it('fails a run whose start would not fit, keeping its input once', async () => {
    const h = new RunHarness(workflow({ steps: [{ id: 'one', tool: 'echo', input: '=input' }] }));
    const result = await h.start({ rows: rows(200, 1000) });
    expect(h.current.status).toBe('failed');
    expect(h.current.error).toMatch(/over the 350 KB a run can hold/);
    expect(JSON.stringify(h.current).length).toBeLessThan(350 * 1024);
    expect(result.effects.map((e) => e.type)).toEqual(['result']);
  });
});
