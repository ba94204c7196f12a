/**
 * The stage's vector engine on AWS: one S3 Vectors bucket and one index for the stage's embedding model (named by
 * `vectorIndexName`, so a new model gets a new index and its vectors are never compared with the old model's).
 * Every metadata key (`workspace`, `schema_name`, `scope`) stays filterable: queries filter on them inside the
 * search. Access is granted per function by `CrumbsFunction.bindVectors`: QueryVectors and GetVectors to the
 * functions that search (API, executors), PutVectors and DeleteVectors as well to the indexer alone — on this
 * index only. No TTL exists in S3 Vectors: the indexer removes a vector when its breadcrumb is deleted or expires.
 *
 * A part of the stateless stack: the vectors are derived from the table, which stays the truth.
 */
import { Aws } from 'aws-cdk-lib';
import { CfnIndex, CfnVectorBucket } from 'aws-cdk-lib/aws-s3vectors';
import type { Construct } from 'constructs';
import { vectorIndexName } from '#shared/adapters/vectors/s3-vectors-engine.ts';

export interface VectorStoreProps {
  readonly stage: string;
  /** The embedding space of the stage (`embeddingSpace(setting)`). */
  readonly space: { readonly model: string; readonly dimensions: number };
}

export class VectorStore {
  public readonly bucket: CfnVectorBucket;
  public readonly index: CfnIndex;
  public readonly bucketName: string;
  public readonly indexPrefix: string;

  constructor(scope: Construct, props: VectorStoreProps) {
    const stage = props.stage.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
    this.bucketName = `crumbs-${stage}-vectors-${Aws.ACCOUNT_ID}`;
    this.indexPrefix = `crumbs-${stage}`;
    this.bucket = new CfnVectorBucket(scope, 'VectorBucket', { vectorBucketName: this.bucketName });
    this.index = new CfnIndex(scope, 'VectorIndex', {
      vectorBucketName: this.bucketName,
      indexName: vectorIndexName(this.indexPrefix, props.space.model),
      dataType: 'float32',
      dimension: props.space.dimensions,
      distanceMetric: 'cosine',
    });
    this.index.node.addDependency(this.bucket);
  }
}
