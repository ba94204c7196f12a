/**
 * The S3 adapter of the blob store. On AWS: the stage's bucket (`CRUMBS_BLOB_BUCKET`), the function's role. Under
 * `crumbs dev`: the same requests against the local store (`AWS_ENDPOINT_URL_S3`, path-style).
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { BlobHead, BlobStore } from './blob-store.ts';
import { ENV_ATTACHMENTS } from './reference.ts';

export interface S3BlobStoreOptions {
  bucket: string;
  client?: S3Client;
}

let sharedClient: S3Client | undefined;

/** One client per cold start; path-style where the environment asks for it (the local store). */
export function defaultS3Client(env: NodeJS.ProcessEnv = process.env): S3Client {
  sharedClient ??= new S3Client({ forcePathStyle: env[ENV_ATTACHMENTS.pathStyle] === '1' });
  return sharedClient;
}

/** The blob store the environment names, or undefined when the stage has none. */
export function blobStoreFromEnv(env: NodeJS.ProcessEnv = process.env): S3BlobStore | undefined {
  const bucket = env[ENV_ATTACHMENTS.bucket];
  return bucket ? new S3BlobStore({ bucket, client: defaultS3Client(env) }) : undefined;
}

function status(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}

export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  protected readonly client: S3Client;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.client = options.client ?? defaultS3Client();
  }

  async put(
    key: string,
    bytes: Uint8Array,
    options: { mediaType: string; metadata?: Record<string, string>; ifAbsent?: boolean },
  ): Promise<boolean> {
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: bytes,
          ContentType: options.mediaType,
          ...(options.metadata ? { Metadata: options.metadata } : {}),
          // S3 conditional write: 412 when the key exists.
          ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
        }),
      );
      return true;
    } catch (error) {
      if (options.ifAbsent && (status(error) === 412 || status(error) === 409)) return false;
      throw error;
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw error;
    }
  }

  async head(key: string): Promise<BlobHead | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { bytes: out.ContentLength ?? 0, mediaType: out.ContentType, metadata: out.Metadata ?? {} };
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async *list(prefix: string): AsyncIterable<{ key: string; bytes: number }> {
    let token: string | undefined;
    do {
      const out = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const o of out.Contents ?? []) if (o.Key) yield { key: o.Key, bytes: o.Size ?? 0 };
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
  }
}
