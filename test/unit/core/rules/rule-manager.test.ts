import type { SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalSecrets } from '#shared/adapters/secrets/secret-source.ts';
import { processSqsBatch } from '#shared/adapters/sqs/sqs-batch.ts';
import { evaluateDefinition } from '#shared/core/rules/definition-evaluation.ts';
import { reconcileDefinition } from '#shared/core/rules/reconcile.ts';
import { definitionKeyOf, handleRuleManagerMessage } from '#shared/core/rules/rule-manager.ts';
import type { RuleManagerDependencies } from '#shared/core/rules/rule-manager-deps.ts';
import { TARGET_RETRY_POLICY } from '#shared/core/rules/rule-placement.ts';
import { syncWorkspace } from '#shared/core/rules/rules-sync.ts';
import { statusId } from '#shared/core/rules/status-breadcrumbs.ts';
import { type Breadcrumb, CreateBreadcrumbSchema } from '#shared/domain/breadcrumb.ts';
import { QuotaExceededError } from '#shared/domain/errors.ts';
import { silentLog } from '#shared/ports/log.ts';
import type { RuleDescription, RuleRegistry, RuleTarget } from '#shared/ports/rule-registry.ts';
import { addToPlacement, PLACEMENT_ID } from '#shared/routing/bus-placement.ts';
import { topology } from '#shared/topology.ts';
import { messageFor } from '../../../support/executor-message.ts';
import { InMemoryBreadcrumbStore } from '../../../support/memory/breadcrumb-store.ts';
import { InMemoryWorkspaceQuotas } from '../../../support/memory/workspace-quotas.ts';

function definitionRecord(schemaName: string, context: Record<string, unknown>): Breadcrumb {
  return {
    id: 'def-1',
    workspace: 'ws',
    schema_name: schemaName,
    title: 'definition',
    tags: [],
    context,
    version: 3,
    checksum: 'c',
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    created_by: 'user:alice',
    updated_by: 'user:alice',
  };
}

const workflow = (input: Record<string, unknown>, when?: string) => ({
  workflow_id: 'fetcher',
  subscriptions: { selectors: [{ schema_name: 'user.message.v1' }] },
  steps: [
    { id: 'fetch', tool: 'http', input },
    { id: 'store', tool: 'breadcrumb.create', ...(when !== undefined ? { when } : {}) },
  ],
  output: { schema_name: 'fetcher.result.v1' },
});

describe('evaluateDefinition', () => {
  it('marks a workflow invalid, with no rule, when an expression is not JSONata', () => {
    const status = evaluateDefinition(
      definitionRecord('workflow.def.v1', workflow({ url: '=trigger.context.(' }, 'steps.fetch.ok and')),
      'crumbs-def-',
      'offline',
    );
    expect(status).toMatchObject({ state: 'invalid', rule_name: null, pattern: null, definition_version: 3 });
    expect(status.errors).toEqual([
      { path: 'steps[0].input.url', message: expect.stringMatching(/^not a valid JSONata expression: \S/) },
      { path: 'steps[1].when', message: expect.stringMatching(/^not a valid JSONata expression: \S/) },
    ]);
  });

  it('compiles the rule of a workflow whose expressions are JSONata', () => {
    const status = evaluateDefinition(
      definitionRecord('workflow.def.v1', workflow({ url: '=trigger.context.url' }, '=steps.fetch.ok')),
      'crumbs-def-',
      'offline',
    );
    expect(status).toMatchObject({ state: 'active', errors: [], kind: 'workflow' });
    expect(status.rule_name).toMatch(/^crumbs-def-/);
  });

  it('marks an llm tool invalid when a model it allows is not one the stack can run, naming the field', () => {
    const tool = (config: Record<string, unknown>) =>
      evaluateDefinition(
        definitionRecord('tool.def.v1', { name: 'ask', implementation: 'llm', config }),
        'crumbs-def-',
        'bedrock',
      );
    const status = tool({ model: 'offline/x', allowed_models: ['openai/gpt-4o', 'nope/model'] });
    expect(status).toMatchObject({ state: 'invalid', rule_name: null });
    expect(status.errors).toEqual([
      {
        path: 'config.allowed_models[1]',
        message: expect.stringContaining('"nope/model" names the provider'),
      },
    ]);
    expect(tool({ model: 'gpt-4' }).errors[0]?.path).toBe('config.model');
    expect(tool({ model: 'offline/x', allowed_models: ['openai/gpt-4o'] }).state).toBe('active');
  });
});

/** EventBridge rules in memory, counting the calls that change something; refuses new rules past `capacity`. */
class MemoryRules implements RuleRegistry {
  readonly rules = new Map<string, { rule: RuleDescription; targets: RuleTarget[] }>();
  writes = 0;
  constructor(readonly capacity = Number.POSITIVE_INFINITY) {}

  async describe(name: string) {
    return this.rules.get(name)?.rule;
  }
  async put(rule: { name: string; pattern: string; description: string }) {
    if (!this.rules.has(rule.name) && this.rules.size >= this.capacity) {
      throw new QuotaExceededError(
        'Rules per event bus',
        'The requested resource exceeds the maximum number allowed.',
      );
    }
    this.writes++;
    const arn = `arn:aws:events:eu-west-1:1:rule/crumbs/${rule.name}`;
    const targets = this.rules.get(rule.name)?.targets ?? [];
    this.rules.set(rule.name, { rule: { ...rule, arn, state: 'ENABLED' }, targets });
    return arn;
  }
  async targets(name: string) {
    return this.rules.get(name)?.targets ?? [];
  }
  async putTargets(name: string, targets: readonly RuleTarget[]) {
    this.writes++;
    const entry = this.rules.get(name);
    if (entry) entry.targets = [...targets];
  }
  async removeTargets(name: string, ids: readonly string[]) {
    const entry = this.rules.get(name);
    if (entry && ids.length > 0) {
      this.writes++;
      entry.targets = entry.targets.filter((t) => !ids.includes(t.id));
    }
  }
  async delete(name: string) {
    this.writes++;
    this.rules.delete(name);
  }
  async list(prefix: string) {
    return [...this.rules.values()].map((r) => r.rule).filter((r) => r.name.startsWith(prefix));
  }
}

function ruleManager() {
  const store = new InMemoryBreadcrumbStore();
  const rules = new MemoryRules();
  const errors: unknown[] = [];
  const deps: RuleManagerDependencies = {
    store,
    rules,
    busName: 'crumbs',
    prefix: 'crumbs-def-',
    executorQueueArns: {
      agent: 'arn:aws:sqs:eu-west-1:1:agent',
      tool: 'arn:aws:sqs:eu-west-1:1:tool',
      workflow: 'arn:aws:sqs:eu-west-1:1:workflow',
      'context-builder': 'arn:aws:sqs:eu-west-1:1:context-builder',
      'agent-mcp': 'arn:aws:sqs:eu-west-1:1:agent-mcp',
      'agent-remote': 'arn:aws:sqs:eu-west-1:1:agent-remote',
      'agent-sandbox': 'arn:aws:sqs:eu-west-1:1:agent-sandbox',
    },
    defaultLlmProvider: 'offline',
    ruleTargetsDlqArn: DLQ_ARN,
    log: { ...silentLog, error: (message, extra) => errors.push({ message, ...extra }) },
  };
  const status = async (ws: string, id: string) => (await store.get(ws, statusId(id))).context;
  return { store, rules, deps, errors, status };
}

const agentDefinition = (model?: string) => ({
  agent_id: 'helper',
  ...(model !== undefined ? { model } : {}),
  subscriptions: { selectors: [{ schema_name: 'user.message.v1', all_tags: ['to:helper'] }] },
});

function changeMessage(record: Breadcrumb, messageId = record.id): SQSRecord {
  return { messageId, body: JSON.stringify(messageFor(record, record).event) } as unknown as SQSRecord;
}

describe('rule manager (in memory)', () => {
  it('creates one rule and an active status naming the provider and model, then changes nothing', async () => {
    const { store, rules, deps, status } = ruleManager();
    const input = CreateBreadcrumbSchema.parse({
      schema_name: 'agent.def.v1',
      context: agentDefinition('gpt-4'),
    });
    await store.create('ws', input, { principal: 'user:a', id: 'agent-helper' });

    expect(await reconcileDefinition('ws', 'agent-helper', deps)).toBe('created');
    expect(await status('ws', 'agent-helper')).toMatchObject({
      state: 'active',
      kind: 'agent',
      llm: { provider: 'offline', model: 'gpt-4' },
    });
    const writes = rules.writes;
    const statusVersion = (await store.get('ws', statusId('agent-helper'))).version;

    expect(await reconcileDefinition('ws', 'agent-helper', deps)).toBe('unchanged');
    expect(rules.writes).toBe(writes);
    expect((await store.get('ws', statusId('agent-helper'))).version).toBe(statusVersion);
  });

  it("targets the queue of the definition's runner: function agents the sandbox, tool agents and mcp tools agent-mcp, api and external agents agent-remote", async () => {
    const { store, rules, deps, status } = ruleManager();
    const target = (id: string) =>
      [...rules.rules.values()].find((r) => r.rule.description?.includes(id))?.targets[0]?.arn;
    const put = async (id: string, schema_name: string, context: Record<string, unknown>) => {
      await store.create('ws', CreateBreadcrumbSchema.parse({ schema_name, context }), {
        principal: 'user:a',
        id,
      });
      expect(await reconcileDefinition('ws', id, deps)).toBe('created');
    };
    await put('agent-fn', 'agent.def.v1', {
      agent_id: 'fn',
      type: 'function',
      function_code: 'async function handler() {}',
    });
    await put('agent-api', 'agent.def.v1', {
      agent_id: 'api',
      type: 'api',
      transport: { kind: 'api', api: { endpoint: 'https://x.example/v1' } },
    });
    await put('agent-mcp', 'agent.def.v1', {
      agent_id: 'mcp',
      type: 'tool',
      transport: { kind: 'mcp', mcp: { url: 'https://m.example/mcp' } },
      tools: ['search'],
    });
    await put('tool-mcp', 'tool.def.v1', {
      name: 'gh.issue',
      implementation: 'mcp',
      mcp: { url: 'https://m.example/mcp' },
    });
    await put('tool-fn', 'tool.def.v1', {
      name: 'sum',
      implementation: 'function',
      function: { code: 'async function handler(input) { return input; }' },
    });
    expect(target('agent-fn')).toBe('arn:aws:sqs:eu-west-1:1:agent-sandbox');
    expect(target('tool-fn')).toBe('arn:aws:sqs:eu-west-1:1:agent-sandbox');
    expect(await status('ws', 'tool-fn')).toMatchObject({
      kind: 'tool',
      runner: 'agent-sandbox',
      state: 'active',
    });
    expect(target('agent-api')).toBe('arn:aws:sqs:eu-west-1:1:agent-remote');
    expect(target('agent-mcp')).toBe('arn:aws:sqs:eu-west-1:1:agent-mcp');
    expect(target('tool-mcp')).toBe('arn:aws:sqs:eu-west-1:1:agent-mcp');
    expect(await status('ws', 'agent-fn')).toMatchObject({
      kind: 'agent',
      runner: 'agent-sandbox',
      state: 'active',
    });
    // A new version of another type moves the rule's target to that type's runner.
    await store.update(
      'ws',
      'agent-fn',
      { context: { agent_id: 'fn', system_prompt: 'now an LLM agent' } },
      { principal: 'user:a' },
    );
    expect(await reconcileDefinition('ws', 'agent-fn', deps)).toBe('updated');
    expect(target('agent-fn')).toBe('arn:aws:sqs:eu-west-1:1:agent');
  });

  it('marks an unknown provider invalid and removes the rule the previous version had', async () => {
    const { store, rules, deps, status } = ruleManager();
    const create = (model: string) =>
      CreateBreadcrumbSchema.parse({ schema_name: 'agent.def.v1', context: agentDefinition(model) });
    await store.create('ws', create('offline/crumbs'), { principal: 'user:a', id: 'agent-helper' });
    await reconcileDefinition('ws', 'agent-helper', deps);
    expect(rules.rules.size).toBe(1);

    await store.upsert('ws', 'agent-helper', create('antrhopic/claude-3'), { principal: 'user:a' });
    expect(await reconcileDefinition('ws', 'agent-helper', deps)).toBe('invalid');

    expect(rules.rules.size).toBe(0);
    const s = await status('ws', 'agent-helper');
    expect(s).toMatchObject({ state: 'invalid', definition_version: 2, llm: null });
    expect(s.errors).toEqual([{ path: 'model', message: expect.stringContaining('"antrhopic"') }]);
  });

  it('resolves an agent without a model to the default provider’s default model', () => {
    const record = definitionRecord('agent.def.v1', agentDefinition());
    expect(evaluateDefinition(record, 'crumbs-def-', 'bedrock').llm).toEqual({
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
    });
    // The operator's alias `default` says otherwise.
    const aliases = { default: 'openai/gpt-4o' };
    expect(evaluateDefinition(record, 'crumbs-def-', 'bedrock', undefined, aliases).llm).toEqual({
      provider: 'openai',
      model: 'gpt-4o',
    });
  });

  it("makes seed 002's bare gpt-4 on a Bedrock stack invalid naming the choices, or runs what its alias says", () => {
    const record = definitionRecord('agent.def.v1', agentDefinition('gpt-4'));
    const refused = evaluateDefinition(record, 'crumbs-def-', 'bedrock');
    expect(refused).toMatchObject({ state: 'invalid', llm: null, rule_name: null });
    expect(refused.errors).toEqual([
      {
        path: 'model',
        message: expect.stringMatching(
          /"gpt-4" names no provider.*bedrock takes only Bedrock model ids.*providers: bedrock, openrouter.*an alias \(none set; .*CRUMBS_MODEL_ALIASES\)/,
        ),
      },
    ]);
    const aliased = evaluateDefinition(record, 'crumbs-def-', 'bedrock', undefined, {
      'gpt-4': 'openrouter/openai/gpt-4o',
    });
    expect(aliased).toMatchObject({
      state: 'active',
      llm: { provider: 'openrouter', model: 'openai/gpt-4o' },
    });
    // A Bedrock model id without the prefix runs there as it is.
    const bedrockId = definitionRecord('agent.def.v1', agentDefinition('anthropic.claude-3-haiku'));
    expect(evaluateDefinition(bedrockId, 'crumbs-def-', 'bedrock').llm).toEqual({
      provider: 'bedrock',
      model: 'anthropic.claude-3-haiku',
    });
  });

  it('reports the model each agent type will call: its llm block when the type calls one, null when it calls none', () => {
    const llmOf = (context: Record<string, unknown>) => {
      const status = evaluateDefinition(definitionRecord('agent.def.v1', context), 'p-', 'bedrock');
      expect(status.state, JSON.stringify(status.errors)).toBe('active');
      return status.llm;
    };
    const mcp = { kind: 'mcp', mcp: { url: 'https://m.example/mcp' } };
    const llm = { provider: 'openrouter', model: 'openai/gpt-4o-mini' };
    // A tool agent that picks the tool and its arguments from a message calls the model its llm block names.
    expect(
      llmOf({
        agent_id: 'db',
        type: 'tool',
        transport: mcp,
        yaml: 'tools: [query]\nextract_arguments: true\n',
        llm,
      }),
    ).toEqual({ provider: 'openrouter', model: 'openai/gpt-4o-mini' });
    // The same agent taking its arguments as given calls no model, whatever its llm block says.
    expect(llmOf({ agent_id: 'db', type: 'tool', transport: mcp, yaml: 'tools: [query]\n', llm })).toBeNull();
    // A provider alone means that provider's default model, not the stack's default provider.
    expect(
      llmOf({
        agent_id: 'db',
        type: 'tool',
        transport: mcp,
        yaml: 'tools: [q]\nextract_arguments: true\n',
        llm: { provider: 'offline' },
      }),
    ).toEqual({ provider: 'offline', model: 'default' });
    // A context agent's llm block counts as its model does.
    expect(llmOf({ agent_id: 'golf', type: 'context', llm: { model: 'anthropic.claude-3-haiku' } })).toEqual({
      provider: 'bedrock',
      model: 'anthropic.claude-3-haiku',
    });
    for (const context of [
      {
        agent_id: 'weather',
        type: 'api',
        transport: { kind: 'api', api: { endpoint: 'https://x.example/v1' } },
        llm,
      },
      {
        agent_id: 'partner',
        type: 'external',
        transport: { kind: 'external', external: { endpoint: 'https://p.example', protocol: 'a2a' } },
        llm,
      },
      { agent_id: 'stats', type: 'function', function_code: 'async function handler() {}', llm },
    ]) {
      expect(llmOf(context), context.type).toBeNull();
    }
  });

  it('marks an agent invalid when the model its type calls names an unknown provider, at the field that says so', () => {
    const status = evaluateDefinition(
      definitionRecord('agent.def.v1', {
        agent_id: 'db',
        type: 'tool',
        transport: { kind: 'mcp', mcp: { url: 'https://m.example/mcp' } },
        yaml: 'tools: [query]\nextract_arguments: true\n',
        llm: { provider: 'antrhopic', model: 'claude-3' },
      }),
      'p-',
      'bedrock',
    );
    expect(status).toMatchObject({ state: 'invalid', llm: null });
    expect(status.errors).toEqual([{ path: 'llm.model', message: expect.stringContaining('"antrhopic"') }]);
  });

  it('deletes the rule and the status with the definition', async () => {
    const { store, rules, deps } = ruleManager();
    const input = CreateBreadcrumbSchema.parse({ schema_name: 'agent.def.v1', context: agentDefinition() });
    await store.create('ws', input, { principal: 'user:a', id: 'agent-helper' });
    await reconcileDefinition('ws', 'agent-helper', deps);
    await store.delete('ws', 'agent-helper');

    expect(await reconcileDefinition('ws', 'agent-helper', deps)).toBe('deleted');
    expect(rules.rules.size).toBe(0);
    await expect(store.get('ws', statusId('agent-helper'))).rejects.toThrow(/no breadcrumb/);
  });

  it('drops a message that can never succeed and retries one that failed retriably', async () => {
    const { store, deps, errors } = ruleManager();
    const input = CreateBreadcrumbSchema.parse({ schema_name: 'agent.def.v1', context: agentDefinition() });
    const { breadcrumb } = await store.create('ws', input, { principal: 'user:a', id: 'agent-helper' });
    const flaky: RuleManagerDependencies = {
      ...deps,
      rules: Object.assign(Object.create(deps.rules) as RuleRegistry, {
        describe: async () => {
          throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
        },
      }),
    };

    const outcome = await processSqsBatch(
      [{ messageId: 'garbage', body: 'not json' } as SQSRecord, changeMessage(breadcrumb, 'throttled')],
      (record) => handleRuleManagerMessage(record, flaky),
      { log: flaky.log, inOrderOf: definitionKeyOf },
    );

    expect(outcome.batchItemFailures).toEqual([{ itemIdentifier: 'throttled' }]);
    expect(errors).toEqual([expect.objectContaining({ messageId: 'garbage' })]);
  });
});

const DLQ_ARN = 'arn:aws:sqs:eu-west-1:1:crumbs-rule-targets-dlq';

describe('reconcileDefinition: rule targets', () => {
  async function withTool() {
    const manager = ruleManager();
    const input = CreateBreadcrumbSchema.parse({
      schema_name: 'tool.def.v1',
      context: { name: 'echo', implementation: 'echo' },
    });
    await manager.store.create('ws', input, { principal: 'user:a', id: 'tool-echo' });
    const target = () => [...manager.rules.rules.values()][0]?.targets[0];
    return { ...manager, target };
  }

  it('gives the target the rule-targets DLQ and the declared retry policy', async () => {
    const { deps, rules, target } = await withTool();
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('created');
    expect(target()).toMatchObject({
      id: 'executor',
      arn: 'arn:aws:sqs:eu-west-1:1:tool',
      deadLetterArn: DLQ_ARN,
      retryPolicy: {
        maximumRetryAttempts: topology.bus.ruleTargets.maximumRetryAttempts,
        maximumEventAgeSeconds: topology.bus.ruleTargets.maximumEventAgeSeconds,
      },
    });
    expect(TARGET_RETRY_POLICY.maximumEventAgeSeconds).toBeLessThan(86_400);
    const writes = rules.writes;
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('unchanged');
    expect(rules.writes).toBe(writes);
  });

  it('puts the target again when its DLQ or retry policy drifted (an old target without them)', async () => {
    const { deps, rules, target } = await withTool();
    await reconcileDefinition('ws', 'tool-echo', deps);
    const [rule] = [...rules.rules.values()];
    const original = target() as RuleTarget;
    const setTarget = (t: RuleTarget) => {
      (rule as { targets: RuleTarget[] }).targets = [t];
    };

    const { deadLetterArn: _dlq, retryPolicy: _retry, ...old } = original;
    setTarget(old);
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('updated');
    expect(target()).toMatchObject({ deadLetterArn: DLQ_ARN, retryPolicy: TARGET_RETRY_POLICY });

    setTarget({ ...original, retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 } });
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('updated');
    expect(target()?.retryPolicy).toEqual(TARGET_RETRY_POLICY);

    setTarget({ ...original, deadLetterArn: `${DLQ_ARN}-old` });
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('updated');
    expect(target()?.deadLetterArn).toBe(DLQ_ARN);
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('unchanged');
  });

  it("keys the executor queue's fair share by the definition's workspace (MessageGroupId), and puts a target without it again", async () => {
    const { deps, rules, target } = await withTool();
    await reconcileDefinition('ws', 'tool-echo', deps);
    expect(target()?.messageGroupId).toBe('ws');
    const [rule] = [...rules.rules.values()];
    const { messageGroupId: _group, ...old } = target() as RuleTarget;
    (rule as { targets: RuleTarget[] }).targets = [old];
    expect(await reconcileDefinition('ws', 'tool-echo', deps)).toBe('updated');
    expect(target()?.messageGroupId).toBe('ws');
  });
});

describe('rule manager: schedule.def.v1', () => {
  class MemorySchedules {
    readonly schedules = new Map<string, { expression: string; timezone?: string | undefined }>();
    async put(s: {
      workspace: string;
      definitionId: string;
      expression: string;
      timezone?: string | undefined;
    }) {
      this.schedules.set(`${s.workspace}/${s.definitionId}`, {
        expression: s.expression,
        timezone: s.timezone,
      });
    }
    async delete(workspace: string, definitionId: string) {
      this.schedules.delete(`${workspace}/${definitionId}`);
    }
  }

  const schedule = (cron: string) =>
    CreateBreadcrumbSchema.parse({
      schema_name: 'schedule.def.v1',
      context: {
        schedule_id: 'daily',
        cron,
        timezone: 'Europe/Paris',
        breadcrumb: { schema_name: 'workflow.request.v1', context: { workflow: 'report' } },
      },
    });

  it('keeps one recurring schedule per valid schedule definition, with a status, and removes it with it', async () => {
    const { store, deps, rules, status } = ruleManager();
    const schedules = new MemorySchedules();
    const withSchedules = { ...deps, schedules };
    await store.create('ws', schedule('0 9 ? * MON-FRI *'), { principal: 'user:a', id: 'sched-daily' });

    await reconcileDefinition('ws', 'sched-daily', withSchedules);
    expect(schedules.schedules.get('ws/sched-daily')).toEqual({
      expression: 'cron(0 9 ? * MON-FRI *)',
      timezone: 'Europe/Paris',
    });
    expect(await status('ws', 'sched-daily')).toMatchObject({
      state: 'active',
      kind: 'schedule',
      schedule: { expression: 'cron(0 9 ? * MON-FRI *)', timezone: 'Europe/Paris' },
    });
    expect(rules.rules.size).toBe(0);

    await store.upsert('ws', 'sched-daily', schedule('0 9 * * MON *'), { principal: 'user:a' });
    expect(await reconcileDefinition('ws', 'sched-daily', withSchedules)).toBe('invalid');
    expect(schedules.schedules.size).toBe(0);
    expect((await status('ws', 'sched-daily')).errors).toEqual([
      { path: 'cron', message: expect.stringContaining('exactly one of day-of-month and day-of-week') },
    ]);

    await store.upsert('ws', 'sched-daily', schedule('0 9 ? * * *'), { principal: 'user:a' });
    await reconcileDefinition('ws', 'sched-daily', withSchedules);
    expect(schedules.schedules.size).toBe(1);
    await store.delete('ws', 'sched-daily');
    await reconcileDefinition('ws', 'sched-daily', withSchedules);
    expect(schedules.schedules.size).toBe(0);
  });
});

describe('rule manager: a pool of buses', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  let poolSeq = 0;
  /** A pool of `size` buses of `capacity` rules each (names unique per test: full buses are remembered). */
  function pooled(size: number, capacity: number) {
    const base = ruleManager();
    const names = Array.from({ length: size }, (_, i) => `pool${++poolSeq}${i === 0 ? '' : `.${i + 1}`}`);
    const buses = new Map(names.map((n) => [n, new MemoryRules(capacity)] as const));
    const slept: number[] = [];
    const deps: RuleManagerDependencies = {
      ...base.deps,
      busName: names[0]!,
      rules: buses.get(names[0]!)!,
      pool: {
        buses: names,
        rulesOn: (bus) => buses.get(bus)!,
        placementCacheMs: 5000,
        // Time passes only in the sleeps (Date is faked in these tests).
        sleep: async (ms) => {
          slept.push(ms);
          vi.setSystemTime(Date.now() + ms);
        },
      },
    };
    const tool = async (ws: string, id: string) => {
      await base.store.upsert(
        ws,
        id,
        CreateBreadcrumbSchema.parse({
          schema_name: 'tool.def.v1',
          context: { name: id, implementation: 'echo' },
        }),
        { principal: 'user:a' },
      );
      return reconcileDefinition(ws, id, deps);
    };
    const where = (id: string) =>
      names.filter((n) =>
        [...buses.get(n)!.rules.values()].some((r) => r.rule.description.includes(`"${id}"`)),
      );
    return { ...base, deps, names, buses, slept, tool, where };
  }

  it('fills the first bus, then spills onto the next ones, recording each in the placement before it is active', async () => {
    const { names, buses, tool, status, store, slept, where } = pooled(3, 2);
    for (let i = 1; i <= 5; i++) expect(await tool('ws', `t${i}`)).toBe('created');
    expect([...buses.values()].map((b) => b.rules.size)).toEqual([2, 2, 1]);
    expect(where('t3')).toEqual([names[1]]);
    expect(await status('ws', 't3')).toMatchObject({ state: 'active', event_bus: names[1] });
    expect(await status('ws', 't5')).toMatchObject({ state: 'active', event_bus: names[2] });
    expect((await store.get('ws', PLACEMENT_ID)).context.buses).toEqual([names[1], names[2]]);
    // Waited out the publisher's placement cache (and a second) once per bus new to the workspace.
    expect(slept).toEqual([6000, 6000]);

    // A bus another placement added a moment ago is waited out too, though this placement did not add it.
    const { deps, names: other, tool: toolOn, slept: sleeps } = pooled(2, 1);
    await toolOn('late', 'l1');
    await addToPlacement(deps.store, 'late', other[1]!, 'system:rule-manager');
    vi.setSystemTime(Date.now() + 2000);
    expect(await toolOn('late', 'l2')).toBe('created');
    expect(sleeps).toEqual([4000]);

    // Another workspace starts where there is room, and records its own placement.
    expect(await tool('other', 'o1')).toBe('created');
    expect(where('o1')).toEqual([names[2]]);
    expect((await store.get('other', PLACEMENT_ID)).context.buses).toEqual([names[2]]);
  });

  it('makes a definition invalid, naming the quota, when every bus is full; sync places it once there is room', async () => {
    const { names, tool, status, deps, store, where } = pooled(2, 1);
    await tool('ws', 'a');
    await tool('ws', 'b');
    expect(await tool('ws', 'c')).toBe('invalid');
    const s = await status('ws', 'c');
    expect(s).toMatchObject({ state: 'invalid', rule_name: null, event_bus: null });
    expect(s.errors).toEqual([
      {
        path: 'event_bus',
        message: expect.stringContaining(
          `LimitExceededException, the "Rules per event bus" quota) on every bus of the pool (${names.join(', ')})`,
        ),
      },
    ]);
    // Deleting a definition removes its rule from its own bus; the sync then places the refused one there.
    await store.delete('ws', 'b');
    expect(await reconcileDefinition('ws', 'b', deps)).toBe('deleted');
    expect(where('b')).toEqual([]);
    const report = await syncWorkspace('ws', deps);
    expect(report).toMatchObject({ definitions: 2, unchanged: 1, created: 1, invalid: 0 });
    expect(await status('ws', 'c')).toMatchObject({ state: 'active', event_bus: names[1] });
  });

  it('keeps one rule when it is found on two buses: the kept one is updated, then the other deleted', async () => {
    const { names, buses, tool, where, deps, store } = pooled(2, 10);
    await tool('ws', 'dup');
    // A copy on the second bus (say, placed there before a crash kept its status from being written).
    const first = buses.get(names[0]!)!.rules.get([...buses.get(names[0]!)!.rules.keys()][0]!)!;
    buses
      .get(names[1]!)!
      .rules.set(first.rule.name, { rule: { ...first.rule }, targets: [...first.targets] });
    await store.upsert(
      'ws',
      PLACEMENT_ID,
      CreateBreadcrumbSchema.parse({
        schema_name: 'system.bus_placement.v1',
        context: { buses: [names[1]] },
      }),
      { principal: 'user:a' },
    );
    expect(where('dup')).toEqual(names);
    await store.update(
      'ws',
      'dup',
      { context: { name: 'dup', implementation: 'echo', description: 'v2' } },
      { principal: 'user:a' },
    );
    expect(await reconcileDefinition('ws', 'dup', deps)).toBe('updated');
    expect(where('dup')).toEqual([names[0]]);
  });
});

describe('rule manager: secrets of the workspace', () => {
  const apiAgent = (secretRef: string) => ({
    agent_id: 'weather',
    type: 'api',
    transport: {
      kind: 'api',
      api: {
        endpoint: 'https://api.example/v1',
        authentication: { type: 'bearer', secret_ref: secretRef },
      },
    },
  });

  async function reconciled(secretRef: string, secrets?: LocalSecrets) {
    const { store, rules, deps, status } = ruleManager();
    if (secrets) deps.secrets = secrets;
    const input = CreateBreadcrumbSchema.parse({ schema_name: 'agent.def.v1', context: apiAgent(secretRef) });
    await store.create('team-b', input, { principal: 'user:b', id: 'agent-weather' });
    const outcome = await reconcileDefinition('team-b', 'agent-weather', deps);
    return { outcome, rules, status: await status('team-b', 'agent-weather') };
  }

  const secrets = new LocalSecrets({
    inline: JSON.stringify({ 'team-a': { 'partner-token': 'a' }, 'team-b': { 'own-token': 'b' } }),
  });

  it('makes a rule for a definition whose secret_ref names a secret of its own workspace', async () => {
    const { outcome, status } = await reconciled('own-token', secrets);
    expect(outcome).toBe('created');
    expect(status).toMatchObject({ state: 'active', errors: [] });
  });

  it("makes a definition naming another workspace's secret, or one nobody mapped, invalid at its field", async () => {
    for (const ref of ['partner-token', 'OPENAI_API_KEY']) {
      const { outcome, rules, status } = await reconciled(ref, secrets);
      expect(outcome, ref).toBe('invalid');
      expect(rules.rules.size).toBe(0);
      expect(status).toMatchObject({ state: 'invalid', rule_name: null });
      expect(status.errors).toEqual([
        {
          path: 'transport.api.authentication.secret_ref',
          message: expect.stringContaining(`workspace "team-b" has no secret "${ref}"`),
        },
      ]);
    }
  });

  it('makes a path or an ARN invalid before asking anyone', async () => {
    const { outcome, status } = await reconciled('../team-a/partner-token', secrets);
    expect(outcome).toBe('invalid');
    expect(status.errors).toEqual([
      { path: 'transport.api.authentication.secret_ref', message: expect.stringMatching(/is a path/) },
    ]);
  });

  it('reports every secret_ref invalid on a stack without a secret source', async () => {
    const { outcome, status } = await reconciled('own-token');
    expect(outcome).toBe('invalid');
    expect(status.errors).toEqual([
      { path: 'transport.api.authentication.secret_ref', message: expect.stringMatching(/no secret source/) },
    ]);
  });
});

describe('rule manager: per-workspace quotas', () => {
  function quota(definitions: number, rules: number) {
    const manager = ruleManager();
    const quotas = new InMemoryWorkspaceQuotas();
    manager.deps.quotas = { store: quotas, definitions, rules };
    const put = async (ws: string, id: string, context: Record<string, unknown>) => {
      const input = CreateBreadcrumbSchema.parse({ schema_name: 'tool.def.v1', context });
      await manager.store.upsert(ws, id, input, { principal: 'user:a' });
      return reconcileDefinition(ws, id, manager.deps);
    };
    return { ...manager, quotas, put };
  }

  it('makes a definition past the rules quota invalid, naming the setting; another workspace is unaffected', async () => {
    const { put, status, rules, quotas } = quota(10, 2);
    expect(await put('team-b', 't1', { name: 't1', implementation: 'echo' })).toBe('created');
    expect(await put('team-b', 't2', { name: 't2', implementation: 'echo' })).toBe('created');
    expect(await put('team-b', 't3', { name: 't3', implementation: 'echo' })).toBe('invalid');
    expect((await status('team-b', 't3')).errors).toEqual([
      {
        path: 'quota.rules',
        message: expect.stringContaining(
          'workspace "team-b" is at its quota of 2 rules on the event bus pool (CRUMBS_MAX_RULES_PER_WORKSPACE',
        ),
      },
    ]);
    expect(rules.rules.size).toBe(2);
    expect(await put('team-a', 't1', { name: 't1', implementation: 'echo' })).toBe('created');
    // Updating a definition that holds its slot keeps it.
    expect(await put('team-b', 't1', { name: 't1', implementation: 'echo', description: 'v2' })).toBe(
      'updated',
    );
    expect(await quotas.used('team-b', 'rules')).toBe(2);
  });

  it('holds a workspace the operator set apart to its own quota, and every other workspace to the general one', async () => {
    const { put, deps, status } = quota(10, 5);
    deps.quotas = {
      ...(deps.quotas as NonNullable<typeof deps.quotas>),
      workspaces: { small: { rules: 1 } },
    };
    expect(await put('small', 't1', { name: 't1', implementation: 'echo' })).toBe('created');
    expect(await put('small', 't2', { name: 't2', implementation: 'echo' })).toBe('invalid');
    expect((await status('small', 't2')).errors).toEqual([
      {
        path: 'quota.rules',
        message: expect.stringContaining(
          'workspace "small" is at its quota of 1 rules on the event bus pool (its own, in CRUMBS_WORKSPACE_QUOTAS',
        ),
      },
    ]);
    for (const id of ['t1', 't2', 't3']) {
      expect(await put('other', id, { name: id, implementation: 'echo' })).toBe('created');
    }
  });

  it('gives the rule slot back when a definition becomes invalid or is deleted, so the next one fits', async () => {
    const { put, store, deps, status, quotas } = quota(10, 1);
    expect(await put('ws', 't1', { name: 't1', implementation: 'echo' })).toBe('created');
    expect(await put('ws', 't2', { name: 't2', implementation: 'echo' })).toBe('invalid');
    // t1 becomes invalid: its rule and its rule slot go, its definitions slot stays.
    expect(await put('ws', 't1', { name: 't1', implementation: 'echo', timeout_ms: -1 })).toBe('invalid');
    expect(await quotas.used('ws', 'rules')).toBe(0);
    expect(await quotas.used('ws', 'definitions')).toBe(2);
    expect(await reconcileDefinition('ws', 't2', deps)).toBe('created');
    await store.delete('ws', 't2');
    expect(await reconcileDefinition('ws', 't2', deps)).toBe('deleted');
    expect(await quotas.used('ws', 'rules')).toBe(0);
    expect(await quotas.used('ws', 'definitions')).toBe(1);
    expect(await status('ws', 't1')).toMatchObject({ state: 'invalid' });
  });

  it('frees the slots of a definition whose deletion was never reconciled when rules sync removes its rule', async () => {
    const { put, store, deps, quotas, rules } = quota(10, 10);
    expect(await put('ws', 't1', { name: 't1', implementation: 'echo' })).toBe('created');
    // Deleted, and the change lost (say, dead-lettered): the rule and both slots are still there.
    await store.delete('ws', 't1');
    expect(await quotas.used('ws', 'rules')).toBe(1);
    expect(await syncWorkspace('ws', deps)).toMatchObject({ deleted_orphans: 1 });
    expect(rules.rules.size).toBe(0);
    expect(await quotas.used('ws', 'rules')).toBe(0);
    expect(await quotas.used('ws', 'definitions')).toBe(0);
  });

  it('counts every definition, invalid ones and schedules too, against the definitions quota', async () => {
    const { put, store, deps, status } = quota(2, 10);
    expect(await put('ws', 't1', { name: 't1', implementation: 'echo', timeout_ms: -1 })).toBe('invalid');
    const schedule = CreateBreadcrumbSchema.parse({
      schema_name: 'schedule.def.v1',
      context: {
        schedule_id: 'nightly',
        cron: '0 2 * * *',
        breadcrumb: { schema_name: 'report.request.v1' },
      },
    });
    await store.upsert('ws', 's1', schedule, { principal: 'user:a' });
    await reconcileDefinition('ws', 's1', deps);
    // This stack has no Scheduler, so the schedule is invalid; it still holds a definitions slot.
    expect(await status('ws', 's1')).toMatchObject({ state: 'invalid' });
    expect(await put('ws', 't2', { name: 't2', implementation: 'echo' })).toBe('invalid');
    expect((await status('ws', 't2')).errors).toEqual([
      {
        path: 'quota.definitions',
        message: expect.stringContaining(
          'quota of 2 definitions (CRUMBS_MAX_DEFINITIONS_PER_WORKSPACE, set by the operator',
        ),
      },
    ]);
  });
});

describe('rule manager: the timeout ceiling', () => {
  const tool = (timeout_ms: number) =>
    definitionRecord('tool.def.v1', { name: 'slow', implementation: 'echo', timeout_ms });
  const fn = (timeout_ms: number) =>
    definitionRecord('agent.def.v1', {
      agent_id: 'loop',
      type: 'function',
      function_code: 'async function handler() { for (;;) {} }',
      transport: { kind: 'function', function: { timeout_ms } },
      subscriptions: { selectors: [{ schema_name: 'agent.request.v1' }] },
    });

  it('accepts timeouts up to the ceiling', () => {
    expect(evaluateDefinition(tool(30_000), 'p-', 'offline', 30_000).state).toBe('active');
    expect(evaluateDefinition(fn(30_000), 'p-', 'offline', 30_000).state).toBe('active');
  });

  it('makes a definition asking for more invalid, naming the field and the ceiling', () => {
    const t = evaluateDefinition(tool(30_001), 'p-', 'offline', 30_000);
    expect(t.state).toBe('invalid');
    expect(t.errors).toEqual([
      {
        path: 'timeout_ms',
        message: expect.stringContaining('ceiling of 30000 ms (CRUMBS_TIMEOUT_CEILING_MS)'),
      },
    ]);
    const f = evaluateDefinition(fn(45_000), 'p-', 'offline', 30_000);
    expect(f.state).toBe('invalid');
    expect(f.errors[0]?.path).toBe('transport.function.timeout_ms');
  });
});
