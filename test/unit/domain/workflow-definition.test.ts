import { describe, expect, it } from 'vitest';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { parseDefinition, triggerSelectors } from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { stepKind, type WorkflowDefinition } from '#shared/domain/workflow-definition.ts';
import { matchesSelector, type SelectorSubject } from '#shared/routing/compiler.ts';

function issuesOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return error.issues;
    throw error;
  }
  throw new Error('expected a ValidationError');
}

function workflow(context: Record<string, unknown>): WorkflowDefinition {
  const parsed = validateDefinition('workflow.def.v1', context);
  if (parsed.kind !== 'workflow') throw new Error('expected a workflow');
  return parsed.definition;
}

const approval = {
  workflow_id: 'approve-flow',
  input_schema: { type: 'object', required: ['order'], properties: { order: { type: 'string' } } },
  steps: [
    { id: 'lookup', tool: 'echo', input: { order: '=input.order' }, retry: { max_attempts: 3 } },
    {
      id: 'checks',
      parallel: [
        { id: 'stock', tool: 'echo', input: '=steps.lookup' },
        { id: 'credit', agent: 'credit-checker', message: '="check " & input.order', mode: 'plan' },
      ],
    },
    {
      id: 'lines',
      map: { items: '=[1,2,3]', step: { id: 'line', tool: 'echo', input: { n: '=item', i: '=index' } } },
    },
    { id: 'approve', human: { prompt: 'Ship it?', input_schema: { type: 'object' } }, timeout_seconds: 3600 },
    { id: 'cool_off', wait: { seconds: 30 } },
    { id: 'ship', workflow: 'shipping', input: { order: '=input.order' }, on_error: 'continue' },
  ],
  output: { shipped: '=steps.ship', approved_by: '=run.steps.approve.by' },
  limits: { max_steps: 50, max_llm_calls: 5 },
};

describe('workflow.def.v1', () => {
  it('reads every step kind and the workflow options, with defaults', () => {
    const def = workflow(approval);
    expect(def.steps.map(stepKind)).toEqual(['tool', 'parallel', 'map', 'human', 'wait', 'workflow']);
    expect(def.max_depth).toBe(5);
    expect(def.limits).toEqual({ max_steps: 50, max_llm_calls: 5 });
    expect(def.steps[0]?.retry).toEqual({ max_attempts: 3, backoff_seconds: 0 });
    expect(def.steps[0]?.on_error).toBe('fail');
    expect(def.output).toEqual(approval.output);
    expect(def.answer).toEqual({ schema_name: 'workflow.result.v1', tags: [] });
  });

  it('keeps loading a pre-engine workflow: its `output` names the answer schema', () => {
    const def = workflow({
      workflow_id: 'double-product',
      subscriptions: { selectors: [{ schema_name: 'calc.job.v1', role: 'trigger' }] },
      steps: [{ id: 'product', tool: 'calculator', input: { expression: '=trigger.a & "*" & trigger.b' } }],
      output: { schema_name: 'calc.result.v1', tags: ['job:1'] },
    });
    expect(def.answer).toEqual({ schema_name: 'calc.result.v1', tags: ['job:1'] });
    expect(def.output).toBeUndefined();
  });

  it('is triggered by requests naming it and by answers addressed to its runs, without subscriptions', () => {
    const def = workflow({ workflow_id: 'wf', steps: [{ id: 'a', tool: 'echo' }] });
    const triggers = (subject: SelectorSubject) =>
      triggerSelectors('workflow', def).some((s) => matchesSelector(s, subject));
    expect(triggers({ schema_name: 'workflow.request.v1', tags: [], context: { workflow: 'wf' } })).toBe(
      true,
    );
    expect(triggers({ schema_name: 'workflow.request.v1', tags: [], context: { workflow: 'other' } })).toBe(
      false,
    );
    expect(triggers({ schema_name: 'tool.response.v1', tags: ['run:r1', 'reply-to:workflow:wf'] })).toBe(
      true,
    );
    expect(triggers({ schema_name: 'tool.response.v1', tags: ['reply-to:workflow:other'] })).toBe(false);
  });

  describe('bad definitions name the path', () => {
    it('a step with no kind, or two', () => {
      const issues = issuesOf(() =>
        parseDefinition('workflow.def.v1', {
          workflow_id: 'w',
          steps: [{ id: 'a' }, { id: 'b', tool: 'echo', agent: 'x' }],
        }),
      );
      expect(issues).toEqual([
        { path: 'steps[0]', message: expect.stringMatching(/^expected one of tool, agent, workflow/) },
        { path: 'steps[1]', message: expect.stringMatching(/got tool and agent$/) },
      ]);
    });

    it('a duplicate id inside a parallel or a map', () => {
      const issues = issuesOf(() =>
        parseDefinition('workflow.def.v1', {
          workflow_id: 'w',
          steps: [
            { id: 'a', tool: 'echo' },
            { id: 'p', parallel: [{ id: 'a', tool: 'echo' }] },
            { id: 'm', map: { items: '=[1]', step: { id: 'p', tool: 'echo' } } },
          ],
        }),
      );
      expect(issues.map((i) => i.path)).toEqual(['steps[1].parallel[0].id', 'steps[2].map.step.id']);
    });

    it('agent fields on another kind, bad retry, timeout and concurrency', () => {
      const issues = issuesOf(() =>
        parseDefinition('workflow.def.v1', {
          workflow_id: 'w',
          steps: [
            { id: 'a', tool: 'echo', message: 'hi' },
            { id: 'b', tool: 'echo', retry: { max_attempts: 0 }, timeout_seconds: 1.5 },
            { id: 'c', map: { items: '=[]', step: { id: 'd', tool: 'echo' }, max_concurrency: 1000 } },
          ],
        }),
      );
      expect(issues.map((i) => i.path)).toEqual([
        'steps[1].retry.max_attempts',
        'steps[1].timeout_seconds',
        'steps[2].map.max_concurrency',
      ]);
      // Structure first: the agent-only check runs once the steps parse.
      const agentOnly = issuesOf(() =>
        parseDefinition('workflow.def.v1', {
          workflow_id: 'w',
          steps: [{ id: 'a', tool: 'echo', message: 'hi' }],
        }),
      );
      expect(agentOnly).toEqual([{ path: 'steps[0].message', message: 'only an agent step has "message"' }]);
    });

    it('a JSONata error anywhere: nested inputs, map items, prompts, messages, output', () => {
      const issues = issuesOf(() =>
        validateDefinition('workflow.def.v1', {
          workflow_id: 'w',
          steps: [
            { id: 'p', parallel: [{ id: 'a', agent: 'x', message: '=input.(' }] },
            { id: 'm', map: { items: 'input.[', step: { id: 'i', tool: 'echo', input: { v: '=item +' } } } },
            { id: 'h', human: { prompt: '=input.name &' } },
          ],
          output: { total: '=$sum(' },
        }),
      );
      expect(issues.map((i) => i.path)).toEqual([
        'steps[0].parallel[0].message',
        'steps[1].map.items',
        'steps[1].map.step.input.v',
        'steps[2].human.prompt',
        'output.total',
      ]);
      expect(issues[0]?.message).toMatch(/^not a valid JSONata expression/);
    });

    it('an input_schema that is not a usable JSON Schema', () => {
      const issues = issuesOf(() =>
        validateDefinition('workflow.def.v1', {
          workflow_id: 'w',
          input_schema: { type: 'objekt' },
          steps: [{ id: 'h', human: { prompt: 'ok?', input_schema: { $ref: '#/nowhere' } } }],
        }),
      );
      expect(issues.map((i) => i.path)).toEqual(['steps[0].human.input_schema', 'input_schema']);
      expect(issues[0]?.message).toMatch(/^not a valid JSON Schema: /);
    });

    it('an output that is neither an expression nor an object', () => {
      expect(
        issuesOf(() =>
          parseDefinition('workflow.def.v1', {
            workflow_id: 'w',
            steps: [{ id: 'a', tool: 'x' }],
            output: 3,
          }),
        ),
      ).toEqual([
        { path: 'output', message: 'expected a "=" JSONata expression or an object of expressions' },
      ]);
    });
  });
});
