/** The attachments of this stage, as the environment names them (`CRUMBS_BLOB_BUCKET`); undefined without a bucket. */
import { Attachments } from './attachments.ts';
import { attachmentLimitsFromEnv } from './reference.ts';
import { presigningBlobStoreFromEnv } from './s3-presigning-store.ts';

export function attachmentsFromEnv(env: NodeJS.ProcessEnv = process.env): Attachments | undefined {
  const blobs = presigningBlobStoreFromEnv(env);
  return blobs ? new Attachments({ blobs, limits: attachmentLimitsFromEnv(env) }) : undefined;
}
