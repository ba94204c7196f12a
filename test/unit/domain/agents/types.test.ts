import { describe, expect, it } from 'vitest';
import { AGENT_TYPE_SCHEMAS, AGENT_TYPES, TRANSPORT_KINDS } from '#shared/domain/agents/types.ts';
import { EXECUTOR_RUNNERS } from '#shared/topology.ts';

describe('agent types', () => {
  it('lists each type once, context first (an agent without a type is one)', () => {
    expect(new Set(AGENT_TYPES).size).toBe(AGENT_TYPES.length);
    expect(AGENT_TYPES[0]).toBe('context');
  });

  it('gives every type a runner the topology deploys, and each transport kind to one type', () => {
    for (const type of AGENT_TYPE_SCHEMAS) expect(EXECUTOR_RUNNERS).toContain(type.runner);
    expect(new Set(TRANSPORT_KINDS).size).toBe(TRANSPORT_KINDS.length);
  });
});
