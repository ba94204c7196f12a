import { describe, expect, it } from 'vitest';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import {
  contextSelectors,
  definitionName,
  definitionPrincipal,
  parseDefinition,
  triggerSelectorEntries,
  triggerSelectors,
} from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { seed002Breadcrumb } from '../../support/seeds.ts';

/*
 * The definition examples of the seeds (/work/shared/seeds), copied verbatim. JSON examples with `//` comments are
 * valid object literals, so they are pasted as is; seed 003's diagram arrows ("← context-builder subscribes!")
 * are prose, not content, and are the only thing removed. Examples that show only the `subscriptions` of an
 * agent are parsed as an agent with an id added, since every definition needs its identity.
 */

// seed 000, "Default Behavior"
const seed000Default = {
  subscriptions: {
    selectors: [
      { schema_name: 'agent.context.v1' }, // No role specified
    ],
  },
};

// seed 000, "New Explicit Behavior"
const seed000Explicit = {
  subscriptions: {
    selectors: [
      {
        schema_name: 'browser.page.context.v1',
        role: 'context', // Explicit!
      },
    ],
  },
};

// seed 000, "Example: Browser Context Working"
const seed000Browser = {
  subscriptions: {
    selectors: [
      {
        schema_name: 'agent.context.v1',
        role: 'trigger',
      },
      {
        schema_name: 'browser.page.context.v1',
        role: 'context', // ✅ Just add this!
      },
    ],
  },
};

// seed 001, "Agent Subscriptions (Example)"
const seed001Agent = {
  agent_id: 'default-chat-assistant',
  subscriptions: {
    selectors: [
      {
        schema_name: 'user.message.v1',
        role: 'trigger', // SSE event triggers processing
        fetch: 'event_data', // Use the trigger event itself
      },
      {
        schema_name: 'browser.page.context.v1',
        role: 'context', // Fetch when triggered
        fetch: 'latest', // Get latest from DB
      },
      {
        schema_name: 'tool.catalog.v1',
        role: 'context',
        fetch: 'latest',
      },
      {
        schema_name: 'agent.context.v1',
        role: 'trigger', // Pre-built context ready!
        fetch: 'event_data',
      },
    ],
  },
};

// seed 001, "Tool Subscriptions (Example)"
const seed001Tool = {
  name: 'browser-context-capture',
  subscriptions: {
    selectors: [
      {
        schema_name: 'tool.request.v1',
        role: 'trigger', // Tool invocation
        context_match: [{ path: '$.tool', op: 'eq', value: 'browser-context-capture' }],
      },
      {
        schema_name: 'browser.navigation.v1',
        role: 'trigger', // Auto-trigger on navigation
        fetch: 'event_data',
      },
      {
        schema_name: 'browser.page.context.v1',
        role: 'context', // Current browser state
        fetch: 'latest',
      },
    ],
  },
};

// seed 001, "Update tool definitions"
const seed001ContextBuilderTool = {
  name: 'context-builder',
  subscriptions: {
    selectors: [
      {
        schema_name: 'user.message.v1',
        role: 'trigger', // Run when user messages arrive
      },
    ],
  },
};

// seed 001, "context-builder Tool" (the `subscriptions` property of the tool, in code)
const seed001ContextBuilderSubscriptions = {
  selectors: [
    {
      schema_name: 'user.message.v1',
      any_tags: ['user:message'],
    },
  ],
};

// seed 001, "Example for Agent"
const seed001AgentExplicit = {
  subscriptions: {
    selectors: [
      {
        schema_name: 'user.message.v1',
        role: 'trigger',
        fetch: { method: 'event_data' },
      },
      {
        schema_name: 'browser.page.context.v1',
        role: 'context',
        fetch: { method: 'latest', limit: 1 },
      },
    ],
  },
};

// seed 001, "Example for Tool"
const seed001WebAnalyzer = {
  name: 'web-analyzer',
  subscriptions: {
    selectors: [
      {
        schema_name: 'tool.request.v1',
        context_match: [{ path: '$.tool', op: 'eq', value: 'web-analyzer' }],
        role: 'trigger',
        fetch: { method: 'event_data' },
      },
      {
        schema_name: 'browser.page.context.v1',
        role: 'context',
        fetch: { method: 'latest' },
      },
    ],
  },
};

// seed 001, "Example: Browser-aware tool"
const seed001SmartSearch = {
  name: 'smart-search',
  description: 'Searches based on current page context',
  subscriptions: {
    selectors: [
      {
        schema_name: 'tool.request.v1',
        context_match: [{ path: '$.tool', op: 'eq', value: 'smart-search' }],
        role: 'trigger',
      },
      {
        schema_name: 'browser.page.context.v1',
        role: 'context', // ← Tool can access browser context!
      },
    ],
  },
};

// seed 002, "Agent Definition Schema" (the breadcrumb; its `context` is the definition)

// seed 003, "Agent Definition (Final)"
const seed003Agent = {
  subscriptions: {
    selectors: [
      {
        comment: 'Agent subscribes to PRE-BUILT context only',
        schema_name: 'agent.context.v1',
        all_tags: ['consumer:default-chat-assistant'],
      },
      {
        comment: 'Tool responses for follow-up',
        schema_name: 'tool.response.v1',
        context_match: [
          {
            path: '$.requestedBy',
            op: 'eq',
            value: 'default-chat-assistant',
          },
        ],
      },
    ],
  },
};

// seed 003, "Context Config (Shows the Bridge)"
const seed003ContextConfig = {
  schema_name: 'context.config.v1',
  context: {
    consumer_id: 'default-chat-assistant',

    update_triggers: [
      {
        schema_name: 'user.message.v1',
        any_tags: ['workspace:agents'],
      },
    ],

    output: {
      schema_name: 'agent.context.v1',
      tags: ['agent:context', 'consumer:default-chat-assistant'],
    },
  },
};

const withId = (fragment: object, agent_id = 'seed-fragment') => ({ agent_id, ...fragment });

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return [...(error as ValidationError).issues];
  }
  throw new Error('expected a ValidationError');
}

describe('parseDefinition', () => {
  describe('seed examples', () => {
    const cases: [string, string, unknown][] = [
      ['000 default behavior', 'agent.def.v1', withId(seed000Default)],
      ['000 explicit behavior', 'agent.def.v1', withId(seed000Explicit)],
      ['000 browser context', 'agent.def.v1', withId(seed000Browser)],
      ['001 agent subscriptions', 'agent.def.v1', seed001Agent],
      ['001 tool subscriptions', 'tool.def.v1', seed001Tool],
      ['001 context-builder tool', 'tool.def.v1', seed001ContextBuilderTool],
      [
        '001 context-builder tool (code)',
        'tool.def.v1',
        { name: 'context-builder', subscriptions: seed001ContextBuilderSubscriptions },
      ],
      ['001 example for agent', 'agent.def.v1', withId(seed001AgentExplicit)],
      ['001 example for tool', 'tool.def.v1', seed001WebAnalyzer],
      ['001 browser-aware tool', 'tool.def.v1', seed001SmartSearch],
      ['002 agent.definition.v1', seed002Breadcrumb.schema_name, seed002Breadcrumb.context],
      ['003 agent definition', 'agent.def.v1', withId(seed003Agent, 'default-chat-assistant')],
      ['003 context config', seed003ContextConfig.schema_name, seed003ContextConfig.context],
    ];

    it.each(cases)('loads seed %s unchanged', (_, schemaName, context) => {
      const snapshot = JSON.stringify(context);
      expect(() => parseDefinition(schemaName, context)).not.toThrow();
      expect(JSON.stringify(context)).toBe(snapshot);
    });
  });

  it('normalizes bare fetch methods and keeps explicit roles (seed 001 agent)', () => {
    const { kind, definition } = parseDefinition('agent.def.v1', seed001Agent);
    expect(kind).toBe('agent');
    if (kind !== 'agent') return;
    expect(definition.subscriptions.selectors[0]).toEqual({
      schema_name: 'user.message.v1',
      role: 'trigger',
      fetch: { method: 'event_data' },
    });
    expect(definition.hop_limit).toBe(16);
    expect(definition.max_tool_rounds).toBe(8);
    expect(triggerSelectors('agent', definition).map((s) => s.schema_name)).toEqual([
      'user.message.v1',
      'agent.context.v1',
      // Every agent continues on the answers to its own tool requests, answers the requests naming it, and
      // drives its orchestration runs (what is tagged reply-to:agent:<id>, any schema).
      'tool.response.v1',
      'agent.request.v1',
      undefined,
    ]);
    expect(contextSelectors('agent', definition).map((s) => s.schema_name)).toEqual([
      'browser.page.context.v1',
      'tool.catalog.v1',
    ]);
  });

  it('infers roles as the seeds did, and reads the tool.response.v1 follow-up as the continuation trigger (seed 003 agent)', () => {
    const parsed = parseDefinition('agent.def.v1', withId(seed003Agent, 'default-chat-assistant'));
    if (parsed.kind !== 'agent') throw new Error('expected an agent');
    expect(triggerSelectors('agent', parsed.definition).map((s) => s.schema_name)).toEqual([
      'agent.context.v1',
      'tool.response.v1',
      'agent.request.v1',
      undefined,
    ]);
    // Seed 003's own follow-up selector is that trigger: it is not added twice, nor fetched as context.
    expect(triggerSelectorEntries('agent', parsed.definition).map((e) => e.path)).toEqual([
      'subscriptions.selectors[0]',
      'subscriptions.selectors[1]',
      'agent_id',
      'agent_id',
    ]);
    expect(contextSelectors('agent', parsed.definition)).toEqual([]);
  });

  it('turns seed 002 agent.definition.v1 into the agent shape, its triggers staying triggers', () => {
    const parsed = parseDefinition('agent.definition.v1', seed002Breadcrumb.context);
    if (parsed.kind !== 'agent') throw new Error('expected an agent');
    const agent = parsed.definition;
    expect(agent.agent_id).toBe('file-manager');
    expect(agent.model).toBe('gpt-4');
    expect(agent.system_prompt).toMatch(/^You are a helpful file management assistant/);
    expect(agent.response_schema).toMatchObject({ required: ['response_text'] });
    expect(agent.description).toBe('Helps users manage their stored files');
    expect(triggerSelectors('agent', agent)).toEqual([
      {
        any_tags: ['user:message', 'chat:input'],
        context_match: [{ path: '$.content', op: 'contains_any', value: ['file', 'list', 'javascript'] }],
        role: 'trigger',
      },
      {
        schema_name: 'tool.response.v1',
        role: 'trigger',
        context_match: [{ path: '$.requestedBy', op: 'eq', value: 'file-manager' }],
      },
      {
        schema_name: 'agent.request.v1',
        role: 'trigger',
        context_match: [{ path: '$.agent', op: 'eq', value: 'file-manager' }],
      },
      { any_tags: ['reply-to:agent:file-manager'], role: 'trigger' },
    ]);
    expect(definitionPrincipal('agent', agent)).toBe('agent:file-manager');
  });

  it('gives a tool without trigger selectors the default tool.request.v1 trigger', () => {
    const parsed = parseDefinition('tool.def.v1', { name: 'echo', description: 'Echoes its input' });
    if (parsed.kind !== 'tool') throw new Error('expected a tool');
    expect(parsed.definition.implementation).toBe('echo');
    expect(triggerSelectors('tool', parsed.definition)).toEqual([
      { schema_name: 'tool.request.v1', context_match: [{ path: '$.tool', op: 'eq', value: 'echo' }] },
    ]);
    expect(contextSelectors('tool', parsed.definition)).toEqual([]);
  });

  it("uses a tool's own trigger selectors when it has them (seed 001 tool)", () => {
    const parsed = parseDefinition('tool.def.v1', seed001Tool);
    if (parsed.kind !== 'tool') throw new Error('expected a tool');
    expect(triggerSelectorEntries('tool', parsed.definition).map((e) => e.path)).toEqual([
      'subscriptions.selectors[0]',
      'subscriptions.selectors[1]',
    ]);
    expect(definitionPrincipal('tool', parsed.definition)).toBe('tool:browser-context-capture');
  });

  it('reads a context config: update_triggers trigger it, sources are its context (seed 003)', () => {
    const parsed = parseDefinition('context.config.v1', seed003ContextConfig.context);
    if (parsed.kind !== 'context-builder') throw new Error('expected a context builder');
    expect(definitionName(parsed.definition)).toBe('default-chat-assistant');
    expect(definitionPrincipal('context-builder', parsed.definition)).toBe(
      'context-builder:default-chat-assistant',
    );
    expect(triggerSelectors('context-builder', parsed.definition)).toEqual([
      { schema_name: 'user.message.v1', any_tags: ['workspace:agents'] },
    ]);
    expect(parsed.definition.sources).toEqual([]);
  });

  it('turns context config sources into context selectors', () => {
    const parsed = parseDefinition('context.config.v1', {
      ...seed003ContextConfig.context,
      sources: [
        { schema_name: 'user.message.v1', method: 'vector', nn: 5, key: 'chat_history' },
        { method: 'tagged', any_tags: ['tool:response'], limit: 3 },
      ],
    });
    if (parsed.kind !== 'context-builder') throw new Error('expected a context builder');
    expect(contextSelectors('context-builder', parsed.definition)).toEqual([
      {
        schema_name: 'user.message.v1',
        key: 'chat_history',
        role: 'context',
        fetch: { method: 'vector', nn: 5 },
      },
      { any_tags: ['tool:response'], role: 'context', fetch: { method: 'recent', limit: 3 } },
    ]);
  });

  it('reads a workflow with JSONata step inputs', () => {
    const parsed = parseDefinition('workflow.def.v1', {
      workflow_id: 'summarize-page',
      subscriptions: { selectors: [{ schema_name: 'browser.navigation.v1', role: 'trigger' }] },
      steps: [
        { id: 'fetch', tool: 'http', input: { url: '=trigger.context.url', method: 'GET' } },
        {
          id: 'store',
          tool: 'breadcrumb.create',
          input: { body: '=steps.fetch.output' },
          when: 'steps.fetch.ok',
        },
      ],
      output: { schema_name: 'page.summary.v1', tags: ['summary'] },
    });
    if (parsed.kind !== 'workflow') throw new Error('expected a workflow');
    expect(definitionPrincipal('workflow', parsed.definition)).toBe('workflow:summarize-page');
    // Its own subscription, plus the defaults every workflow has: requests naming it and its runs' answers.
    expect(triggerSelectors('workflow', parsed.definition).map((s) => s.schema_name ?? s.any_tags)).toEqual([
      'browser.navigation.v1',
      'workflow.request.v1',
      ['reply-to:workflow:summarize-page'],
    ]);
  });

  describe('bad definitions', () => {
    it('names the exact field of a bad selector op', () => {
      const bad = structuredClone(seed003Agent) as {
        subscriptions: { selectors: Record<string, unknown>[] };
      };
      bad.subscriptions.selectors[1] = {
        schema_name: 'tool.response.v1',
        context_match: [{ path: '$.requestedBy', op: 'equals', value: 'x' }],
      };
      const issues = issuesOf(() => parseDefinition('agent.def.v1', withId(bad)));
      expect(issues).toHaveLength(1);
      expect(issues[0]?.path).toBe('subscriptions.selectors[1].context_match[0].op');
    });

    it('names the field of a bad value inside an old-form trigger', () => {
      const bad = structuredClone(seed002Breadcrumb.context) as Record<string, unknown>;
      bad.triggers = [
        { selector: { context_match: [{ path: '$.content', op: 'contains_any', value: 'file' }] } },
      ];
      const issues = issuesOf(() => parseDefinition('agent.definition.v1', bad));
      expect(issues[0]?.path).toBe('triggers[0].selector.context_match[0].value');
    });

    it('requires the identity field', () => {
      expect(issuesOf(() => parseDefinition('agent.def.v1', seed003Agent)).map((i) => i.path)).toEqual([
        'agent_id',
      ]);
      expect(issuesOf(() => parseDefinition('tool.def.v1', { description: 'x' })).map((i) => i.path)).toEqual(
        ['name'],
      );
    });

    it('refuses a name that cannot be a principal', () => {
      expect(issuesOf(() => parseDefinition('tool.def.v1', { name: 'two words' }))[0]?.path).toBe('name');
    });

    it("names a tool's bad MCP annotations, and keeps good ones", () => {
      expect(
        issuesOf(() => parseDefinition('tool.def.v1', { name: 'x', annotations: { read_only: 'yes' } }))[0]
          ?.path,
      ).toBe('annotations.read_only');
      expect(
        issuesOf(() => parseDefinition('tool.def.v1', { name: 'x', annotations: { readOnly: true } }))[0]
          ?.path,
      ).toMatch(/^annotations/);
      const parsed = parseDefinition('tool.def.v1', { name: 'x', annotations: { destructive: true } });
      expect(parsed.definition).toMatchObject({ annotations: { destructive: true } });
    });

    it("names an agent's bad a2a setting, and keeps good ones", () => {
      expect(issuesOf(() => parseDefinition('agent.def.v1', { agent_id: 'x', a2a: true }))[0]?.path).toBe(
        'a2a',
      );
      expect(
        issuesOf(() => parseDefinition('agent.def.v1', { agent_id: 'x', a2a: { public: true } }))[0]?.path,
      ).toMatch(/^a2a/);
      expect(parseDefinition('agent.def.v1', { agent_id: 'x', a2a: false }).definition).toMatchObject({
        a2a: false,
      });
    });

    it('refuses an unknown definition schema', () => {
      expect(issuesOf(() => parseDefinition('agent.v2', {}))[0]?.path).toBe('schema_name');
    });

    it('refuses a workflow whose step ids repeat', () => {
      const issues = issuesOf(() =>
        parseDefinition('workflow.def.v1', {
          workflow_id: 'w',
          subscriptions: { selectors: [{ schema_name: 'user.message.v1' }] },
          steps: [
            { id: 'a', tool: 'echo' },
            { id: 'a', tool: 'echo' },
          ],
          output: { schema_name: 'w.result.v1' },
        }),
      );
      expect(issues.map((i) => i.path)).toEqual(['steps[1].id']);
    });

    it('refuses a context config whose output is not agent.context.v1', () => {
      const bad = { ...seed003ContextConfig.context, output: { schema_name: 'other.thing.v1', tags: [] } };
      expect(issuesOf(() => parseDefinition('context.config.v1', bad))[0]?.path).toBe('output.schema_name');
    });
  });
});

describe('validateDefinition', () => {
  const brokenWorkflow = {
    workflow_id: 'w',
    subscriptions: { selectors: [{ schema_name: 'user.message.v1' }] },
    steps: [
      { id: 'a', tool: 'echo', input: { nested: { q: '=trigger.(' } } },
      { id: 'a', tool: 'echo', when: '=steps.a.ok and' },
    ],
    output: { schema_name: 'w.result.v1' },
  };

  it('refuses a workflow whose expression does not parse, or whose step ids repeat', () => {
    const issues = issuesOf(() =>
      validateDefinition('workflow.def.v1', {
        ...brokenWorkflow,
        steps: [
          { id: 'a', tool: 'echo', input: { nested: { q: '=trigger.(' } } },
          { id: 'a', tool: 'echo' },
        ],
      }),
    );
    expect(issues.map((i) => i.path)).toEqual(['steps[0].input.nested.q', 'steps[1].id']);
  });

  it("names each bad expression, input or `when`, with JSONata's reason", () => {
    const issues = issuesOf(() => validateDefinition('workflow.def.v1', brokenWorkflow));
    expect(issues).toEqual([
      {
        path: 'steps[0].input.nested.q',
        message: expect.stringMatching(
          /^not a valid JSONata expression: Expected "\)" before end of expression/,
        ),
      },
      { path: 'steps[1].when', message: expect.stringMatching(/^not a valid JSONata expression: \S/) },
      { path: 'steps[1].id', message: 'duplicate step id "a"' },
    ]);
  });

  it('leaves expressions to the executor when only the structure is parsed', () => {
    const { steps: _steps, ...rest } = brokenWorkflow;
    const parsed = parseDefinition('workflow.def.v1', {
      ...rest,
      steps: [{ id: 'a', tool: 'echo', input: { q: '=trigger.(' }, when: 'steps.(' }],
    });
    expect(parsed.kind).toBe('workflow');
  });

  it('accepts what parseDefinition accepts, with the same result', () => {
    const workflow = {
      workflow_id: 'summarize-page',
      subscriptions: { selectors: [{ schema_name: 'browser.navigation.v1', role: 'trigger' }] },
      steps: [
        { id: 'fetch', tool: 'http', input: { url: '=trigger.context.url', method: 'GET' } },
        {
          id: 'store',
          tool: 'breadcrumb.create',
          input: { body: ['=steps.fetch.output'] },
          when: 'steps.fetch.ok',
        },
      ],
      output: { schema_name: 'page.summary.v1', tags: ['summary'] },
    };
    expect(validateDefinition('workflow.def.v1', workflow)).toEqual(
      parseDefinition('workflow.def.v1', workflow),
    );
    // An agent comes with the configuration its type runs with.
    expect(validateDefinition('agent.definition.v1', seed002Breadcrumb.context)).toEqual({
      ...parseDefinition('agent.definition.v1', seed002Breadcrumb.context),
      spec: expect.objectContaining({ type: 'context' }),
    });
  });

  it('refuses an unknown definition schema as parseDefinition does', () => {
    expect(issuesOf(() => validateDefinition('agent.v2', {}))[0]?.path).toBe('schema_name');
  });
});
