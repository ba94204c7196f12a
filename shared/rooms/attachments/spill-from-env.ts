/**
 * Spilling of large contexts to the environment's blob store (`CRUMBS_BLOB_BUCKET`); undefined without a bucket.
 * Apart from `from-env.ts` so the store does not load what uploads need (`file-type`).
 */
import { attachmentLimitsFromEnv } from './reference.ts';
import { blobStoreFromEnv } from './s3-blob-store.ts';
import { ContextSpill } from './spill.ts';

export function contextSpillFromEnv(env: NodeJS.ProcessEnv = process.env): ContextSpill | undefined {
  const blobs = blobStoreFromEnv(env);
  return blobs ? new ContextSpill(blobs, attachmentLimitsFromEnv(env)) : undefined;
}
