/**
 * The demo workspace `npm start` seeds: a chat agent, its context builder, and a `tool.def.v1` per built-in tool.
 *
 *   user.message.v1 ──▶ context builder (context.config.v1, consumer chat-assistant)
 *                          └─▶ agent.context.v1 tagged consumer:chat-assistant ──▶ agent chat-assistant
 *                                 └─▶ tool.request.v1 calculator ──▶ tool ──▶ tool.response.v1 ──▶ agent
 *                                        └─▶ agent.response.v1 tagged thread:<user message id>
 *
 * And an orchestration: `launch-lead`, asked to build with `orchestrate: true`, plans calls of `market-research`
 * and `competitor-data` (the offline model plans every available agent), runs them in parallel as a workflow run,
 * waits at the `approve` checkpoint, and after `crumbs runs approve` writes its `launch-brief` deliverable.
 *
 * The agents use the offline model unless `CRUMBS_DEMO_MODEL` names a real one (e.g.
 * `openrouter/openai/gpt-4o-mini`). Ids are fixed, so seeding again changes nothing unless the definitions changed
 * (then they are updated in place).
 */
import { type CreateBreadcrumbInput, CreateBreadcrumbSchema, checksumOf } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { builtinTools } from '#shared/tools/builtins.ts';
import { ENV } from '#shared/topology.ts';

export const DEMO_WORKSPACE = 'demo';
export const DEMO_AGENT_ID = 'chat-assistant';
export const DEMO_OFFLINE_MODEL = 'offline/crumbs';
const PRINCIPAL = 'system:demo';

export interface SeededDefinition {
  id: string;
  schema_name: string;
  outcome: 'created' | 'updated' | 'unchanged';
}

export function demoDefinitions(
  env: NodeJS.ProcessEnv = process.env,
): { id: string; input: CreateBreadcrumbInput }[] {
  const model = env[ENV.demoModel]?.trim() || DEMO_OFFLINE_MODEL;
  const agent = {
    id: `demo-agent-${DEMO_AGENT_ID}`,
    input: {
      schema_name: 'agent.def.v1',
      title: 'Demo chat assistant',
      tags: ['agent:definition', 'demo'],
      context: {
        agent_id: DEMO_AGENT_ID,
        description: 'Answers chat messages; uses the calculator for arithmetic.',
        system_prompt:
          'You are the crumbs demo assistant. Answer briefly. For any arithmetic, call the calculator tool ' +
          'and give the result it returns.',
        model,
        temperature: 0.2,
        tools: ['calculator'],
        max_tool_rounds: 4,
        subscriptions: {
          selectors: [
            {
              comment: 'Pre-built context from the context builder (seed 003)',
              schema_name: 'agent.context.v1',
              all_tags: [`consumer:${DEMO_AGENT_ID}`],
            },
            {
              comment: 'Tool responses to this agent’s own requests: the conversation continues',
              schema_name: 'tool.response.v1',
              role: 'trigger',
              context_match: [{ path: '$.requestedBy', op: 'eq', value: DEMO_AGENT_ID }],
            },
          ],
        },
      },
    },
  };
  const contextConfig = {
    id: `demo-context-${DEMO_AGENT_ID}`,
    input: {
      schema_name: 'context.config.v1',
      title: `Context for ${DEMO_AGENT_ID}`,
      tags: ['context:config', 'demo'],
      context: {
        consumer_id: DEMO_AGENT_ID,
        update_triggers: [{ schema_name: 'user.message.v1', all_tags: ['user:message'] }],
        sources: [
          { schema_name: 'user.message.v1', method: 'recent', limit: 5, key: 'chat_history' },
          { schema_name: 'agent.response.v1', method: 'recent', limit: 5, key: 'agent_responses' },
          { schema_name: 'user.message.v1', method: 'vector', nn: 3, key: 'related_messages' },
        ],
        output: { schema_name: 'agent.context.v1', tags: ['agent:context', `consumer:${DEMO_AGENT_ID}`] },
        formatting: { max_tokens: 2000 },
      },
    },
  };
  const tools = builtinTools.map((tool) => ({
    id: `demo-tool-${tool.name.replace(/[^A-Za-z0-9_-]/g, '-')}`,
    input: {
      schema_name: 'tool.def.v1',
      title: `Tool ${tool.name}`,
      tags: ['tool:definition', 'demo'],
      context: {
        name: tool.name,
        description: tool.description,
        input_schema: { type: 'object', ...tool.inputSchema },
        implementation: tool.name,
      },
    },
  }));
  return [...tools, contextConfig, agent, ...orchestrationDemo(model)];
}

/** The orchestrating agent of the demo and the two sub-agents it plans (see the header). */
export const DEMO_ORCHESTRATOR_ID = 'launch-lead';

function orchestrationDemo(model: string): { id: string; input: CreateBreadcrumbInput }[] {
  const agent = (agentId: string, title: string, context: Record<string, unknown>) => ({
    id: `demo-agent-${agentId}`,
    input: {
      schema_name: 'agent.def.v1',
      title,
      tags: ['agent:definition', 'demo'],
      context: { agent_id: agentId, model, ...context },
    },
  });
  return [
    agent('market-research', 'Demo sub-agent: market research', {
      description: 'Sizes the market for a launch.',
      system_prompt: 'You research markets. Answer with the size and the main segments.',
      modes: ['build'],
      deliverable: { format: 'markdown', type: 'market-notes' },
    }),
    agent('competitor-data', 'Demo sub-agent: competitor data', {
      description: 'Lists competitors and their prices.',
      system_prompt: 'You know competitors. Answer with a table of competitors and prices.',
      modes: ['build'],
      deliverable: { format: 'json', type: 'competitors', schema: competitorsSchema },
    }),
    agent(DEMO_ORCHESTRATOR_ID, 'Demo orchestrator: launch lead', {
      description: 'Writes a launch brief from market research and competitor data, after a person approves.',
      system_prompt: 'You lead product launches. Write the brief from what your sub-agents found.',
      yaml: [
        'agent_card:',
        '  modes: [converse, plan, build]',
        'orchestration:',
        '  availableAgents: [market-research, competitor-data]',
        '  defaultMode: parallel',
        '  maxDepth: 2',
        '  checkpoints:',
        '    - id: approve',
        '      prompt: Publish the launch brief from these findings?',
        'deliverable:',
        '  format: markdown',
        '  type: launch-brief',
        '  sections: [Market, Competition, Recommendation]',
      ].join('\n'),
    }),
  ];
}

const competitorsSchema = {
  type: 'object',
  required: ['competitors'],
  properties: {
    competitors: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['name', 'price'],
        properties: { name: { type: 'string', minLength: 1 }, price: { type: 'number', minimum: 0 } },
      },
    },
  },
};

/** Writes the demo definitions into `workspace`; idempotent. */
export async function seedDemo(
  store: BreadcrumbStore,
  workspace: string = DEMO_WORKSPACE,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SeededDefinition[]> {
  const results: SeededDefinition[] = [];
  for (const { id, input } of demoDefinitions(env)) {
    const parsed = CreateBreadcrumbSchema.parse(input);
    let outcome: SeededDefinition['outcome'];
    try {
      const current = await store.get(workspace, id);
      if (current.checksum === checksumOf(parsed.context) && current.title === parsed.title) {
        outcome = 'unchanged';
      } else {
        await store.update(
          workspace,
          id,
          { title: parsed.title, tags: parsed.tags, context: parsed.context },
          { principal: PRINCIPAL },
        );
        outcome = 'updated';
      }
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const { replayed } = await store.create(workspace, parsed, { principal: PRINCIPAL, id });
      outcome = replayed ? 'unchanged' : 'created';
    }
    results.push({ id, schema_name: parsed.schema_name, outcome });
  }
  return results;
}
