/**
 * The stage's vector engine on AWS: one S3 Vectors bucket and one index for the embedding model (cosine, float32, the
 * model's dimensions, named after the model), the functions that search granted QueryVectors/GetVectors on that index
 * only, the indexer alone PutVectors, the indexer and the API (a person's "forget") DeleteVectors, every such function told the engine, bucket and index prefix.
 * Embeddings off: no bucket, no index, no grant.
 */
import { describe, expect, it } from 'vitest';
import { vectorIndexName } from '#shared/adapters/vectors/s3-vectors-engine.ts';
import { ENV } from '#shared/topology.ts';
import { type Json, type Resource, statelessResources } from '../support/synth.ts';

const stateless = (context: Json = {}) => statelessResources('vec', context);

function vectorGrants(
  resources: Record<string, Resource>,
): Map<string, { actions: string[]; resource: unknown }> {
  // Role logical id → its StageVectorIndex statement; then role → function name.
  const byRole = new Map<string, { actions: string[]; resource: unknown }>();
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::IAM::Policy') continue;
    const statements = (r.Properties.PolicyDocument as { Statement: Json[] }).Statement;
    const s = statements.find((x) => x.Sid === 'StageVectorIndex');
    const roles = r.Properties.Roles as Array<{ Ref: string }>;
    if (s && roles[0])
      byRole.set(roles[0].Ref, { actions: [s.Action as string[]].flat(), resource: s.Resource });
  }
  const byFunction = new Map<string, { actions: string[]; resource: unknown }>();
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::Lambda::Function') continue;
    const role = (r.Properties.Role as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0] ?? '';
    const grant = byRole.get(role);
    if (grant) byFunction.set(String(r.Properties.FunctionName), grant);
  }
  return byFunction;
}

describe('the vector store of a stage', () => {
  it('holds one S3 Vectors bucket and one cosine index of the model, searched and written only by the functions that need it', () => {
    const resources = stateless();
    const buckets = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::S3Vectors::VectorBucket');
    const indexes = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::S3Vectors::Index');
    expect(buckets).toHaveLength(1);
    expect(indexes).toHaveLength(1);
    const [indexId, index] = indexes[0] ?? ['', { Properties: {} }];
    expect(index.Properties).toMatchObject({
      IndexName: vectorIndexName('crumbs-vec', 'bedrock/amazon.titan-embed-text-v2:0@512'),
      DataType: 'float32',
      Dimension: 512,
      DistanceMetric: 'cosine',
    });

    const grants = vectorGrants(resources);
    const indexer = grants.get('crumbs-vec-indexer');
    expect(indexer?.actions.sort()).toEqual(
      [
        's3vectors:DeleteVectors',
        's3vectors:GetVectors',
        's3vectors:PutVectors',
        's3vectors:QueryVectors',
      ].sort(),
    );
    expect(indexer?.resource).toEqual({ 'Fn::GetAtt': [indexId, 'IndexArn'] });
    // The API deletes a person's vectors when they ask to be forgotten; it never writes one.
    expect(grants.get('crumbs-vec-api')?.actions.sort()).toEqual(
      ['s3vectors:DeleteVectors', 's3vectors:GetVectors', 's3vectors:QueryVectors'].sort(),
    );
    expect(grants.get('crumbs-vec-api')?.resource).toEqual({ 'Fn::GetAtt': [indexId, 'IndexArn'] });
    for (const name of ['crumbs-vec-executor-agent', 'crumbs-vec-executor-context-builder']) {
      const grant = grants.get(name);
      expect(grant?.actions.sort(), name).toEqual(['s3vectors:GetVectors', 's3vectors:QueryVectors']);
      expect(grant?.resource, name).toEqual({ 'Fn::GetAtt': [indexId, 'IndexArn'] });
    }
    // Nobody else reaches the vectors.
    expect([...grants.keys()].filter((n) => n.includes('publisher') || n.includes('rule-manager'))).toEqual(
      [],
    );
    const api = Object.values(resources).find((r) => r.Properties.FunctionName === 'crumbs-vec-api');
    const env = (api?.Properties.Environment as { Variables: Json } | undefined)?.Variables ?? {};
    expect(env[ENV.vectorEngine]).toBe('s3vectors');
    expect(env[ENV.vectorIndexPrefix]).toBe('crumbs-vec');
    expect(env[ENV.vectorBucket]).toBeDefined();
  });

  it('a new embedding model names a new index', () => {
    const resources = stateless({
      'crumbs:embeddings': 'openai-compatible/nomic-embed-text',
      'crumbs:embeddingsBaseUrl': 'https://embeddings.example.com/v1',
    });
    const index = Object.values(resources).find((r) => r.Type === 'AWS::S3Vectors::Index');
    expect(index?.Properties.IndexName).toBe(
      vectorIndexName('crumbs-vec', 'openai-compatible/nomic-embed-text'),
    );
  });

  it('embeddings off: no bucket, no index, no grant', () => {
    const resources = stateless({ 'crumbs:embeddings': 'none' });
    expect(Object.values(resources).filter((r) => r.Type.startsWith('AWS::S3Vectors::'))).toEqual([]);
    expect(vectorGrants(resources).size).toBe(0);
  });
});
