/**
 * Destroy, deploy again, change: what the synthesized templates must hold so that `cdk destroy` then `cdk deploy`
 * of the same stage succeeds, the same stage deploys in two regions of one account, and shrinking `crumbs:buses`
 * is a change CloudFormation can apply.
 */
import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { topology } from '#shared/topology.ts';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties?: Json;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  DependsOn?: string[];
}
interface Template {
  Resources: Record<string, Resource>;
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>;
}

const STAGE = 'teardown';
const CONTEXT = {
  'crumbs:stage': STAGE,
  'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
  'crumbs:jwtAudience': 'crumbs-api',
  'crumbs:workspacesClaim': 'crumbs:workspaces',
  'aws:cdk:bundling-stacks': [],
};

function synth(context: Json = {}, env?: { account: string; region: string }) {
  const saved = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  if (env) {
    process.env.CDK_DEFAULT_ACCOUNT = env.account;
    process.env.CDK_DEFAULT_REGION = env.region;
  }
  try {
    const app = new App({ context: { ...CONTEXT, ...context } });
    const stacks = buildCrumbs(app, readConfig(app.node));
    const assembly = app.synth();
    return {
      stateful: assembly.getStackByName(stacks.stateful.stackName).template as Template,
      stateless: assembly.getStackByName(stacks.stateless.stackName).template as Template,
    };
  } finally {
    for (const [key, value] of [
      ['CDK_DEFAULT_ACCOUNT', saved.account],
      ['CDK_DEFAULT_REGION', saved.region],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

const resources = (...templates: Template[]) => templates.flatMap((t) => Object.entries(t.Resources));

/** Every export name a template's Fn::ImportValue reads. */
function imports(template: Template): Set<string> {
  return new Set(
    [...JSON.stringify(template).matchAll(/"Fn::ImportValue":"([^"]+)"/g)].map((m) => m[1] as string),
  );
}

function exportsOf(template: Template): Set<string> {
  return new Set(
    Object.values(template.Outputs ?? {})
      .map((o) => o.Export?.Name)
      .filter((n): n is string => typeof n === 'string'),
  );
}

let plain: ReturnType<typeof synth>;
let retained: ReturnType<typeof synth>;

beforeAll(() => {
  plain = synth();
  retained = synth({ 'crumbs:retainData': true });
});

describe('cdk destroy, then cdk deploy of the same stage', () => {
  it('keeps nothing by default: no resource is retained, the table has no deletion protection', () => {
    const kept = resources(plain.stateful, plain.stateless).filter(
      ([, r]) => r.DeletionPolicy === 'Retain' || r.UpdateReplacePolicy === 'Retain',
    );
    expect(kept.map(([id, r]) => `${id} ${r.Type}`)).toEqual([]);
    const [, table] = resources(plain.stateful).find(([, r]) => r.Type === 'AWS::DynamoDB::Table') ?? [];
    expect(table?.Properties?.DeletionProtectionEnabled).toBe(false);
  });

  it('with crumbs:retainData keeps the table (deletion protection on) and the log groups, each by a fixed name CloudFormation can import', () => {
    const kept = resources(retained.stateful, retained.stateless).filter(
      ([, r]) => r.DeletionPolicy === 'Retain',
    );
    const types = new Set(kept.map(([, r]) => r.Type));
    expect(types).toEqual(new Set(['AWS::DynamoDB::Table', 'AWS::Logs::LogGroup', 'AWS::S3::Bucket']));
    // The next deploy adopts what has a fixed name (cdk deploy --import-existing-resources); a kept log group named
    // by CloudFormation or after a resource made anew (an API's id) collides with nothing.
    const fixed = kept.filter(([, r]) => {
      const name = r.Type === 'AWS::DynamoDB::Table' ? r.Properties?.TableName : r.Properties?.LogGroupName;
      return name !== undefined && !/Fn::GetAtt|"Ref":"(?!AWS::)/.test(JSON.stringify(name));
    });
    expect(fixed.map(([, r]) => r.Type)).toContain('AWS::DynamoDB::Table');
    expect(fixed.filter(([, r]) => r.Type === 'AWS::Logs::LogGroup').length).toBeGreaterThan(10);
    const [, table] = resources(retained.stateful).find(([, r]) => r.Type === 'AWS::DynamoDB::Table') ?? [];
    expect(table?.Properties?.DeletionProtectionEnabled).toBe(true);
    expect(table?.Properties?.TableName).toBe(`${topology.table.name}-${STAGE}`);
    // The blob bucket is kept with the table, under a name of the stage, account and region.
    const [, bucket] = kept.find(([, r]) => r.Type === 'AWS::S3::Bucket') ?? [];
    expect(JSON.stringify(bucket?.Properties?.BucketName)).toContain(
      `${topology.blobs.bucketName}-${STAGE}-`,
    );
  });

  it("empties every bus of the rule manager's rules before CloudFormation deletes it", () => {
    const buses = resources(plain.stateful).filter(([, r]) => r.Type === 'AWS::Events::EventBus');
    const sweeps = resources(plain.stateful).filter(([, r]) => r.Type === 'Custom::CrumbsBusSweep');
    expect(sweeps).toHaveLength(buses.length);
    for (const [busId, bus] of buses) {
      const sweep = sweeps.find(([, s]) => s.Properties?.EventBusName === bus.Properties?.Name);
      expect(sweep, busId).toBeDefined();
      expect(sweep?.[1].DependsOn, busId).toContain(busId);
      expect(sweep?.[1].Properties?.RulePrefix).toBe(topology.bus.ruleNamePrefix);
    }
  });
});

describe('names that must be unique per account', () => {
  it('puts the region into every IAM role name the stacks choose, so a stage deploys in two regions', () => {
    for (const region of ['eu-west-1', 'us-east-1']) {
      const t = synth({}, { account: '111111111111', region });
      const named = resources(t.stateful, t.stateless).filter(
        ([, r]) => r.Type === 'AWS::IAM::Role' && r.Properties?.RoleName !== undefined,
      );
      expect(named.length).toBeGreaterThan(0);
      for (const [id, r] of named) {
        const name = String(r.Properties?.RoleName);
        expect(name, id).toContain(region);
        expect(name.length, id).toBeLessThanOrEqual(64);
      }
    }
  });

  it('puts the region into role names of an environment-agnostic synth too', () => {
    const named = resources(plain.stateful, plain.stateless).filter(
      ([, r]) => r.Type === 'AWS::IAM::Role' && r.Properties?.RoleName !== undefined,
    );
    for (const [id, r] of named) expect(JSON.stringify(r.Properties?.RoleName), id).toContain('AWS::Region');
  });
});

describe('going from 5 buses to 3', () => {
  let five: ReturnType<typeof synth>;
  let three: ReturnType<typeof synth>;

  beforeAll(() => {
    five = synth({ 'crumbs:buses': 5 });
    three = synth({ 'crumbs:buses': 3 });
  });

  it('removes no export the deployed stateless stack still imports (the stateful stack is updated first)', () => {
    const removed = [...exportsOf(five.stateful)].filter((e) => !exportsOf(three.stateful).has(e));
    const stillImported = removed.filter((e) => imports(five.stateless).has(e));
    expect(stillImported).toEqual([]);
    // And the new stateless stack imports only what the new stateful stack exports.
    for (const name of imports(three.stateless)) expect(exportsOf(three.stateful)).toContain(name);
    // The buses are not imported at all: the stateless stack names them.
    expect(JSON.stringify(five.stateless)).not.toMatch(/"Fn::ImportValue":"[^"]*Bus/);
  });

  it('deletes buses 4 and 5 after sweeping their rules, and keeps the logical ids of buses 1 to 3', () => {
    const ids = (t: Template, type: string) =>
      new Set(
        Object.entries(t.Resources)
          .filter(([, r]) => r.Type === type)
          .map(([id]) => id),
      );
    const busesFive = ids(five.stateful, 'AWS::Events::EventBus');
    const busesThree = ids(three.stateful, 'AWS::Events::EventBus');
    for (const id of busesThree) expect(busesFive).toContain(id);
    const gone = [...busesFive].filter((id) => !busesThree.has(id));
    expect(gone).toHaveLength(2);
    const sweepsThree = ids(three.stateful, 'Custom::CrumbsBusSweep');
    for (const busId of gone) {
      const sweep = Object.entries(five.stateful.Resources).find(
        ([, r]) => r.Type === 'Custom::CrumbsBusSweep' && r.DependsOn?.includes(busId),
      );
      expect(sweep, busId).toBeDefined();
      // The sweep leaves the template with its bus: CloudFormation runs its Delete (the sweep) before the bus's.
      expect(sweepsThree.has(sweep?.[0] ?? '')).toBe(false);
    }
  });

  it("grants the sweeper rule removal on every bus of the pool it sweeps, under the rule manager's prefix only", () => {
    const policies = Object.values(five.stateful.Resources).filter((r) => r.Type === 'AWS::IAM::Policy');
    const statement = policies
      .flatMap((p) => (p.Properties?.PolicyDocument as { Statement: Json[] } | undefined)?.Statement ?? [])
      .find((s) => s.Sid === 'SweepOwnRules');
    const arns = JSON.stringify(statement?.Resource);
    for (let i = 1; i <= 5; i++) {
      const bus = i === 1 ? `crumbs-${STAGE}` : `crumbs-${STAGE}.${i}`;
      expect(arns).toContain(`:rule/${bus}/${topology.bus.ruleNamePrefix}*`);
    }
  });
});
