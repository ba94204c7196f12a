import { describe, expect, it } from 'vitest';
import { actionOf, readRunMessage, runBreadcrumb } from '#shared/core/orchestration/messages.ts';
import type { IncomingBreadcrumb } from '#shared/domain/protocol.ts';
import { RunHarness, workflow } from '../../../support/run-harness.ts';

const def = workflow({
  steps: [
    { id: 'ask', agent: 'helper', message: 'hi', mode: 'converse' },
    { id: 'sub', workflow: 'child', input: { a: 1 } },
    { id: 'approve', human: { prompt: 'ok?', input_schema: { type: 'object' } } },
    { id: 'call', tool: 'echo', input: { x: 1 }, timeout_seconds: 60 },
  ],
  output: '=steps.call',
});

const crumb = (over: Partial<IncomingBreadcrumb>): IncomingBreadcrumb => ({
  id: 'b1',
  schema_name: 'x.y.v1',
  tags: [],
  context: {},
  created_by: 'user:ann',
  ...over,
});

const addressed = ['run:run-1', 'step:s', 'reply-to:workflow:wf'];

describe('readRunMessage', () => {
  it('starts a run from a request naming the workflow, keeping the reply tags for the result', () => {
    const message = readRunMessage(
      crumb({
        id: 'req-9',
        schema_name: 'workflow.request.v1',
        tags: ['run:parent', 'step:s1', 'reply-to:workflow:parent', 'other'],
        context: {
          workflow: 'wf',
          input: { n: 1 },
          depth: 2,
          parent: { run_id: 'parent', step: 's1', workflow: 'parent' },
        },
      }),
      def,
      { id: 'wf-def', version: 4 },
    );
    expect(message).toEqual({
      run_id: 'run-req-9',
      event: expect.objectContaining({
        type: 'start',
        request_id: 'req-9',
        workflow_version: 4,
        input: { n: 1 },
        depth: 2,
        reply_tags: ['run:parent', 'step:s1', 'reply-to:workflow:parent'],
      }),
    });
  });

  it('starts a run with the subscribed breadcrumb as input', () => {
    const message = readRunMessage(crumb({ id: 'j', schema_name: 'calc.job.v1', context: { a: 1 } }), def, {
      id: 'wf-def',
      version: 1,
    });
    expect(message).toMatchObject({
      run_id: 'run-j',
      event: { type: 'start', input: { a: 1 }, request_id: 'j' },
    });
  });

  it('reads each answer kind addressed to a run', () => {
    const read = (schema_name: string, context: Record<string, unknown>, created_by = 'tool:echo') =>
      readRunMessage(crumb({ id: 'a1', schema_name, tags: addressed, context, created_by }), def, {
        id: 'wf-def',
        version: 1,
      });
    expect(read('tool.response.v1', { request_id: 'r', status: 'success', output: 5 })).toEqual({
      run_id: 'run-1',
      event: {
        type: 'answer',
        id: 'a1',
        request_id: 'r',
        ok: true,
        output: 5,
        error: undefined,
        by: 'tool:echo',
      },
    });
    expect(read('tool.response.v1', { request_id: 'r', status: 'error', error: 'bad' })).toMatchObject({
      event: { ok: false, error: 'bad' },
    });
    expect(read('agent.response.v1', { request_id: 'r', status: 'success', text: 'hello' })).toMatchObject({
      event: { ok: true, output: 'hello' },
    });
    expect(read('agent.error.v1', { response_to: 'r', error: 'model down' })).toMatchObject({
      event: { request_id: 'r', ok: false, error: 'model down' },
    });
    expect(read('workflow.result.v1', { request_id: 'r', status: 'succeeded', output: [1] })).toMatchObject({
      event: { ok: true, output: [1] },
    });
    expect(
      read('workflow.error.v1', { request_id: 'r', status: 'cancelled', error: 'cancelled by user:x' }),
    ).toMatchObject({
      event: { ok: false, error: 'cancelled by user:x' },
    });
    expect(
      read('human.response.v1', { request_id: 'r', decision: 'approve', input: { ok: 1 } }, 'user:bob'),
    ).toMatchObject({
      event: { type: 'human', decision: 'approve', input: { ok: 1 }, by: 'user:bob' },
    });
    expect(
      read('workflow.control.v1', { run_id: 'run-2', action: 'retry', from_step: 'call' }),
    ).toMatchObject({
      run_id: 'run-2',
      event: { type: 'control', action: 'retry', from_step: 'call' },
    });
    expect(read('workflow.timer.v1', { timer_id: 't1' })).toMatchObject({
      event: { type: 'timer', id: 't1' },
    });
  });

  it('ignores what it cannot read, saying why', () => {
    expect(
      readRunMessage(crumb({ schema_name: 'workflow.request.v1', context: { workflow: 'other' } }), def, {
        id: 'wf-def',
        version: 1,
      }),
    ).toEqual({ ignored: 'request b1 names another workflow' });
    expect(
      readRunMessage(
        crumb({
          schema_name: 'human.response.v1',
          tags: addressed,
          context: { request_id: 'r', decision: 'maybe' },
        }),
        def,
        { id: 'wf-def', version: 1 },
      ),
    ).toMatchObject({ ignored: expect.stringContaining('malformed') });
    expect(
      readRunMessage(crumb({ schema_name: 'tool.response.v1', tags: ['reply-to:workflow:wf'] }), def, {
        id: 'wf-def',
        version: 1,
      }),
    ).toMatchObject({
      ignored: expect.stringContaining('no run: tag'),
    });
  });
});

describe('actionOf', () => {
  it('writes requests tagged with the run, the step and reply-to, and sets timers that fire as breadcrumbs', async () => {
    const h = new RunHarness(def);
    await h.start();
    const run = h.current;
    expect(actionOf(def, run, h.request('ask'))).toEqual({
      type: 'write',
      breadcrumb: {
        id: h.request('ask').id,
        schema_name: 'agent.request.v1',
        title: 'wf › ask: helper',
        tags: [`run:${run.run_id}`, 'step:ask', 'reply-to:workflow:wf'],
        context: {
          agent: 'helper',
          message: 'hi',
          mode: 'converse',
          request_id: h.request('ask').id,
          depth: 1,
          // The run's max_depth: an agent that orchestrates for this request goes no deeper.
          max_depth: 5,
        },
      },
    });
    await h.answer('ask');
    const sub = actionOf(def, h.current, h.request('sub'));
    expect(sub).toMatchObject({
      breadcrumb: {
        schema_name: 'workflow.request.v1',
        context: {
          workflow: 'child',
          input: { a: 1 },
          depth: 1,
          parent: { run_id: run.run_id, step: 'sub', workflow: 'wf' },
        },
      },
    });
    await h.answer('sub');
    expect(actionOf(def, h.current, h.request('approve'))).toMatchObject({
      breadcrumb: {
        schema_name: 'human.request.v1',
        context: { run_id: run.run_id, step: 'approve', prompt: 'ok?', input_schema: { type: 'object' } },
      },
    });
    await h.human('approve', 'approve', {});
    expect(actionOf(def, h.current, h.request('call'))).toMatchObject({
      breadcrumb: {
        schema_name: 'tool.request.v1',
        context: { tool: 'echo', input: { x: 1 }, requestedBy: 'workflow:wf' },
      },
    });
    const timer = h.openTimers()[0];
    if (timer === undefined) throw new Error('expected a timeout timer');
    expect(actionOf(def, h.current, timer)).toMatchObject({
      type: 'set_timer',
      at: '2026-01-01T00:01:00.000Z',
      breadcrumb: {
        id: timer.id,
        schema_name: 'workflow.timer.v1',
        context: { timer_id: timer.id, purpose: 'timeout' },
      },
    });
  });

  it("answers the request with a result tagged request:<id> and the request's reply tags", async () => {
    const h = new RunHarness(workflow({ steps: [{ id: 'a', tool: 'echo' }], output: '=steps.a' }));
    await h.start({}, { request_id: 'parent-req', reply_tags: ['run:p', 'step:s', 'reply-to:workflow:p'] });
    const done = await h.answer('a', 42);
    const result = done.effects[0];
    if (result === undefined) throw new Error('expected a result');
    expect(actionOf(h.definition, h.current, result)).toEqual({
      type: 'write',
      breadcrumb: {
        id: `${h.current.run_id}.result.1`,
        schema_name: 'workflow.result.v1',
        title: 'wf: succeeded',
        tags: ['request:parent-req', 'run:p', 'step:s', 'reply-to:workflow:p', 'workflow:wf'],
        context: {
          workflow_id: 'wf',
          run_id: h.current.run_id,
          request_id: 'parent-req',
          status: 'succeeded',
          output: 42,
        },
      },
    });
    expect(runBreadcrumb(h.current)).toMatchObject({
      id: h.current.run_id,
      schema_name: 'workflow.run.v1',
      tags: ['workflow:wf', `run:${h.current.run_id}`, 'run-status:succeeded', 'run-status:wf:succeeded'],
    });
  });
});
