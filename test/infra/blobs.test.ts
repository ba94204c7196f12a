/**
 * The attachments room on AWS, in the synthesized templates: one blob bucket per stage (encrypted, public access
 * blocked, TLS only, staged uploads and their markers expired by lifecycle rules), its name handed to exactly the
 * functions whose topology uses it, and S3 access scoped to the prefixes crumbs writes — read-only where only read.
 */
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { readConfig } from '#infra/config.ts';
import { buildCrumbs } from '#infra/crumbs-app.ts';
import { ENV_ATTACHMENTS } from '#shared/rooms/attachments/reference.ts';
import { topology } from '#shared/topology.ts';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

const CONTEXT = {
  'crumbs:stage': 'blobs',
  'crumbs:jwtIssuer': 'https://issuer.example.com/pool',
  'crumbs:jwtAudience': 'crumbs-api',
  'aws:cdk:bundling-stacks': [],
};

function synth() {
  const app = new App({ context: CONTEXT });
  const stacks = buildCrumbs(app, readConfig(app.node));
  const assembly = app.synth();
  const resources = (name: string) =>
    assembly.getStackByName(name).template.Resources as Record<string, Resource>;
  return { stateful: resources(stacks.stateful.stackName), stateless: resources(stacks.stateless.stackName) };
}

const { stateful, stateless } = synth();
const of = (resources: Record<string, Resource>, type: string) =>
  Object.entries(resources).filter(([, r]) => r.Type === type);

function fnNamed(name: string): [string, Resource] {
  const found = of(stateless, 'AWS::Lambda::Function').find(
    ([, r]) => r.Properties.FunctionName === `crumbs-blobs-${name}`,
  );
  if (!found) throw new Error(`no function ${name}`);
  return found;
}

/** Every statement of the policies attached to a function's role. */
function statementsOf(name: string): Json[] {
  const role = JSON.stringify((fnNamed(name)[1].Properties.Role as Json)['Fn::GetAtt']);
  return of(stateless, 'AWS::IAM::Policy')
    .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(JSON.parse(role)[0]))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement);
}

const s3Actions = (name: string) =>
  statementsOf(name)
    .flatMap((s) => [s.Action].flat() as string[])
    .filter((a) => a.startsWith('s3:'))
    .sort();

describe('the blob bucket', () => {
  it('is encrypted, blocks public access, takes TLS only and expires staged uploads', () => {
    const buckets = of(stateful, 'AWS::S3::Bucket');
    expect(buckets).toHaveLength(1);
    const bucket = buckets[0]![1].Properties;
    expect(bucket.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    expect(bucket.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const rules = (bucket.LifecycleConfiguration as { Rules: Json[] }).Rules;
    expect(rules).toContainEqual(
      expect.objectContaining({
        Prefix: 'staging/',
        ExpirationInDays: topology.blobs.stagingExpiryDays,
        Status: 'Enabled',
      }),
    );
    expect(rules).toContainEqual(expect.objectContaining({ Prefix: 'finalized/', Status: 'Enabled' }));
    const policy = of(stateful, 'AWS::S3::BucketPolicy')[0]![1].Properties.PolicyDocument as {
      Statement: Json[];
    };
    expect(policy.Statement).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
  });

  it('is named to and granted to the functions that use it, read-only where they only read', () => {
    for (const name of ['api', 'executor-agent', 'mcp', 'a2a']) {
      expect(
        Object.keys((fnNamed(name)[1].Properties.Environment as { Variables: Json }).Variables),
      ).toContain(ENV_ATTACHMENTS.bucket);
      expect(s3Actions(name)).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
    }
    for (const name of ['rule-manager', 'indexer'])
      expect(s3Actions(name)).toEqual(['s3:GetObject', 's3:ListBucket']);
    for (const name of ['publisher', 'ui', 'authorizer']) {
      expect(s3Actions(name)).toEqual([]);
      const env =
        (fnNamed(name)[1].Properties.Environment as { Variables?: Json } | undefined)?.Variables ?? {};
      expect(Object.keys(env)).not.toContain(ENV_ATTACHMENTS.bucket);
    }
    const objects = statementsOf('api').find((s) => s.Sid === 'ReadWriteBlobs')!;
    expect(JSON.stringify(objects.Resource)).toMatch(/\/ws\/\*/);
    expect(JSON.stringify(objects.Resource)).not.toMatch(/"\/\*"/);
  });
});
