/** The attachments of this stage, as the environment names them (`CRUMBS_BLOB_BUCKET`); undefined without a bucket. */
import { Attachments } from './attachments.ts';
import { attachmentLimitsFromEnv } from './reference.ts';
import { blobStoreFromEnv } from './s3-blob-store.ts';

export function attachmentsFromEnv(env: NodeJS.ProcessEnv = process.env): Attachments | undefined {
  const blobs = blobStoreFromEnv(env);
  return blobs ? new Attachments({ blobs, limits: attachmentLimitsFromEnv(env) }) : undefined;
}
