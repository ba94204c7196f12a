import { describe, expect, it } from 'vitest';
import { grantsOf, orchestrationTargets } from '#shared/core/executor/allow-list.ts';
import { protocolRefusal } from '#shared/domain/protocol.ts';

describe('protocolRefusal', () => {
  it('refuses every definition an agent could write, schedules included, and lets ordinary records through', () => {
    for (const schema of [
      'agent.def.v1',
      'tool.def.v1',
      'workflow.def.v1',
      'schedule.def.v1',
      'custom.def.v2',
    ]) {
      expect(protocolRefusal(schema, []), schema).toMatch(/does not write definitions/);
    }
    expect(protocolRefusal('system.loop_stopped.v1', [])).toMatch(
      /does not write definitions or system records/,
    );
    expect(protocolRefusal('agent.note.v1', ['x'])).toBeUndefined();
  });
});

describe('orchestrationTargets', () => {
  it('grants the agents and workflows of steps nested in parallel branches and map items, through the step kinds', () => {
    const targets = orchestrationTargets({
      availableAgents: ['helper'],
      steps: [
        {
          id: 'p',
          parallel: [
            { id: 'a', agent: 'writer' },
            { id: 'b', workflow: 'review' },
          ],
        },
        { id: 'm', map: { items: '=$.input.items', step: { id: 'i', agent: 'summarizer' } } },
      ],
    } as never);
    expect(targets.agents.sort()).toEqual(['helper', 'summarizer', 'writer']);
    expect(targets.workflows).toEqual(['review']);
  });
});

describe('pinned versions', () => {
  const noTools = { list: async () => ({ items: [], next_cursor: null }) } as never;

  it('grants a pinned step’s agent by its name', () => {
    const targets = orchestrationTargets({ steps: [{ id: 'a', agent: 'writer@2' }] } as never);
    expect(targets.agents).toEqual(['writer']);
  });

  it('refuses an agent’s own request that names a definition_version: only a workflow step pins', async () => {
    const grants = grantsOf({ agent_id: 'me', tools: ['calc'] }, undefined, 'ws', noTools);
    expect(
      await grants.refusal({ schema_name: 'tool.request.v1', context: { tool: 'calc', input: {} } }),
    ).toBe(undefined);
    expect(
      await grants.refusal({
        schema_name: 'tool.request.v1',
        context: { tool: 'calc', input: {}, definition_version: 1 },
      }),
    ).toMatch(/cannot name a definition_version/);
  });
});
