import { describe, expect, it } from 'vitest';
import {
  evaluateDefinition,
  type RuleManagerDependencies,
  reconcileDefinition,
  TARGET_RETRY_POLICY,
} from '#shared/core/rule-manager.ts';
import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { NotFoundError } from '#shared/domain/errors.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { silentLog } from '#shared/ports/log.ts';
import type { RuleDescription, RuleRegistry, RuleTarget } from '#shared/ports/rule-registry.ts';
import { topology } from '#shared/topology.ts';

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
      'bus',
      'crumbs-def-',
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
      'bus',
      'crumbs-def-',
    );
    expect(status).toMatchObject({ state: 'active', errors: [], kind: 'workflow' });
    expect(status.rule_name).toMatch(/^crumbs-def-/);
  });
});

/** Just what reconcileDefinition uses of the store: get, and create/get/update of the status breadcrumb. */
function fakeStore(records: Breadcrumb[]): BreadcrumbStore {
  const byId = new Map(records.map((r) => [r.id, r]));
  const store: Partial<BreadcrumbStore> = {
    async get(_workspace, id) {
      const record = byId.get(id);
      if (!record) throw new NotFoundError(`breadcrumb ${id} not found`);
      return record;
    },
    async create(workspace, input, options) {
      const id = options.id ?? 'generated';
      const existing = byId.get(id);
      if (existing) return { breadcrumb: existing, replayed: true };
      const record: Breadcrumb = {
        ...definitionRecord(input.schema_name, input.context),
        title: input.title,
        tags: input.tags,
        id,
        workspace,
        version: 1,
      };
      byId.set(id, record);
      return { breadcrumb: record, replayed: false };
    },
    async update(_workspace, id, patch) {
      const current = byId.get(id) as Breadcrumb;
      const next = { ...current, ...patch, version: current.version + 1 } as Breadcrumb;
      byId.set(id, next);
      return next;
    },
  };
  return store as BreadcrumbStore;
}

/** A rule registry in memory that records PutTargets calls. */
function fakeRules() {
  const rules = new Map<string, RuleDescription & { targets: RuleTarget[] }>();
  const putTargets: RuleTarget[][] = [];
  const registry: RuleRegistry = {
    async describe(name) {
      const rule = rules.get(name);
      return rule ? { ...rule } : undefined;
    },
    async put(rule) {
      const arn = `arn:aws:events:us-east-1:000000000000:rule/crumbs/${rule.name}`;
      rules.set(rule.name, { ...rule, arn, state: 'ENABLED', targets: rules.get(rule.name)?.targets ?? [] });
      return arn;
    },
    async targets(name) {
      return structuredClone(rules.get(name)?.targets ?? []);
    },
    async putTargets(name, targets) {
      putTargets.push(structuredClone([...targets]));
      const rule = rules.get(name);
      if (rule)
        rule.targets = [...rule.targets.filter((t) => !targets.some((n) => n.id === t.id)), ...targets];
    },
    async removeTargets(name, ids) {
      const rule = rules.get(name);
      if (rule) rule.targets = rule.targets.filter((t) => !ids.includes(t.id));
    },
    async delete(name) {
      rules.delete(name);
    },
    async list() {
      return [...rules.values()];
    },
  };
  return { registry, rules, putTargets };
}

const toolDefinition = definitionRecord('tool.def.v1', {
  name: 'echo',
  description: 'echo',
  implementation: 'echo',
  subscriptions: { selectors: [{ schema_name: 'tool.request.v1' }] },
});
const DLQ_ARN = 'arn:aws:sqs:us-east-1:000000000000:crumbs-rule-targets-dlq';

function ruleManager(rules: RuleRegistry): RuleManagerDependencies {
  return {
    store: fakeStore([toolDefinition]),
    rules,
    busName: 'crumbs',
    prefix: 'crumbs-def-',
    executorQueueArns: {
      agent: 'arn:aws:sqs:us-east-1:000000000000:crumbs-agent',
      tool: 'arn:aws:sqs:us-east-1:000000000000:crumbs-tool',
      workflow: 'arn:aws:sqs:us-east-1:000000000000:crumbs-workflow',
      'context-builder': 'arn:aws:sqs:us-east-1:000000000000:crumbs-context-builder',
    },
    ruleTargetsDlqArn: DLQ_ARN,
    log: silentLog,
  };
}

describe('reconcileDefinition: rule targets', () => {
  it('gives the target the rule-targets DLQ and the declared retry policy', async () => {
    const { registry, putTargets } = fakeRules();
    expect(await reconcileDefinition('ws', 'def-1', ruleManager(registry))).toBe('created');
    expect(putTargets).toHaveLength(1);
    expect(putTargets[0]?.[0]).toMatchObject({
      id: 'executor',
      arn: 'arn:aws:sqs:us-east-1:000000000000:crumbs-tool',
      deadLetterArn: DLQ_ARN,
      retryPolicy: {
        maximumRetryAttempts: topology.bus.ruleTargets.maximumRetryAttempts,
        maximumEventAgeSeconds: topology.bus.ruleTargets.maximumEventAgeSeconds,
      },
    });
    expect(TARGET_RETRY_POLICY.maximumEventAgeSeconds).toBeLessThan(86_400);
    // A second run changes nothing.
    expect(await reconcileDefinition('ws', 'def-1', ruleManager(registry))).toBe('unchanged');
    expect(putTargets).toHaveLength(1);
  });

  it('puts the target again when its DLQ or retry policy drifted (an old target without them)', async () => {
    const { registry, rules, putTargets } = fakeRules();
    await reconcileDefinition('ws', 'def-1', ruleManager(registry));
    const [rule] = [...rules.values()];
    const target = rule?.targets[0] as RuleTarget;

    const { deadLetterArn: _dlq, retryPolicy: _retry, ...old } = target;
    (rule as { targets: RuleTarget[] }).targets = [old];
    expect(await reconcileDefinition('ws', 'def-1', ruleManager(registry))).toBe('updated');
    expect(putTargets.at(-1)?.[0]).toMatchObject({
      deadLetterArn: DLQ_ARN,
      retryPolicy: TARGET_RETRY_POLICY,
    });

    (rule as { targets: RuleTarget[] }).targets = [
      { ...target, retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 } },
    ];
    expect(await reconcileDefinition('ws', 'def-1', ruleManager(registry))).toBe('updated');
    expect(rule?.targets[0]?.retryPolicy).toEqual(TARGET_RETRY_POLICY);

    (rule as { targets: RuleTarget[] }).targets = [{ ...target, deadLetterArn: `${DLQ_ARN}-old` }];
    expect(await reconcileDefinition('ws', 'def-1', ruleManager(registry))).toBe('updated');
    expect(rule?.targets[0]?.deadLetterArn).toBe(DLQ_ARN);
    expect(await reconcileDefinition('ws', 'def-1', ruleManager(registry))).toBe('unchanged');
  });
});
