/**
 * The stage's blob bucket (the attachments room, `shared/rooms/attachments/`): attachments and contexts too large
 * for an item, keys under `ws/<workspace>/`; staged uploads under `staging/<workspace>/`, upload markers under
 * `finalized/<workspace>/`. Encrypted (S3-managed keys), public access blocked, TLS only, objects owned by the
 * bucket owner; a lifecycle rule removes staged uploads and markers a day after they were written (a half-finished
 * upload leaves nothing), and incomplete multipart uploads. Blobs themselves are removed when no breadcrumb refers to
 * them and when their workspace is deleted: S3 lifecycle rules cannot see the table.
 */
import { Aws, Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  HttpMethods,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { FINALIZED_PREFIX, STAGING_PREFIX } from '#shared/rooms/attachments/reference.ts';
import { topology } from '#shared/topology.ts';

export interface BlobBucketProps {
  /** Deployment stage: part of the bucket's name when it is kept. */
  readonly stage: string;
  /**
   * Keep the bucket (and its blobs) when the stage is destroyed (`crumbs:retainData`), as the table is kept.
   * @default false
   */
  readonly retainData?: boolean;
}

export class BlobBucket extends Construct {
  public readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props: BlobBucketProps) {
    super(scope, id);
    const expiry = Duration.days(topology.blobs.stagingExpiryDays);
    this.bucket = new Bucket(this, 'Bucket', {
      // Kept, it needs a fixed name for the next deploy to adopt it (bucket names are global: account and region).
      ...(props.retainData === true
        ? { bucketName: `${topology.blobs.bucketName}-${props.stage}-${Aws.ACCOUNT_ID}-${Aws.REGION}` }
        : {}),
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // Browsers upload with the presigned POST and read with the presigned GET (the dashboard shows images).
      cors: [
        { allowedMethods: [HttpMethods.POST, HttpMethods.GET], allowedOrigins: ['*'], allowedHeaders: ['*'] },
      ],
      lifecycleRules: [
        { id: 'staged-uploads', prefix: STAGING_PREFIX, expiration: expiry },
        { id: 'upload-markers', prefix: FINALIZED_PREFIX, expiration: expiry },
        { id: 'incomplete-multipart', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy: props.retainData === true ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    NagSuppressions.addResourceSuppressions(this.bucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          'Every read and write of a blob is made by a crumbs function (logged with the workspace and the breadcrumb) ' +
          'or through a presigned URL that function handed out; server access logs would add a second bucket per stage.',
      },
    ]);
  }
}
