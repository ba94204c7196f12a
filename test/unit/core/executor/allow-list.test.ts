import { describe, expect, it } from 'vitest';
import { orchestrationTargets } from '#shared/core/executor/allow-list.ts';
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
