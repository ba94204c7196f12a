import { describe, expect, it } from 'vitest';
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
