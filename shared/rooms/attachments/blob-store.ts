/**
 * The blob store port: bytes under keys, with the two presigned forms a client uses to move large files without
 * passing through a Lambda. One adapter (`s3-blob-store.ts`): S3 on AWS, and under `crumbs dev` the local store
 * (`local/blobs/`), which speaks the same S3 requests and checks presigned POST policies and GET signatures as S3
 * does. Tests use the same adapter against the local store.
 */

export interface BlobHead {
  bytes: number;
  mediaType: string | undefined;
  /** `x-amz-meta-*` as stored (lower-case names without the prefix). */
  metadata: Record<string, string>;
}

export interface PresignedUpload {
  /** POST a multipart form here: the fields first, then `file`. */
  url: string;
  fields: Record<string, string>;
  expiresAt: string;
}

export interface BlobStore {
  /** Writes the bytes; with `ifAbsent`, resolves false (writes nothing) when the key exists already. */
  put(
    key: string,
    bytes: Uint8Array,
    options: { mediaType: string; metadata?: Record<string, string>; ifAbsent?: boolean },
  ): Promise<boolean>;
  /** The bytes, or undefined when there is no such key. */
  get(key: string): Promise<Uint8Array | undefined>;
  head(key: string): Promise<BlobHead | undefined>;
  delete(key: string): Promise<void>;
  /** Keys under a prefix, page by page. */
  list(prefix: string): AsyncIterable<{ key: string; bytes: number }>;
}

/**
 * A blob store that also hands out presigned requests (uploads and downloads by clients). Apart from `BlobStore`
 * so the functions that only spill and read contexts do not load the presigners.
 */
export interface PresigningBlobStore extends BlobStore {
  /**
   * A presigned POST whose policy fixes the key, the media type and `1..maxBytes` bytes: the storage itself refuses
   * anything else (a presigned PUT cannot cap the size).
   */
  presignUpload(
    key: string,
    options: { mediaType: string; maxBytes: number; expiresSeconds: number },
  ): Promise<PresignedUpload>;
  /** A presigned GET of one key. */
  presignDownload(key: string, options: { expiresSeconds: number; fileName?: string }): Promise<string>;
}
