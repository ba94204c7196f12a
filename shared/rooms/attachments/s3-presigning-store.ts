/**
 * The S3 blob store with presigned requests: a POST whose policy fixes key, media type and size range, and a GET.
 * Only the functions that serve uploads and downloads (the API, MCP, A2A) load the presigners.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { PresignedUpload, PresigningBlobStore } from './blob-store.ts';
import { ENV_ATTACHMENTS } from './reference.ts';
import { defaultS3Client, S3BlobStore } from './s3-blob-store.ts';

export class S3PresigningBlobStore extends S3BlobStore implements PresigningBlobStore {
  async presignUpload(
    key: string,
    options: { mediaType: string; maxBytes: number; expiresSeconds: number },
  ): Promise<PresignedUpload> {
    const { url, fields } = await createPresignedPost(this.client, {
      Bucket: this.bucket,
      Key: key,
      Fields: { 'Content-Type': options.mediaType },
      Conditions: [
        ['eq', '$key', key],
        ['eq', '$Content-Type', options.mediaType],
        ['content-length-range', 1, options.maxBytes],
      ],
      Expires: options.expiresSeconds,
    });
    return { url, fields, expiresAt: new Date(Date.now() + options.expiresSeconds * 1000).toISOString() };
  }

  async presignDownload(
    key: string,
    options: { expiresSeconds: number; fileName?: string },
  ): Promise<string> {
    return getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ...(options.fileName
          ? {
              ResponseContentDisposition: `attachment; filename="${options.fileName.replace(/["\\\r\n]/g, '_')}"`,
            }
          : {}),
      }),
      { expiresIn: options.expiresSeconds },
    );
  }
}

/** The presigning blob store the environment names, or undefined when the stage has none. */
export function presigningBlobStoreFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): S3PresigningBlobStore | undefined {
  const bucket = env[ENV_ATTACHMENTS.bucket];
  return bucket ? new S3PresigningBlobStore({ bucket, client: defaultS3Client(env) }) : undefined;
}
