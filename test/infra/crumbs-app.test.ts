import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { RULE_MANAGEMENT_ACTIONS } from '#infra/constructs/crumbs-function.ts';
import { buildCrumbs, type CrumbsStacks } from '#infra/crumbs-app.ts';
import { DEFAULT_EMBEDDED_SCHEMAS } from '#shared/core/stream/vector-search.ts';
import {
  allFunctions,
  ENV,
  EXECUTOR_RUNNERS,
  indexerPattern,
  ruleManagerPattern,
  topology,
} from '#shared/topology.ts';

const STAGE = 'test';
const ISSUER = 'https://issuer.example.com/pool';
const AUDIENCE = 'crumbs-api';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
  DeletionPolicy?: string;
}

let stacks: CrumbsStacks;
let stateful: Template;
let stateless: Template;
let resources: Record<string, Resource>;

// Bundling skipped: the templates are the subject here; `test/infra/bundles.test.ts` covers the bundles.
const CONTEXT = {
  'crumbs:stage': STAGE,
  'crumbs:jwtIssuer': ISSUER,
  'crumbs:jwtAudience': AUDIENCE,
  'crumbs:workspacesClaim': 'crumbs:workspaces',
  'aws:cdk:bundling-stacks': [],
};

beforeAll(() => {
  const app = new App({ context: CONTEXT });
  stacks = buildCrumbs(app, readConfig(app.node));
  stateful = Template.fromStack(stacks.stateful);
  stateless = Template.fromStack(stacks.stateless);
  resources = stateless.toJSON().Resources as Record<string, Resource>;
});

function ofType(type: string): [string, Resource][] {
  return Object.entries(resources).filter(([, r]) => r.Type === type);
}

/** Logical id of `{ "Fn::GetAtt": [id, attr] }` or `{ Ref: id }`. */
function refId(value: unknown): string | undefined {
  if (value && typeof value === 'object') {
    const v = value as Json;
    const getAtt = v['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
    if (typeof v.Ref === 'string') return v.Ref;
  }
  return undefined;
}

function functionId(name: string): string {
  const found = ofType('AWS::Lambda::Function').find(
    ([, r]) => r.Properties.FunctionName === `crumbs-${STAGE}-${name}`,
  );
  if (!found) throw new Error(`no function ${name}`);
  return found[0];
}

function functionEnv(name: string): Json {
  const fn = resources[functionId(name)];
  return ((fn?.Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;
}

function statementsOfFunction(name: string): Json[] {
  const roleId = refId(resources[functionId(name)]?.Properties.Role);
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles as unknown[]).some((r) => refId(r) === roleId))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement);
}

function crumbsBusId(): string {
  return Object.keys(stateful.findResources('AWS::Events::EventBus'))[0] ?? '';
}

const asList = (x: unknown): unknown[] => (Array.isArray(x) ? x : [x]);

function sqsEventSources(): { fnId: string; queueId: string; props: Json }[] {
  return ofType('AWS::Lambda::EventSourceMapping')
    .map(([, r]) => ({
      fnId: refId(r.Properties.FunctionName) ?? '',
      queueId: refId(r.Properties.EventSourceArn) ?? '',
      props: r.Properties,
    }))
    .filter((m) => resources[m.queueId]?.Type === 'AWS::SQS::Queue');
}

function deadLetterQueueIds(): Set<string> {
  const ids = new Set<string>();
  for (const [, q] of ofType('AWS::SQS::Queue')) {
    const target = refId((q.Properties.RedrivePolicy as Json | undefined)?.deadLetterTargetArn);
    if (target) ids.add(target);
  }
  for (const [, m] of ofType('AWS::Lambda::EventSourceMapping')) {
    const onFailure = ((m.Properties.DestinationConfig as Json | undefined)?.OnFailure as Json | undefined)
      ?.Destination;
    const id = refId(onFailure);
    if (id) ids.add(id);
  }
  return ids;
}

describe('StatefulStack', () => {
  it('keeps the breadcrumbs table: stream of both images, TTL, PITR, on-demand, the topology GSIs', () => {
    stateful.hasResource('AWS::DynamoDB::Table', {
      Properties: Match.objectLike({
        TableName: `${topology.table.name}-${STAGE}`,
        KeySchema: [
          { AttributeName: topology.table.partitionKey, KeyType: 'HASH' },
          { AttributeName: topology.table.sortKey, KeyType: 'RANGE' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
        TimeToLiveSpecification: { AttributeName: topology.table.ttlAttribute, Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        GlobalSecondaryIndexes: topology.table.gsis.map((g) => ({
          IndexName: g.name,
          KeySchema: [
            { AttributeName: g.partitionKey, KeyType: 'HASH' },
            { AttributeName: g.sortKey, KeyType: 'RANGE' },
          ],
          Projection: g.include
            ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...g.include] }
            : { ProjectionType: 'ALL' },
        })),
      }),
    });
  });

  it('archives the crumbs events of the bus for replay', () => {
    stateful.hasResourceProperties('AWS::Events::EventBus', { Name: `${topology.bus.name}-${STAGE}` });
    stateful.hasResourceProperties('AWS::Events::Archive', {
      RetentionDays: topology.bus.archiveRetentionDays,
      EventPattern: { source: [topology.bus.source] },
    });
  });
});

describe('StatelessStack', () => {
  it('builds one function per topology declaration, each on Node.js 22 or newer, arm64, with active tracing', () => {
    const fns = ofType('AWS::Lambda::Function');
    const expected = [...allFunctions(), topology.functions.dlqHandler].map(
      (f) => `crumbs-${STAGE}-${f.name}`,
    );
    expect(fns.map(([, f]) => f.Properties.FunctionName).sort()).toEqual(expected.sort());
    for (const [id, fn] of fns) {
      const runtime = String(fn.Properties.Runtime);
      const major = Number(/^nodejs(\d+)\.x$/.exec(runtime)?.[1]);
      expect(major, `${id} runtime ${runtime}`).toBeGreaterThanOrEqual(22);
      expect(fn.Properties.Architectures, id).toEqual(['arm64']);
      expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(fn.Properties.LoggingConfig, id).toMatchObject({ LogGroup: expect.anything() });
    }
  });

  it('gives every function that uses the table its name, every function Powertools settings, and secrets only to agents and tools', () => {
    for (const f of [...allFunctions(), topology.functions.dlqHandler]) {
      const env = functionEnv(f.name);
      expect(env[ENV.tableName] !== undefined, f.name).toBe(f.uses.table !== undefined);
      expect(env.POWERTOOLS_SERVICE_NAME, f.name).toBe(`crumbs-${f.name}`);
      expect(env.POWERTOOLS_METRICS_NAMESPACE, f.name).toBeDefined();
      // Secret values; the rule manager may only ask whether an agent credential exists (below).
      const readsSecrets = statementsOfFunction(f.name).some((s) =>
        asList(s.Action).includes('secretsmanager:GetSecretValue'),
      );
      const wantsSecrets = 'trigger' in f && f.uses.secrets === true;
      expect(readsSecrets, f.name).toBe(wantsSecrets);
      expect(env[ENV.secretPrefix] !== undefined, f.name).toBe(wantsSecrets);
    }
    expect(functionEnv('publisher')[ENV.busName]).toBeDefined();
  });

  it('lets only the runners that call out with credentials (agent types, the http tool) read agent credentials, under crumbs/agents/ only', () => {
    for (const f of [...allFunctions(), topology.functions.dlqHandler]) {
      const grants = statementsOfFunction(f.name).filter((s) => s.Sid === 'ReadAgentCredentials');
      const access = 'agentSecrets' in f.uses ? f.uses.agentSecrets : undefined;
      const wants = access === 'read';
      expect(grants.length, f.name).toBe(wants ? 1 : 0);
      expect(functionEnv(f.name)[ENV.secretSource], f.name).toBe(
        access !== undefined ? 'secretsmanager' : undefined,
      );
      for (const g of grants) {
        expect(JSON.stringify(g.Resource)).toMatch(/secret:crumbs\/agents\/\*/);
        expect(asList(g.Action)).toEqual(['secretsmanager:GetSecretValue']);
      }
      // Loopback and private addresses stay refused on AWS.
      expect(functionEnv(f.name)[ENV.allowPrivateNetwork], f.name).toBeUndefined();
    }
    expect(
      ['executor-agent-mcp', 'executor-agent-remote', 'executor-agent-sandbox'].every((n) =>
        allFunctions().some((f) => f.name === n),
      ),
    ).toBe(true);
  });

  it("lets the API list and delete agent credentials (a workspace's deletion), never read them", () => {
    const statements = statementsOfFunction('api');
    expect(statements.filter((s) => s.Sid === 'ReadAgentCredentials')).toEqual([]);
    const erase = statements.filter((s) => s.Sid === 'EraseAgentCredentials');
    expect(erase).toHaveLength(1);
    expect(asList(erase[0]?.Action)).toEqual(['secretsmanager:DeleteSecret']);
    expect(JSON.stringify(erase[0]?.Resource)).toMatch(/secret:crumbs\/agents\/\*/);
    const list = statements.filter((s) => s.Sid === 'ListSecrets');
    expect(asList(list[0]?.Action)).toEqual(['secretsmanager:ListSecrets']);
    expect(functionEnv('api')[ENV.agentSecretPrefix]).toBe('crumbs/agents/');
  });

  it('lets the rule manager ask only whether an agent credential exists, never read it', () => {
    const statements = statementsOfFunction('rule-manager');
    expect(statements.filter((s) => s.Sid === 'ReadAgentCredentials')).toEqual([]);
    const describe = statements.filter((s) => s.Sid === 'DescribeAgentCredentials');
    expect(describe).toHaveLength(1);
    expect(asList(describe[0]?.Action)).toEqual(['secretsmanager:DescribeSecret']);
    expect(JSON.stringify(describe[0]?.Resource)).toMatch(/secret:crumbs\/agents\/\*/);
    expect(functionEnv('rule-manager')[ENV.agentSecretPrefix]).toBe('crumbs/agents/');
  });

  it('uses one Bedrock embedding model in every function that indexes or searches vectors', () => {
    for (const f of [...allFunctions(), topology.functions.dlqHandler]) {
      const embeds = 'embeddings' in f.uses && f.uses.embeddings === true;
      expect(functionEnv(f.name)[ENV.embeddings], f.name).toBe(
        embeds ? 'bedrock/amazon.titan-embed-text-v2:0' : undefined,
      );
      const invoke = statementsOfFunction(f.name).filter((s) =>
        asList(s.Action).includes('bedrock:InvokeModel'),
      );
      const wantsLlm = 'trigger' in f && f.uses.secrets === true;
      expect(invoke.length, f.name).toBe((embeds ? 1 : 0) + (wantsLlm ? 1 : 0));
    }
    expect(functionEnv('api')[ENV.workspacesClaim]).toBe('crumbs:workspaces');
  });

  it('gives every SQS queue that feeds a function a dead-letter queue', () => {
    const sources = sqsEventSources();
    // One queue per executor runner + the rule manager's, the indexer's and the timers' queues + one DLQ per runner
    // and the rule targets' DLQ (read by the DLQ handler).
    expect(sources).toHaveLength(EXECUTOR_RUNNERS.length * 2 + 4);
    for (const { queueId } of sources) {
      const redrive = resources[queueId]?.Properties.RedrivePolicy as Json | undefined;
      expect(redrive?.deadLetterTargetArn, queueId).toBeDefined();
      expect(redrive?.maxReceiveCount, queueId).toBeGreaterThan(0);
    }
  });

  it('sets queue visibility timeouts to at least 6 x the consuming function timeout, and partial batch failures', () => {
    for (const { fnId, queueId, props } of sqsEventSources()) {
      const timeout = Number(resources[fnId]?.Properties.Timeout);
      const visibility = Number(resources[queueId]?.Properties.VisibilityTimeout);
      expect(visibility, `${queueId} → ${fnId}`).toBeGreaterThanOrEqual(6 * timeout);
      expect(props.FunctionResponseTypes, fnId).toEqual(['ReportBatchItemFailures']);
    }
  });

  it('lets every SQS consumer bring a failed message back early: GetQueueUrl and ChangeMessageVisibility on its queue', () => {
    for (const { fnId, queueId } of sqsEventSources()) {
      const name = String(resources[fnId]?.Properties.FunctionName).replace(`crumbs-${STAGE}-`, '');
      const onQueue = statementsOfFunction(name).filter((s) =>
        asList(s.Resource).some((r) => refId(r) === queueId),
      );
      const actions = onQueue.flatMap((s) => asList(s.Action).map(String));
      expect(actions, `${name} on ${queueId}`).toEqual(
        expect.arrayContaining(['sqs:ChangeMessageVisibility', 'sqs:GetQueueUrl']),
      );
    }
  });

  it('gives the stack default LLM provider to the functions that resolve model ids, and only to them', () => {
    for (const f of [...allFunctions(), topology.functions.dlqHandler]) {
      const resolves = 'llm' in f.uses && f.uses.llm === true;
      expect(functionEnv(f.name)[ENV.defaultLlmProvider], f.name).toBe(resolves ? 'bedrock' : undefined);
    }
    expect(functionEnv('rule-manager')[ENV.defaultLlmProvider]).toBe('bedrock');
    expect(functionEnv('executor-agent')[ENV.defaultLlmProvider]).toBe('bedrock');
    // The operator's model aliases ride beside it (none set here), so status and call resolve alike.
    for (const name of ['rule-manager', 'executor-agent', 'executor-tool'])
      expect(functionEnv(name)[ENV.modelAliases], name).toBe('{}');
  });

  it('limits each executor event source to the concurrency the topology declares', () => {
    for (const kind of EXECUTOR_RUNNERS) {
      const declared = topology.functions.executors[kind];
      const fnId = functionId(declared.name);
      const source = sqsEventSources().find((s) => s.fnId === fnId);
      expect(source?.props, kind).toMatchObject({
        BatchSize: declared.trigger.batchSize,
        ScalingConfig: { MaximumConcurrency: declared.trigger.maxConcurrency },
      });
      expect(resources[source?.queueId ?? '']?.Properties.QueueName).toBe(
        `${declared.trigger.queue.name}-${STAGE}`,
      );
    }
  });

  it('reads the table stream with bisect on error, partial batch failures and an on-failure queue', () => {
    const stream = topology.functions.publisher.trigger;
    stateless.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionId('publisher') },
      EventSourceArn: Match.anyValue(),
      BatchSize: stream.batchSize,
      MaximumRetryAttempts: stream.retryAttempts,
      BisectBatchOnFunctionError: true,
      ParallelizationFactor: stream.parallelizationFactor,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
      // Only heads, plain puts and head removals invoke it (the same patterns the local poller applies).
      FilterCriteria: {
        Filters: (stream.filters ?? []).map((pattern) => ({ Pattern: JSON.stringify(pattern) })),
      },
    });
    expect(stream.filters?.length).toBe(3);
  });

  it('puts no Resource "*" on DynamoDB, SQS or EventBridge actions (except events:ListRules)', () => {
    for (const [id, policy] of ofType('AWS::IAM::Policy')) {
      for (const s of (policy.Properties.PolicyDocument as { Statement: Json[] }).Statement) {
        if (!asList(s.Resource).includes('*')) continue;
        for (const action of asList(s.Action).map(String)) {
          expect(/^(dynamodb|sqs):/.test(action), `${id}: ${action} on *`).toBe(false);
          if (action.startsWith('events:')) expect(action, id).toBe('events:ListRules');
        }
      }
    }
  });

  it('lets the rule manager manage only rules under its prefix on the crumbs bus', () => {
    const statements = statementsOfFunction('rule-manager');
    const eventActions = statements
      .flatMap((s) => asList(s.Action).map(String))
      .filter((a) => a.startsWith('events:'));
    expect(new Set(eventActions)).toEqual(new Set([...RULE_MANAGEMENT_ACTIONS, 'events:ListRules']));
    for (const s of statements) {
      const actions = asList(s.Action).map(String);
      if (!actions.some((a) => a.startsWith('events:') && a !== 'events:ListRules')) continue;
      expect(actions.includes('events:ListRules')).toBe(false);
      // arn:<partition>:events:<region>:<account>:rule/<crumbs bus name>/<prefix>*, the bus named, not imported
      expect(JSON.stringify(s.Resource)).toContain(`:rule/crumbs-${STAGE}/${topology.bus.ruleNamePrefix}*`);
      expect(JSON.stringify(s.Resource)).not.toContain('Fn::ImportValue');
    }
    // No other function may touch rules.
    for (const f of [...allFunctions(), topology.functions.dlqHandler].filter(
      (x) => x.name !== 'rule-manager',
    )) {
      const actions = statementsOfFunction(f.name).flatMap((s) => asList(s.Action).map(String));
      expect(
        actions.filter((a) => a.startsWith('events:') && a !== 'events:PutEvents'),
        f.name,
      ).toEqual([]);
    }
    const arns = String(JSON.stringify(functionEnv('rule-manager')[ENV.executorQueueArns]));
    for (const kind of EXECUTOR_RUNNERS) expect(arns).toContain(`\\"${kind}\\":`);
    expect(functionEnv('rule-manager')[ENV.ruleNamePrefix]).toBe(topology.bus.ruleNamePrefix);
  });

  it('lets EventBridge deliver to executor queues only from rules under the rule prefix', () => {
    for (const kind of EXECUTOR_RUNNERS) {
      const name = `${topology.functions.executors[kind].trigger.queue.name}-${STAGE}`;
      const queueId = ofType('AWS::SQS::Queue').find(([, q]) => q.Properties.QueueName === name)?.[0];
      const policies = ofType('AWS::SQS::QueuePolicy').filter(([, p]) =>
        (p.Properties.Queues as unknown[]).some((q) => refId(q) === queueId),
      );
      const statements = policies.flatMap(
        ([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement,
      );
      const delivery = statements.find((s) => JSON.stringify(s.Principal).includes('events.amazonaws.com'));
      expect(delivery?.Action, kind).toBe('sqs:SendMessage');
      const sourceArn = JSON.stringify((delivery?.Condition as Json | undefined)?.ArnLike);
      expect(sourceArn, kind).toContain(`/${topology.bus.ruleNamePrefix}*`);
    }
  });

  it('gives compiled rule targets a DLQ that only the compiled rules may send to, alarmed and answered', () => {
    const name = `${topology.bus.ruleTargets.dlqName}-${STAGE}`;
    const [queueId, queue] = ofType('AWS::SQS::Queue').find(([, q]) => q.Properties.QueueName === name) ?? [];
    expect(queue?.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 24 * 3600,
      // Consumed by the DLQ handler: 6 x its timeout, and what it fails on is parked.
      VisibilityTimeout: 6 * topology.functions.dlqHandler.timeoutSeconds,
      RedrivePolicy: { deadLetterTargetArn: expect.anything(), maxReceiveCount: 5 },
    });
    // The rule manager names it in every target's DeadLetterConfig, and has no grant on it (none is needed).
    expect(refId(functionEnv('rule-manager')[ENV.ruleTargetsDlqArn])).toBe(queueId);
    const ruleManager = statementsOfFunction('rule-manager');
    expect(ruleManager.filter((s) => asList(s.Resource).some((r) => refId(r) === queueId))).toEqual([]);
    // Its one iam:PassRole is the scheduler role's, passed to Scheduler only (no rule target gets a role).
    const passRole = ruleManager.filter((s) => asList(s.Action).includes('iam:PassRole'));
    expect(passRole).toHaveLength(1);
    expect(passRole[0]?.Condition).toEqual({
      StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
    });

    const statements = ofType('AWS::SQS::QueuePolicy')
      .filter(([, p]) => (p.Properties.Queues as unknown[]).some((q) => refId(q) === queueId))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement);
    const delivery = statements.filter((s) => JSON.stringify(s.Principal).includes('events.amazonaws.com'));
    expect(delivery).toHaveLength(1);
    expect(delivery[0]).toMatchObject({ Effect: 'Allow', Action: 'sqs:SendMessage' });
    expect(refId(delivery[0]?.Resource)).toBe(queueId);
    const sourceArn = JSON.stringify((delivery[0]?.Condition as Json | undefined)?.ArnLike);
    expect(sourceArn).toContain(':rule/');
    expect(sourceArn).toContain(`/${topology.bus.ruleNamePrefix}*`);

    const alarm = ofType('AWS::CloudWatch::Alarm')
      .map(([, a]) => a.Properties)
      .find(
        (a) =>
          a.MetricName === 'ApproximateNumberOfMessagesVisible' &&
          (a.Dimensions as Json[]).some((d) => refId(d.Value) === queueId),
      );
    expect(alarm).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    expect(stacks.stateless.alarms).toContain(stacks.stateless.ruleTargetDeadLetters.alarm);

    const consumer = sqsEventSources().find((m) => m.queueId === queueId);
    expect(consumer?.fnId).toBe(functionId(topology.functions.dlqHandler.name));
  });

  it("routes definition changes to the rule manager's queue through its own static rule", () => {
    const rule = ofType('AWS::Events::Rule').find(
      ([, r]) => r.Properties.Name === topology.bus.ruleManagerRuleName,
    );
    expect(rule?.[1].Properties.EventPattern).toEqual(ruleManagerPattern());
    const targets = rule?.[1].Properties.Targets as Json[];
    expect(targets).toHaveLength(1);
    const queueId = refId(targets[0]?.Arn);
    expect(resources[queueId ?? '']?.Properties.QueueName).toBe(
      `${topology.functions.ruleManager.trigger.queue.name}-${STAGE}`,
    );
    expect((targets[0]?.DeadLetterConfig as Json | undefined)?.Arn).toBeDefined();
  });

  it("routes changes of embedded schemas to the indexer's queue through its own rule, and keeps Bedrock out of the publisher", () => {
    const rule = ofType('AWS::Events::Rule').find(
      ([, r]) => r.Properties.Name === topology.bus.indexerRuleName,
    );
    expect(rule?.[1].Properties.EventPattern).toEqual(indexerPattern(DEFAULT_EMBEDDED_SCHEMAS));
    const targets = rule?.[1].Properties.Targets as Json[];
    expect(targets).toHaveLength(1);
    const queueId = refId(targets[0]?.Arn) ?? '';
    expect(resources[queueId]?.Properties.QueueName).toBe(
      `${topology.functions.indexer.trigger.queue.name}-${STAGE}`,
    );
    // Events EventBridge cannot deliver, and messages the indexer keeps failing on, end in its DLQ (alarmed).
    const dlqId = refId((targets[0]?.DeadLetterConfig as Json | undefined)?.Arn) ?? '';
    const redrive = resources[queueId]?.Properties.RedrivePolicy as Json | undefined;
    expect(refId(redrive?.deadLetterTargetArn)).toBe(dlqId);
    expect(
      sqsEventSources()
        .filter((m) => m.queueId === queueId)
        .map((m) => m.fnId),
    ).toEqual([functionId('indexer')]);
    // The publisher never calls a model: a failing embedding cannot hold up change events.
    const publisherInvokes = statementsOfFunction('publisher').some((st) =>
      asList(st.Action).some((a) => String(a).startsWith('bedrock:')),
    );
    expect(publisherInvokes).toBe(false);
    expect(functionEnv('indexer')[ENV.embeddings]).toBe('bedrock/amazon.titan-embed-text-v2:0');
  });

  it('serves MCP from its own function, which names the issuer in its metadata and reads no secret, queue or bus', () => {
    const env = functionEnv('mcp');
    expect(env[ENV.jwtIssuer]).toBe(ISSUER);
    expect(env[ENV.workspacesClaim]).toBeDefined();
    const actions = statementsOfFunction('mcp').flatMap((s) => asList(s.Action).map(String));
    expect(actions.filter((a) => /^(secretsmanager|sqs|events|scheduler|bedrock):/.test(a))).toEqual([]);
    expect(actions.some((a) => a.startsWith('dynamodb:'))).toBe(true);
  });

  it('serves A2A from its own function, which reads no secret, queue, bus or model', () => {
    expect(functionEnv('a2a')[ENV.workspacesClaim]).toBeDefined();
    const actions = statementsOfFunction('a2a').flatMap((s) => asList(s.Action).map(String));
    expect(actions.filter((a) => /^(secretsmanager|sqs|events|scheduler|bedrock):/.test(a))).toEqual([]);
  });

  it('serves the dashboard from its own function, which reaches no table, queue or bus, with the built files beside it', () => {
    const env = functionEnv('ui');
    expect(env[ENV.uiDir]).toBe('/var/task/ui');
    const actions = statementsOfFunction('ui').flatMap((s) => asList(s.Action).map(String));
    expect(actions.filter((a) => !/^(logs|xray):/.test(a))).toEqual([]);
    const methods = ofType('AWS::ApiGateway::Method').map(([, m]) => JSON.stringify(m.Properties));
    expect(methods.some((m) => m.includes(functionId('ui')))).toBe(true);
  });

  it('alarms on every dead-letter queue holding a message', () => {
    const dlqs = deadLetterQueueIds();
    // Every executor runner's DLQ, the rule manager's, the indexer's and the timers' DLQs, the parked queue and the
    // publisher's on-failure queue (the rule targets' DLQ is named by targets the rule manager puts at run time).
    expect(dlqs.size).toBe(EXECUTOR_RUNNERS.length + 5);
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    for (const dlq of dlqs) {
      const alarm = alarms.find(
        (a) =>
          a.MetricName === 'ApproximateNumberOfMessagesVisible' &&
          (a.Dimensions as Json[]).some((d) => refId(d.Value) === dlq),
      );
      expect(alarm, dlq).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    }
  });

  it('alarms on errors and throttles of every function', () => {
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    for (const [fnId] of ofType('AWS::Lambda::Function')) {
      for (const metric of ['Errors', 'Throttles']) {
        const found = alarms.some(
          (a) => a.MetricName === metric && (a.Dimensions as Json[]).some((d) => refId(d.Value) === fnId),
        );
        expect(found, `${fnId} ${metric}`).toBe(true);
      }
    }
  });
});

describe('Powertools and the AWS SDK', () => {
  // Both are in every bundle (test/infra/bundles.test.ts): a layer or the runtime's SDK would load more slowly.
  it('runs every function with no layer and looks up no layer version at deploy time', () => {
    const fns = ofType('AWS::Lambda::Function');
    expect(fns.length).toBeGreaterThan(allFunctions().length);
    for (const [id, fn] of fns) expect(fn.Properties.Layers, id).toBeUndefined();
    expect(JSON.stringify(stateless.toJSON().Parameters ?? {})).not.toContain('/aws/service/powertools');
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('reports no unsuppressed error in either stack', () => {
    for (const stack of [stacks.stateful, stacks.stateless]) {
      const errors = Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
      expect(errors.map((e) => `${e.id}: ${String(e.entry.data).split('\n')[0]}`)).toEqual([]);
    }
  });

  it('lets timers and schedules reach only the timers queue: a scoped scheduler role, PassRole on it alone', () => {
    const [roleId, role] =
      ofType('AWS::IAM::Role').find(
        ([, r]) =>
          JSON.stringify(r.Properties.RoleName) ===
          JSON.stringify({
            'Fn::Join': ['', [`${topology.timers.schedulerRoleName}-${STAGE}-`, { Ref: 'AWS::Region' }]],
          }),
      ) ?? [];
    expect(JSON.stringify(role?.Properties.AssumeRolePolicyDocument)).toContain('scheduler.amazonaws.com');
    expect(JSON.stringify(role?.Properties.AssumeRolePolicyDocument)).toContain('aws:SourceAccount');
    const roleStatements = ofType('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties.Roles as unknown[]).some((r) => refId(r) === roleId))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement);
    expect(roleStatements.flatMap((s) => asList(s.Action))).toEqual(['sqs:SendMessage']);
    const timersQueue = ofType('AWS::SQS::Queue').find(
      ([, q]) => q.Properties.QueueName === `${topology.functions.timer.trigger.queue.name}-${STAGE}`,
    )?.[0];
    expect(asList(roleStatements[0]?.Resource).map(refId)).toContain(timersQueue);

    const group = ofType('AWS::Scheduler::ScheduleGroup')[0]?.[1];
    expect(group?.Properties.Name).toBe(`${topology.timers.scheduleGroup}-${STAGE}`);
    for (const f of allFunctions()) {
      const statements = statementsOfFunction(f.name);
      const scheduler = statements.filter((s) =>
        asList(s.Action).some((a) => String(a).startsWith('scheduler:')),
      );
      const pass = statements.filter((s) => asList(s.Action).includes('iam:PassRole'));
      if (!f.uses.timers) {
        expect(scheduler, f.name).toEqual([]);
        expect(pass, f.name).toEqual([]);
        continue;
      }
      if (f.uses.timers === 'cancel') {
        // A workspace's deletion (the API): lists and deletes schedules of the group, creates none, passes no role.
        expect(scheduler.flatMap((s) => asList(s.Action)).sort(), f.name).toEqual([
          'scheduler:DeleteSchedule',
          'scheduler:ListSchedules',
        ]);
        const deletes = scheduler.filter((s) => asList(s.Action).includes('scheduler:DeleteSchedule'));
        expect(JSON.stringify(deletes.map((s) => s.Resource)), f.name).toContain(
          `schedule/${topology.timers.scheduleGroup}-${STAGE}/*`,
        );
        expect(pass, f.name).toEqual([]);
        expect(functionEnv(f.name)[ENV.timersQueueArn], f.name).toBeUndefined();
        continue;
      }
      expect(JSON.stringify(scheduler.map((s) => s.Resource)), f.name).toContain(
        `schedule/${topology.timers.scheduleGroup}-${STAGE}/*`,
      );
      expect(
        pass.map((s) => refId(s.Resource)),
        f.name,
      ).toEqual([roleId]);
      expect(refId(functionEnv(f.name)[ENV.timersQueueArn]), f.name).toBe(timersQueue);
    }
    // The timer function consumes the timers queue.
    expect(sqsEventSources().some((s) => s.fnId === functionId('timer') && s.queueId === timersQueue)).toBe(
      true,
    );
  });
});

describe('a pool of three buses (crumbs:buses 3)', () => {
  let pooledStateful: Template;
  let pooledResources: Record<string, Resource>;
  const busNames = [`crumbs-${STAGE}`, `crumbs-${STAGE}.2`, `crumbs-${STAGE}.3`];

  beforeAll(() => {
    const app = new App({ context: { ...CONTEXT, 'crumbs:buses': 3 } });
    const pooled = buildCrumbs(app, readConfig(app.node));
    pooledStateful = Template.fromStack(pooled.stateful);
    pooledResources = Template.fromStack(pooled.stateless).toJSON().Resources as Record<string, Resource>;
  });

  const of = (type: string) => Object.entries(pooledResources).filter(([, r]) => r.Type === type);
  const busIds = () => {
    const buses = pooledStateful.findResources('AWS::Events::EventBus') as Record<string, Resource>;
    return busNames.map((name) => Object.entries(buses).find(([, b]) => b.Properties.Name === name)?.[0]);
  };
  /**
   * The stateful bus each bus name in a statement or condition names, in order: the stateless stack names the buses
   * of the pool (no import), so a shrinking pool leaves no export in use.
   */
  const importedBuses = (value: unknown): unknown[] => {
    const text = JSON.stringify(value);
    expect(text).not.toContain('Fn::ImportValue');
    return [...text.matchAll(new RegExp(`crumbs-${STAGE}(?:\\.\\d+)?(?![\\w.-])`, 'g'))].map(
      (m) => busIds()[busNames.indexOf(m[0])],
    );
  };
  const env = (name: string): Json => {
    const fn = of('AWS::Lambda::Function').find(
      ([, r]) => r.Properties.FunctionName === `crumbs-${STAGE}-${name}`,
    );
    return ((fn?.[1].Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;
  };
  const statementsOf = (name: string): Json[] => {
    const fn = of('AWS::Lambda::Function').find(
      ([, r]) => r.Properties.FunctionName === `crumbs-${STAGE}-${name}`,
    );
    const roleId = refId(fn?.[1].Properties.Role);
    return of('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties.Roles as unknown[]).some((r) => refId(r) === roleId))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement);
  };

  it('makes every bus with its own archive of crumbs events, keeping the first bus as it was', () => {
    expect(busIds().every((id) => id !== undefined)).toBe(true);
    // The first bus keeps its logical id: deploying a larger pool replaces nothing.
    expect(busIds()[0]).toBe(crumbsBusId());
    const archives = Object.values(pooledStateful.findResources('AWS::Events::Archive')) as Resource[];
    expect(archives).toHaveLength(3);
    for (const [i, id] of busIds().entries()) {
      const archive = archives.find((a) => refId(a.Properties.SourceArn) === id);
      expect(archive?.Properties, busNames[i]).toMatchObject({
        RetentionDays: topology.bus.archiveRetentionDays,
        EventPattern: { source: [topology.bus.source] },
      });
    }
  });

  it('lets the publisher put events on each bus of the pool and names the pool, the first bus first', () => {
    const puts = statementsOf('publisher').filter((s) => asList(s.Action).includes('events:PutEvents'));
    expect(puts.flatMap((s) => importedBuses(s.Resource)).sort()).toEqual([...busIds()].sort());
    const pool = env('publisher')[ENV.busPool];
    expect(importedBuses(pool)).toEqual(busIds());
    expect(importedBuses(env('publisher')[ENV.busName])).toEqual([busIds()[0]]);
    expect(env('publisher')[ENV.busPlacementCacheMs]).toBe(
      String(topology.bus.pool.placementCacheSeconds * 1000),
    );
  });

  it('lets the rule manager manage rules under its prefix on each bus of the pool, and create no bus', () => {
    const statements = statementsOf('rule-manager');
    const manage = statements.find((s) => s.Sid === 'ManageOwnRules');
    const resourcesOfManage = asList(manage?.Resource);
    expect(resourcesOfManage).toHaveLength(3);
    for (const r of resourcesOfManage)
      expect(JSON.stringify(r)).toContain(`/${topology.bus.ruleNamePrefix}*`);
    expect(importedBuses(resourcesOfManage)).toEqual(busIds());
    const actions = statements.flatMap((s) => asList(s.Action).map(String));
    expect(actions.filter((a) => /^events:(Create|Delete)EventBus$/.test(a))).toEqual([]);
    expect(importedBuses(env('rule-manager')[ENV.busPool])).toEqual(busIds());
  });

  it("lets the compiled rules of every bus deliver to the executor queues and dead-letter to the rule targets' DLQ", () => {
    const queueNames = [
      ...EXECUTOR_RUNNERS.map((k) => `${topology.functions.executors[k].trigger.queue.name}-${STAGE}`),
      `${topology.bus.ruleTargets.dlqName}-${STAGE}`,
    ];
    for (const name of queueNames) {
      const queueId = of('AWS::SQS::Queue').find(([, q]) => q.Properties.QueueName === name)?.[0];
      const delivery = of('AWS::SQS::QueuePolicy')
        .filter(([, p]) => (p.Properties.Queues as unknown[]).some((q) => refId(q) === queueId))
        .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement)
        .find((s) => JSON.stringify(s.Principal).includes('events.amazonaws.com'));
      const sourceArns = asList(
        ((delivery?.Condition as Json | undefined)?.ArnLike as Json | undefined)?.['aws:SourceArn'],
      );
      expect(sourceArns, name).toHaveLength(3);
      for (const arn of sourceArns)
        expect(JSON.stringify(arn), name).toContain(`/${topology.bus.ruleNamePrefix}*`);
      expect(importedBuses(sourceArns), name).toEqual(busIds());
    }
  });
});

describe("the operator's response ceiling (crumbs:maxResponseBytes)", () => {
  it('is left to the guard (5 MiB) unless set, and given to every function when it is', () => {
    for (const f of allFunctions()) expect(functionEnv(f.name)[ENV.maxResponseBytes], f.name).toBeUndefined();
    const app = new App({ context: { ...CONTEXT, 'crumbs:maxResponseBytes': 1048576 } });
    const set = Template.fromStack(buildCrumbs(app, readConfig(app.node)).stateless).toJSON()
      .Resources as Record<string, Resource>;
    const functions = Object.values(set).filter((r) => r.Type === 'AWS::Lambda::Function');
    const named = (name: string) =>
      functions.find((r) => r.Properties.FunctionName === `crumbs-${STAGE}-${name}`);
    for (const f of allFunctions()) {
      const variables = (named(f.name)?.Properties.Environment as Json | undefined)?.Variables as
        | Json
        | undefined;
      expect(variables?.[ENV.maxResponseBytes], f.name).toBe('1048576');
    }
  });
});
