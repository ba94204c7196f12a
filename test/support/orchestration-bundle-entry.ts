/**
 * Entry for the bundled orchestration test (`test/infra/orchestration-bundle.test.ts`): bundled as
 * executor-agent-mcp is (with the MCP SDK loaded first, whose zod schemas broke a deferred import before), it asks
 * an agent to orchestrate — which loads the orchestration module through its `import()` — and prints the run it
 * started and what it wrote, as JSON.
 */

import { SdkMcpClient } from '#shared/adapters/mcp/mcp-client.ts';
import { createAgentKind } from '#shared/core/agents/agent-kind.ts';
import { parseDefinition } from '#shared/domain/definitions.ts';
import { parseYaml } from '#shared/domain/yaml.ts';
import { InMemoryBreadcrumbStore } from './memory/breadcrumb-store.ts';

new SdkMcpClient({ fetch: globalThis.fetch });
const store = new InMemoryBreadcrumbStore();
const clock = { now: () => new Date('2026-01-01T00:00:00Z') };
const parsed = parseDefinition('agent.def.v1', {
  agent_id: 'lead',
  orchestration: { steps: [{ id: 'ask_b', agent: 'b' }], checkpoints: [{ prompt: 'ok?' }] },
});
if (parsed.kind !== 'agent') throw new Error('expected an agent');
// The type's own work is never reached: starting the run only asks the sub-agent.
const context = {
  type: 'context' as const,
  run: async (): Promise<never> => {
    throw new Error('not reached');
  },
};
const kind = createAgentKind({ types: { context }, store, clock, parseYaml });
const trigger = {
  id: 'req-1',
  version: 1,
  workspace: 'ws',
  schema_name: 'agent.request.v1',
  title: 'ask',
  tags: [],
  context: { agent: 'lead', message: 'go', orchestrate: true, mode: 'build' },
  created_by: 'user:u',
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
};
const result = await kind.execute({
  definition: parsed.definition,
  definitionRef: {
    id: 'agent-lead',
    version: 1,
    workspace: 'ws',
    kind: 'agent',
    schema_name: 'agent.def.v1',
  },
  principal: 'agent:lead',
  trigger,
  context: { trigger: trigger.context },
  causation: { caused_by: 'req-1@1', thread: 'req-1', hop: 1 },
  signal: AbortSignal.timeout(10_000),
});
const run = await store.get('ws', 'run-req-1');
process.stdout.write(
  JSON.stringify({
    run: {
      status: (run.context as { status: string }).status,
      workflow: (run.context as { workflow: string }).workflow,
    },
    outputs: result.outputs.map((o) => [o.schema_name, (o.context as { message?: unknown }).message ?? null]),
  }),
);
