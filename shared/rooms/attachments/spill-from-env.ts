/**
 * Spilling of large contexts to the environment's blob store (`CRUMBS_BLOB_BUCKET`); undefined without a bucket.
 * Apart from `from-env.ts` so the store does not load what uploads need (`file-type`).
 */
import { NotFoundError } from '#shared/domain/errors.ts';
import { type AttachmentSource, bucketUri } from './model-input.ts';
import { attachmentLimitsFromEnv, blobKey, ENV_ATTACHMENTS, shaOfId } from './reference.ts';
import { blobStoreFromEnv } from './s3-blob-store.ts';
import { ContextSpill } from './spill.ts';

export function contextSpillFromEnv(env: NodeJS.ProcessEnv = process.env): ContextSpill | undefined {
  const blobs = blobStoreFromEnv(env);
  return blobs ? new ContextSpill(blobs, attachmentLimitsFromEnv(env)) : undefined;
}

/**
 * Where model calls read attachments (`model-input.ts`): the environment's blob store, under the calling workspace
 * only; S3 URIs of the stage's bucket for the models that read S3 themselves. Undefined without a bucket.
 */
export function attachmentSourceFromEnv(env: NodeJS.ProcessEnv = process.env): AttachmentSource | undefined {
  const blobs = blobStoreFromEnv(env);
  if (!blobs) return undefined;
  return {
    async read(workspace, id) {
      const sha = shaOfId(id);
      const bytes = sha === undefined ? undefined : await blobs.get(blobKey(workspace, sha));
      if (!bytes) throw new NotFoundError(`no attachment ${id} in workspace ${workspace}`);
      return bytes;
    },
    // Locally the bucket is the local store's, which no model can reach: bytes are sent instead.
    ...(env[ENV_ATTACHMENTS.pathStyle] === '1' ? {} : { s3Uri: bucketUri(blobs.bucket) }),
  };
}
