/** Builds the AgentRun a type receives, for unit tests of the agent types. */
import type { AgentRun, AgentTask } from '#shared/core/agents/contract.ts';
import type { AgentSpec } from '#shared/domain/agent-spec.ts';
import { type AgentDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { silentLog } from '#shared/ports/log.ts';

export function agentRun<S extends AgentSpec>(
  spec: S,
  task: Partial<AgentTask> = {},
  definition: Partial<Record<string, unknown>> = {},
): AgentRun<S> {
  const parsed = parseDefinition('agent.def.v1', { agent_id: 'test-agent', type: spec.type, ...definition });
  const def = parsed.definition as AgentDefinition;
  const trigger = {
    id: 'trigger-1',
    version: 1,
    workspace: 'ws-test',
    schema_name: 'agent.request.v1',
    title: 'request',
    tags: [],
    context: {},
    created_by: 'user:test',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
  };
  return {
    spec,
    definition: def,
    task: { requestId: 'req-1', correlationTags: [], depth: 0, ...task },
    workspace: 'ws-test',
    principal: 'agent:test-agent',
    execution: {
      definition: def,
      definitionRef: {
        id: 'def-1',
        version: 1,
        workspace: 'ws-test',
        kind: 'agent',
        schema_name: 'agent.def.v1',
      },
      principal: 'agent:test-agent',
      trigger: trigger as unknown as AgentRun['execution']['trigger'],
      context: {},
      causation: { caused_by: 'trigger-1@1', thread: 'trigger-1', hop: 1 },
      signal: new AbortController().signal,
    },
    signal: new AbortController().signal,
    log: silentLog,
  };
}
