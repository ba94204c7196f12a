import { describe, expect, it } from 'vitest';
import { agentSpec, outputTokenCap } from '#shared/domain/agent-spec.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { parseDefinition, triggerSelectorEntries } from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { parseYaml } from '#shared/domain/yaml.ts';

/*
 * Seed 004's examples ("The 5 Agent Types"), copied as written, each given an `agent_id` (every definition needs
 * its identity). `/* mapping *\/` comments are empty objects, as in the seed.
 */
const seedContext = {
  type: 'context',
  context: '# Golf Rules Expert\nYou are an expert in golf rules...',
  yaml: {
    agent_card: {
      modes: ['converse', 'plan', 'build'],
    },
  },
};
const seedTool = {
  type: 'tool',
  yaml: {
    tools: ['supabase/query-db', 'supabase/execute-sql'],
    tool_mode: 'sequential',
    agent_card: {
      modes: ['build'], // Usually no converse/plan - used by other agents
    },
  },
};
const seedApi = {
  type: 'api',
  transport: {
    kind: 'api',
    api: {
      endpoint: 'https://api.stripe.com/v1/charges',
      method: 'POST',
      authentication: { type: 'bearer' },
    },
  },
  yaml: {
    request_transform: {
      /* mapping */
    },
    response_transform: {
      /* mapping */
    },
  },
};
const seedExternal = {
  type: 'external',
  transport: {
    kind: 'external',
    external: {
      endpoint: 'https://partner.com/agent-to-agent/tasks',
      protocol: 'a2a',
      healthCheck: { endpoint: '/health' },
    },
  },
};
const seedFunction = {
  type: 'function',
  function_code: `
    async function handler(input, ctx) {
      // Custom logic
      return { result: ... };
    }
  `,
  transport: {
    kind: 'function',
    function: {
      timeout_ms: 20000,
    },
  },
};

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return [...error.issues];
    throw error;
  }
  throw new Error('expected a ValidationError');
}

describe('agent types (seed 004)', () => {
  it.each([
    ['context', seedContext],
    ['tool', seedTool],
    ['api', seedApi],
    ['external', seedExternal],
    ['function', seedFunction],
  ])('loads the seed example of a %s agent as written', (type, example) => {
    const parsed = validateDefinition('agent.def.v1', { agent_id: `${type}-agent`, ...example });
    expect(parsed.kind).toBe('agent');
    if (parsed.kind !== 'agent') return;
    expect(parsed.definition.type).toBe(type);
    expect(agentSpec(parsed.definition, { parseYaml }).type).toBe(type);
  });

  it('treats an agent without a type as a context agent, as before types existed', () => {
    const { definition } = parseDefinition('agent.def.v1', {
      agent_id: 'helper',
      subscriptions: { selectors: [{ schema_name: 'user.message.v1' }] },
    }) as { definition: Parameters<typeof agentSpec>[0] };
    expect(definition.type).toBe('context');
    expect(agentSpec(definition).type).toBe('context');
  });

  it('reads the yaml text: tools, transforms and the agent card', () => {
    const parsed = validateDefinition('agent.def.v1', {
      agent_id: 'db',
      type: 'tool',
      transport: { kind: 'mcp', mcp: { url: 'https://mcp.example.com/mcp' } },
      yaml: 'tools:\n  - query-db\n  - execute-sql\nextract_arguments: true\nagent_card:\n  modes: [build]\n',
    });
    if (parsed.kind !== 'agent') throw new Error('not an agent');
    const spec = agentSpec(parsed.definition, { parseYaml });
    expect(spec).toMatchObject({
      type: 'tool',
      tools: ['query-db', 'execute-sql'],
      extractArguments: true,
      mcp: { url: 'https://mcp.example.com/mcp', timeout_ms: 30000 },
      config: { agent_card: { modes: ['build'] } },
    });
  });

  it('names the line of a YAML syntax error', () => {
    const issues = issuesOf(() =>
      validateDefinition('agent.def.v1', { agent_id: 'a', type: 'tool', yaml: 'tools:\n  - a\n - b\n' }),
    );
    expect(issues).toEqual([
      { path: 'yaml', message: expect.stringMatching(/^not valid YAML: line 3, column 2: /) },
    ]);
  });

  it('names the path of a structure error inside the yaml', () => {
    const issues = issuesOf(() =>
      validateDefinition('agent.def.v1', {
        agent_id: 'a',
        type: 'tool',
        yaml: 'tools: [ok, 42]\nagent_card:\n  modes: [build, dance]\n',
      }),
    );
    expect(issues.map((i) => i.path).sort()).toEqual(['yaml.agent_card.modes[1]', 'yaml.tools[1]']);
  });

  it('says what each type is missing, with its path', () => {
    expect(issuesOf(() => validateDefinition('agent.def.v1', { agent_id: 'a', type: 'api' }))).toEqual([
      { path: 'transport', message: expect.stringContaining('transport: { kind: "api"') },
    ]);
    expect(
      issuesOf(() => validateDefinition('agent.def.v1', { agent_id: 'a', type: 'function' }))[0]?.path,
    ).toBe('function_code');
    expect(
      issuesOf(() => validateDefinition('agent.def.v1', { agent_id: 'a', type: 'external' }))[0]?.path,
    ).toBe('transport');
    expect(issuesOf(() => validateDefinition('agent.def.v1', { agent_id: 'a', type: 'tool' }))[0]?.path).toBe(
      'yaml.tools',
    );
    expect(
      issuesOf(() =>
        validateDefinition('agent.def.v1', {
          agent_id: 'a',
          type: 'api',
          transport: { kind: 'external', external: { endpoint: 'https://x.example' } },
        }),
      ),
    ).toEqual([
      { path: 'transport.kind', message: 'a api agent needs transport.kind "api", not "external"' },
    ]);
  });

  it('checks transport fields with their paths', () => {
    const issues = issuesOf(() =>
      validateDefinition('agent.def.v1', {
        agent_id: 'a',
        type: 'api',
        transport: {
          kind: 'api',
          api: {
            endpoint: 'ftp://x',
            method: 'FETCH',
            timeout_ms: 600000,
            authentication: { type: 'oauth' },
          },
        },
      }),
    );
    expect(issues.map((i) => i.path).sort()).toEqual([
      'transport.api.authentication.type',
      'transport.api.endpoint',
      'transport.api.method',
      'transport.api.timeout_ms',
    ]);
  });

  it('refuses credentials written as literal header values', () => {
    const issues = issuesOf(() =>
      validateDefinition('agent.def.v1', {
        agent_id: 'a',
        type: 'tool',
        yaml: { tools: ['x'] },
        transport: {
          kind: 'mcp',
          mcp: {
            url: 'https://m.example/mcp',
            headers: { Authorization: 'Bearer sk-123', Accept: 'application/json' },
          },
        },
      }),
    );
    expect(issues).toEqual([
      { path: 'transport.mcp.headers.Authorization', message: expect.stringContaining('secret_ref') },
    ]);
    expect(() =>
      validateDefinition('agent.def.v1', {
        agent_id: 'a',
        type: 'tool',
        yaml: { tools: ['x'] },
        transport: {
          kind: 'mcp',
          mcp: { url: 'https://m.example/mcp', headers: { Authorization: { secret_ref: 'MCP_TOKEN' } } },
        },
      }),
    ).not.toThrow();
  });

  it('reports a JSONata transform that does not compile, and a transform written twice', () => {
    const issues = issuesOf(() =>
      validateDefinition('agent.def.v1', {
        agent_id: 'a',
        type: 'api',
        transport: {
          kind: 'api',
          api: { endpoint: 'https://x.example/v1', request_transform: '{ "q": input.' },
        },
        yaml: 'request_transform: "input"\nresponse_transform:\n  total: "body.items[.price > ]"\n',
      }),
    );
    expect(issues.map((i) => i.path)).toEqual([
      'yaml.request_transform',
      'transport.api.request_transform',
      'yaml.response_transform.total',
    ]);
  });

  it('spells llm { provider, model } as the router reads it, with model winning', () => {
    const { definition } = parseDefinition('agent.def.v1', {
      agent_id: 'a',
      llm: { provider: 'bedrock', model: 'anthropic.claude-3-haiku', temperature: 0.2 },
    }) as { definition: Parameters<typeof agentSpec>[0] };
    expect(agentSpec(definition).llm).toEqual({
      model: 'bedrock/anthropic.claude-3-haiku',
      temperature: 0.2,
    });
  });

  it('triggers every agent by the agent.request.v1 naming it, with no subscriptions needed', () => {
    const parsed = parseDefinition('agent.def.v1', {
      agent_id: 'calc',
      type: 'function',
      function_code: 'x',
    });
    if (parsed.kind !== 'agent') throw new Error('not an agent');
    const selectors = triggerSelectorEntries('agent', parsed.definition).map((e) => e.selector);
    expect(selectors).toContainEqual(
      expect.objectContaining({
        schema_name: 'agent.request.v1',
        role: 'trigger',
        context_match: [{ path: '$.agent', op: 'eq', value: 'calc' }],
      }),
    );
  });
});

describe('outputTokenCap', () => {
  it("takes the lower of the definition's llm.max_tokens and a budget's cap, either absent", () => {
    expect(outputTokenCap(undefined)).toBeUndefined();
    expect(outputTokenCap(500)).toBe(500);
    expect(outputTokenCap(undefined, 120)).toBe(120);
    expect(outputTokenCap(500, 120)).toBe(120);
    expect(outputTokenCap(100, 120)).toBe(100);
  });

  it('is carried from llm.max_tokens into the spec every agent type reads', () => {
    const parsed = parseDefinition('agent.def.v1', { agent_id: 'a', llm: { max_tokens: 77 } });
    if (parsed.kind !== 'agent') throw new Error('not an agent');
    expect(agentSpec(parsed.definition).llm.maxTokens).toBe(77);
  });
});
