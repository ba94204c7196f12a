import { App } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs, type CrumbsStacks } from '#infra/crumbs-app.ts';

/**
 * `crumbs-app.test.ts` checks the environment-agnostic synth; this one checks the synth `cdk deploy` makes once
 * the CLI knows the account and region, where ARNs in the template are literal and cdk-nag sees them so.
 */
let stacks: CrumbsStacks;
/**
 * A pool of 3 buses (every bus's archive, grants and the rule-target policies are checked too), signed in to the
 * stack's own user pool (no issuer given).
 */
let pooled: CrumbsStacks;

const ISSUER_CONTEXT = {
  'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
  'crumbs:jwtAudience': 'crumbs-api',
  'crumbs:workspacesClaim': 'crumbs:workspaces',
};

function synth(extra: Record<string, unknown> = ISSUER_CONTEXT): CrumbsStacks {
  const saved = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  process.env.CDK_DEFAULT_ACCOUNT = '123456789012';
  process.env.CDK_DEFAULT_REGION = 'eu-west-1';
  try {
    const app = new App({
      context: {
        'crumbs:stage': 'prod',
        'crumbs:llmSecretName': 'team.a/llm/',
        'aws:cdk:bundling-stacks': [],
        ...extra,
      },
    });
    const built = buildCrumbs(app, readConfig(app.node));
    app.synth();
    return built;
  } finally {
    if (saved.account === undefined) delete process.env.CDK_DEFAULT_ACCOUNT;
    else process.env.CDK_DEFAULT_ACCOUNT = saved.account;
    if (saved.region === undefined) delete process.env.CDK_DEFAULT_REGION;
    else process.env.CDK_DEFAULT_REGION = saved.region;
  }
}

beforeAll(() => {
  stacks = synth();
  pooled = synth({ 'crumbs:buses': 3 });
  expect(pooled.stateful.userPool).toBeDefined();
});

describe('cdk-nag AwsSolutions with a known account and region', () => {
  it('reports no unsuppressed error and no unacknowledged warning of the app, with one bus and an issuer, and with three and its own user pool', () => {
    expect(pooled.stateful.buses).toHaveLength(3);
    for (const stack of [stacks.stateful, stacks.stateless, pooled.stateful, pooled.stateless]) {
      const annotations = Annotations.fromStack(stack);
      const errors = annotations.findError('*', Match.anyValue());
      expect(errors.map((e) => `${e.id}: ${String(e.entry.data).split('\n')[0]}`)).toEqual([]);
      const warnings = annotations.findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*'));
      expect(warnings.map((w) => `${w.id}: ${String(w.entry.data).split('\n')[0]}`)).toEqual([]);
    }
  });
});
