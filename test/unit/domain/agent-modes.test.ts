import { describe, expect, it } from 'vitest';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { ValidationError } from '#shared/domain/errors.ts';

function issues(context: Record<string, unknown>): readonly { path: string; message: string }[] {
  try {
    validateDefinition('agent.def.v1', { agent_id: 'lead', ...context });
    return [];
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.issues;
  }
}

describe('modes, plans, deliverables and orchestration on an agent definition', () => {
  it('reads them from the definition or from its yaml, with defaults', () => {
    const fromYaml = validateDefinition('agent.def.v1', {
      agent_id: 'lead',
      yaml: 'agent_card:\n  modes: [plan]\nplan:\n  format: yaml\ndeliverable:\n  format: html\n  sections: [A]\n',
    });
    expect(fromYaml.spec).toMatchObject({
      modes: ['plan'],
      plan: { format: 'yaml' },
      deliverable: { format: 'html', type: 'lead', sections: ['A'] },
      orchestration: { defaultMode: 'sequential', maxDepth: 3, subAgentMode: 'build' },
    });
    const plain = validateDefinition('agent.def.v1', { agent_id: 'lead' });
    expect(plain.spec).toMatchObject({
      modes: ['converse', 'plan', 'build'],
      plan: { format: 'markdown' },
      deliverable: { format: 'markdown', type: 'lead' },
    });
  });

  it('refuses the same setting in both places, naming both', () => {
    expect(issues({ modes: ['build'], yaml: 'agent_card:\n  modes: [plan]\n' })).toEqual([
      { path: 'yaml.agent_card.modes', message: 'also set at modes: keep one' },
    ]);
  });

  it('refuses orchestration steps an agent cannot drive, and calling itself', () => {
    expect(
      issues({
        orchestration: {
          availableAgents: ['a', 'lead'],
          steps: [
            { id: 'w', wait: { seconds: 5 } },
            { id: 'x', agent: 'b', timeout_seconds: 10 },
            { id: 'final', agent: 'a' },
          ],
        },
      }),
    ).toEqual([
      {
        path: 'orchestration.steps.0.wait',
        message: 'an orchestration has no wait steps (they need a timer)',
      },
      { path: 'orchestration.steps.1.timeout_seconds', message: 'an orchestration step has no timeout' },
      { path: 'orchestration.steps.1.agent', message: '"b" is not in availableAgents (a, lead)' },
      { path: 'orchestration.steps.2.id', message: '"final" is reserved' },
      { path: 'orchestration.availableAgents', message: 'an agent cannot call itself as a sub-agent' },
    ]);
  });

  it('checks the plan and deliverable schemas when the definition is written', () => {
    expect(issues({ plan: { format: 'json', schema: { type: 'nope' } } })).toEqual([
      { path: 'plan.schema', message: expect.stringMatching(/^not a valid JSON Schema/) },
    ]);
  });
});
