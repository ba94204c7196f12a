import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { ENV, EXECUTOR_RUNNERS, TENANT_LIMITS, topology } from '#shared/topology.ts';

const STAGE = 'test';
const CONTEXT = {
  'crumbs:stage': STAGE,
  'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
  'crumbs:jwtAudience': 'crumbs-api',
  'crumbs:workspacesClaim': 'crumbs:workspaces',
  'aws:cdk:bundling-stacks': [],
};

type Json = Record<string, unknown>;

function synth(extra: Json = {}) {
  const app = new App({ context: { ...CONTEXT, ...extra } });
  const stacks = buildCrumbs(app, readConfig(app.node));
  const resources = Template.fromStack(stacks.stateless).toJSON().Resources as Record<
    string,
    { Type: string; Properties: Json }
  >;
  const env = (name: string): Json => {
    const fn = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.FunctionName === `crumbs-${STAGE}-${name}`,
    );
    if (!fn) throw new Error(`no function ${name}`);
    return ((fn.Properties.Environment as Json | undefined)?.Variables ?? {}) as Json;
  };
  return { resources, env };
}

describe('tenant limits in the template', () => {
  const { resources, env } = synth();

  it('keeps executor queues standard queues: fair queues are standard queues whose messages carry a group', () => {
    for (const runner of EXECUTOR_RUNNERS) {
      const name = `${topology.functions.executors[runner].trigger.queue.name}-${STAGE}`;
      const queue = Object.values(resources).find(
        (r) => r.Type === 'AWS::SQS::Queue' && r.Properties.QueueName === name,
      );
      expect(queue, runner).toBeDefined();
      expect(queue?.Properties.FifoQueue, runner).toBeUndefined();
    }
  });

  it("gives every executor its workspace's in-flight cap and the timeout ceiling", () => {
    for (const runner of EXECUTOR_RUNNERS) {
      expect(env(`executor-${runner}`), runner).toMatchObject({
        [ENV.workspaceInFlight]: String(TENANT_LIMITS.inFlightPerWorkspace),
        [ENV.workspaceInFlightGraceMs]: String(TENANT_LIMITS.inFlightGraceMs),
        [ENV.timeoutCeilingMs]: String(TENANT_LIMITS.timeoutCeilingMs),
      });
    }
  });

  it('gives the publisher (and the executors, which drop a spent thread) the breadth budget and the rule manager the timeout ceiling', () => {
    expect(env('publisher')).toMatchObject({
      [ENV.threadBudget]: String(TENANT_LIMITS.threadBudget),
      [ENV.workspaceEventRate]: String(TENANT_LIMITS.workspaceEventRate),
      [ENV.workspaceEventWindowSeconds]: String(TENANT_LIMITS.workspaceEventWindowSeconds),
    });
    expect(env('rule-manager')[ENV.timeoutCeilingMs]).toBe(String(TENANT_LIMITS.timeoutCeilingMs));
    expect(env('api')[ENV.threadBudget]).toBeUndefined();
    expect(env('executor-agent-sandbox')[ENV.threadBudget]).toBe(String(TENANT_LIMITS.threadBudget));
  });

  it('takes the operator limits from crumbs:tenantLimits, and refuses an unknown one', () => {
    const custom = synth({ 'crumbs:tenantLimits': { threadBudget: 250, inFlightPerWorkspace: 8 } });
    expect(custom.env('publisher')[ENV.threadBudget]).toBe('250');
    expect(custom.env('executor-tool')[ENV.threadBudget]).toBe('250');
    expect(custom.env('executor-agent')[ENV.workspaceInFlight]).toBe('8');
    expect(() => synth({ 'crumbs:tenantLimits': { threadBugdet: 1 } })).toThrow(/no limit "threadBugdet"/);
  });
});
