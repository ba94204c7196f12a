/**
 * Attachments, the whole vocabulary on one page: the reference a context holds, where a blob lives, the limits and
 * the media types crumbs accepts. No IO.
 *
 * - A context refers to a file with `{"$attachment": {id, media_type, bytes, sha256, name}}`. The id is the blob's
 *   content address (`att_<sha256 hex>`), so the same bytes are one blob per workspace whatever their names.
 * - Blobs live under their workspace's prefix: `ws/<workspace>/blobs/<sha256>`; staged uploads (presigned POST) under
 *   `staging/<workspace>/<upload id>`, which a lifecycle rule expires after a day (a half-finished upload leaves
 *   nothing referenced; one prefix, because a lifecycle filter cannot match a middle segment); a finalized upload
 *   leaves `finalized/<workspace>/<upload id>`, written only if absent, so a staged upload is accepted once.
 * - A context too large for an item is spilled to a blob of media type `application/vnd.crumbs.context+json`
 *   (`spill.ts`); the record then holds `{"$spilled": <reference>}` in place of its context.
 */
import { createHash } from 'node:crypto';
import * as z from '#shared/domain/zod.ts';
import { ENV } from '#shared/topology.ts';

export const ATTACHMENT_KEY = '$attachment';
export const SPILLED_KEY = '$spilled';
export const SPILLED_MEDIA_TYPE = 'application/vnd.crumbs.context+json';

const MB = 1024 * 1024;

/** Operator limits; `attachmentLimitsFromEnv` reads the overrides (`CRUMBS_ATTACHMENT_*`). */
export interface AttachmentLimits {
  /** The largest upload (either way); the presigned POST's `content-length-range` ends here. */
  readonly maxUploadBytes: number;
  /**
   * Bytes sent inside an API request (base64 in JSON): a Lambda request carries at most 6 MB, and base64 grows by
   * a third. Larger files go through a presigned POST.
   */
  readonly maxInlineUploadBytes: number;
  /** Bytes answered inside an API response; larger downloads are a presigned GET (a Lambda answer ≤ 6 MB). */
  readonly maxInlineDownloadBytes: number;
  /** A context larger than this is refused, naming the limit; between the inline threshold and this, it spills. */
  readonly maxContextBytes: number;
  /** Contexts serialized above this are stored as a blob and the item holds the reference (claim check). */
  readonly inlineContextBytes: number;
  /** How long a presigned POST or GET stays usable. */
  readonly presignSeconds: number;
}

export const DEFAULT_ATTACHMENT_LIMITS: AttachmentLimits = Object.freeze({
  maxUploadBytes: 50 * MB,
  maxInlineUploadBytes: 4 * MB,
  maxInlineDownloadBytes: 4 * MB,
  maxContextBytes: 50 * MB,
  // Well below the 350 KB a context may take in an item: the rest of the record (title, tags, hints) and the
  // version items' bookkeeping stay far from DynamoDB's 400 KB, and an event that carries the context stays small.
  inlineContextBytes: 96 * 1024,
  presignSeconds: 300,
});

/** The attachments room's environment variables (named in the topology's `ENV`, as every crumbs variable). */
export const ENV_ATTACHMENTS = {
  bucket: ENV.blobBucket,
  pathStyle: ENV.blobPathStyle,
  maxUploadBytes: ENV.attachmentMaxUploadBytes,
  maxContextBytes: ENV.attachmentMaxContextBytes,
  localBlobsPort: ENV.localBlobsPort,
} as const;

export function attachmentLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): AttachmentLimits {
  const n = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`environment: ${name} must be a positive whole number of bytes, got ${raw}`);
    }
    return value;
  };
  return Object.freeze({
    ...DEFAULT_ATTACHMENT_LIMITS,
    maxUploadBytes: n(ENV_ATTACHMENTS.maxUploadBytes, DEFAULT_ATTACHMENT_LIMITS.maxUploadBytes),
    maxContextBytes: n(ENV_ATTACHMENTS.maxContextBytes, DEFAULT_ATTACHMENT_LIMITS.maxContextBytes),
  });
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;
export const ATTACHMENT_ID_PATTERN = /^att_[0-9a-f]{64}$/;
export const UPLOAD_ID_PATTERN = /^up_[0-9A-Za-z_-]{22,43}$/;

export const AttachmentRefSchema = z.object({
  id: z.string().check(z.regex(ATTACHMENT_ID_PATTERN, 'expected an attachment id like att_<sha256 hex>')),
  media_type: z.string().check(z.minLength(3), z.maxLength(127)),
  bytes: z.number().check(z.int(), z.minimum(0)),
  sha256: z.string().check(z.regex(SHA256_HEX, 'expected 64 lowercase hex digits')),
  name: z.optional(z.string().check(z.maxLength(255))),
});
export type AttachmentRef = z.infer<typeof AttachmentRefSchema>;

export function attachmentId(sha256: string): string {
  return `att_${sha256}`;
}

export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function blobKey(workspace: string, sha256: string): string {
  return `ws/${workspace}/blobs/${sha256}`;
}

export const STAGING_PREFIX = 'staging/';
export const FINALIZED_PREFIX = 'finalized/';

export function stagingKey(workspace: string, uploadId: string): string {
  return `${STAGING_PREFIX}${workspace}/${uploadId}`;
}

export function finalizedKey(workspace: string, uploadId: string): string {
  return `${FINALIZED_PREFIX}${workspace}/${uploadId}`;
}

export function workspacePrefix(workspace: string): string {
  return `ws/${workspace}/`;
}

/** The sha256 an attachment id names, or undefined when it is not one. */
export function shaOfId(id: string): string | undefined {
  return ATTACHMENT_ID_PATTERN.test(id) ? id.slice(4) : undefined;
}

/** `{"$attachment": {...}}` → the reference; anything else → undefined. */
export function asAttachment(value: unknown): AttachmentRef | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== ATTACHMENT_KEY) return undefined;
  const parsed = AttachmentRefSchema.safeParse((value as Record<string, unknown>)[ATTACHMENT_KEY]);
  return parsed.success ? parsed.data : undefined;
}

/** Every attachment reference in a value, depth first, in document order, with its JSON path. */
export function findAttachments(value: unknown, path = '$'): { path: string; ref: AttachmentRef }[] {
  const ref = asAttachment(value);
  if (ref) return [{ path, ref }];
  if (Array.isArray(value)) return value.flatMap((v, i) => findAttachments(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => findAttachments(v, `${path}.${k}`));
  }
  return [];
}

/**
 * Media types crumbs stores, and what their bytes must begin with. Binary types are checked by their magic numbers
 * (`file-type`); text types carry none, so their bytes must be UTF-8 without NUL. Anything else is refused: a
 * type that nobody downstream reads is only a way to park bytes.
 */
export const MEDIA_TYPES = {
  image: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'],
  document: [
    'application/pdf',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ],
  text: ['text/plain', 'text/csv', 'text/markdown', 'text/html', 'application/json', SPILLED_MEDIA_TYPE],
  audio: ['audio/mpeg', 'audio/wav', 'audio/ogg', 'audio/flac'],
  video: ['video/mp4', 'video/webm', 'video/quicktime'],
} as const;

export type MediaKind = keyof typeof MEDIA_TYPES;

export function mediaKind(mediaType: string): MediaKind | undefined {
  for (const [kind, types] of Object.entries(MEDIA_TYPES) as [MediaKind, readonly string[]][]) {
    if (types.includes(mediaType)) return kind;
  }
  return undefined;
}

/** `file-type` names some types differently from what clients send. */
export const DETECTED_ALIASES: Record<string, string> = {
  'audio/x-wav': 'audio/wav',
  'audio/wave': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'audio/x-flac': 'audio/flac',
};

export const ALL_MEDIA_TYPES: readonly string[] = Object.values(MEDIA_TYPES).flat();
