/**
 * The S3 Vectors engine against a mocked client (`aws-sdk-client-mock`), in the request and response shapes the
 * S3 Vectors API documents: keys carry the workspace, every query filters on the workspace inside QueryVectors (and
 * the schema and scope when asked), topK is at most 100, pages are followed, distances become scores, and a model
 * names its own index.
 */
import {
  DeleteVectorsCommand,
  PutVectorsCommand,
  QueryVectorsCommand,
  S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { vectorEngineFromEnv } from '#functions/wiring/vector-engine-from-env.ts';
import {
  S3_VECTORS_MAX_K,
  S3VectorsEngine,
  vectorIndexName,
} from '#shared/adapters/vectors/s3-vectors-engine.ts';
import { ENV } from '#shared/topology.ts';

const s3v = mockClient(S3VectorsClient);
const engine = () =>
  new S3VectorsEngine({
    bucketName: 'crumbs-dev-vectors',
    indexFor: (model) => vectorIndexName('crumbs-dev', model),
    client: new S3VectorsClient({ region: 'eu-west-1' }),
  });

beforeEach(() => s3v.reset());

describe('S3VectorsEngine', () => {
  it('puts a vector under <workspace>/<id> with filterable workspace, schema and scope', async () => {
    s3v.on(PutVectorsCommand).resolves({});
    await engine().upsert('bedrock/amazon.titan-embed-text-v2:0@512', {
      id: '01J0AAAA',
      workspace: 'team-a',
      schema_name: 'memory.record.v1',
      scope: 'user-123',
      vector: [0.5, 0.5],
    });
    const input = s3v.commandCalls(PutVectorsCommand)[0]?.args[0].input;
    expect(input?.vectorBucketName).toBe('crumbs-dev-vectors');
    expect(input?.indexName).toBe(vectorIndexName('crumbs-dev', 'bedrock/amazon.titan-embed-text-v2:0@512'));
    expect(input?.vectors).toEqual([
      {
        key: 'team-a/01J0AAAA',
        data: { float32: [0.5, 0.5] },
        metadata: { workspace: 'team-a', schema_name: 'memory.record.v1', scope: 'user-123' },
      },
    ]);
  });

  it('queries with the workspace, schema and scope in the filter, topK capped at 100, pages followed', async () => {
    s3v
      .on(QueryVectorsCommand)
      .resolvesOnce({
        vectors: [{ key: 'team-a/x', distance: 0.1 }],
        distanceMetric: 'cosine',
        nextToken: 'page-2',
      })
      .resolvesOnce({ vectors: [{ key: 'team-a/y', distance: 0.3 }], distanceMetric: 'cosine' });
    const hits = await engine().query('m', {
      workspace: 'team-a',
      schemaName: 'memory.record.v1',
      scope: 'user-123',
      vector: [1, 0],
      k: 500,
    });
    expect(hits.map((h) => h.id)).toEqual(['x', 'y']);
    expect(hits[0]?.score).toBeCloseTo(0.9, 6);
    const calls = s3v.commandCalls(QueryVectorsCommand).map((c) => c.args[0].input);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.topK).toBe(S3_VECTORS_MAX_K);
    expect(calls[0]?.returnDistance).toBe(true);
    expect(calls[0]?.filter).toEqual({
      $and: [
        { workspace: { $eq: 'team-a' } },
        { schema_name: { $eq: 'memory.record.v1' } },
        { scope: { $eq: 'user-123' } },
      ],
    });
    expect(calls[1]?.nextToken).toBe('page-2');
  });

  it('filters on the workspace alone for a workspace-wide query, and drops a key of another workspace', async () => {
    s3v.on(QueryVectorsCommand).resolves({
      vectors: [
        { key: 'team-b/leak', distance: 0 },
        { key: 'team-a/mine', distance: 0.2 },
      ],
      distanceMetric: 'cosine',
    });
    const hits = await engine().query('m', { workspace: 'team-a', vector: [1, 0], k: 5 });
    expect(hits.map((h) => h.id)).toEqual(['mine']);
    expect(s3v.commandCalls(QueryVectorsCommand)[0]?.args[0].input.filter).toEqual({
      workspace: { $eq: 'team-a' },
    });
  });

  it('deletes by the same key', async () => {
    s3v.on(DeleteVectorsCommand).resolves({});
    await engine().remove('m', 'team-a', '01J0AAAA');
    expect(s3v.commandCalls(DeleteVectorsCommand)[0]?.args[0].input).toMatchObject({
      vectorBucketName: 'crumbs-dev-vectors',
      keys: ['team-a/01J0AAAA'],
    });
  });

  it('gives each model its own valid index name', () => {
    const a = vectorIndexName('crumbs-prod', 'bedrock/amazon.titan-embed-text-v2:0@512');
    const b = vectorIndexName('crumbs-prod', 'bedrock/amazon.titan-embed-text-v2:0@1024');
    expect(a).not.toBe(b);
    for (const name of [a, b, vectorIndexName('x', 'openai-compatible/' + 'm'.repeat(200))]) {
      expect(name).toMatch(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/);
    }
  });

  it('is what CRUMBS_VECTOR_ENGINE=s3vectors builds, and refuses it without a bucket', () => {
    expect(
      vectorEngineFromEnv({
        [ENV.vectorEngine]: 's3vectors',
        [ENV.vectorBucket]: 'b',
        [ENV.vectorIndexPrefix]: 'crumbs-dev',
      }).name,
    ).toBe('s3vectors');
    expect(() => vectorEngineFromEnv({ [ENV.vectorEngine]: 's3vectors' })).toThrow(ENV.vectorBucket);
    expect(vectorEngineFromEnv({}).name).toBe('usearch');
  });
});
