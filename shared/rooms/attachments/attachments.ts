/**
 * Attachments of one stage: storing files (in a request, or staged through a presigned POST and finalized once),
 * reading them back, and the checks every file passes — its bytes must be what its media type says (magic numbers,
 * `file-type`), within the per-upload and per-workspace caps. Every key is built from the caller's workspace, so an
 * id or upload id of another workspace names nothing here.
 */
import { randomBytes } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import {
  ConflictError,
  CrumbsError,
  NotFoundError,
  PayloadTooLargeError,
  ValidationError,
} from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';
import type { PresigningBlobStore } from './blob-store.ts';
import {
  ALL_MEDIA_TYPES,
  type AttachmentLimits,
  type AttachmentRef,
  attachmentId,
  blobKey,
  DETECTED_ALIASES,
  FINALIZED_PREFIX,
  finalizedKey,
  MEDIA_TYPES,
  mediaKind,
  SPILLED_MEDIA_TYPE,
  STAGING_PREFIX,
  sha256Of,
  shaOfId,
  stagingKey,
  UPLOAD_ID_PATTERN,
  workspacePrefix,
} from './reference.ts';

/** A workspace's attachments would pass its share of the store: 413, naming the share; nothing is written. */
export class AttachmentQuotaError extends CrumbsError {
  readonly status = 413;
  readonly code = 'attachment-quota-exceeded';
}

const TEXT_TYPES: readonly string[] = MEDIA_TYPES.text;

/** The media type's bytes check: what `file-type` finds must be the declared type; text must be UTF-8 without NUL. */
export async function checkMediaType(
  bytes: Uint8Array,
  declared: string,
  path = 'media_type',
): Promise<void> {
  if (!ALL_MEDIA_TYPES.includes(declared)) {
    throw new ValidationError([
      { path, message: `expected one of ${ALL_MEDIA_TYPES.join(', ')}; got ${JSON.stringify(declared)}` },
    ]);
  }
  const detected = await fileTypeFromBuffer(bytes);
  const found = detected ? (DETECTED_ALIASES[detected.mime] ?? detected.mime) : undefined;
  if (TEXT_TYPES.includes(declared)) {
    const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
    if (found !== undefined || text.includes('\uFFFD') || text.includes('\u0000')) {
      throw new ValidationError([
        {
          path,
          message: `the bytes are not ${declared} text (UTF-8 without NUL)${found ? `: they begin like ${found}` : ''}`,
        },
      ]);
    }
    return;
  }
  if (found !== declared) {
    throw new ValidationError([
      {
        path,
        message: `the bytes are not ${declared}: ${found ? `they begin like ${found}` : 'their first bytes match no known type'}`,
      },
    ]);
  }
}

export interface StagedUpload {
  upload_id: string;
  url: string;
  fields: Record<string, string>;
  expires_at: string;
  max_bytes: number;
}

export interface AttachmentDownload {
  ref: AttachmentRef;
  download_url: string;
  expires_at: string;
  data_base64?: string;
}

export interface AttachmentsOptions {
  blobs: PresigningBlobStore;
  limits: AttachmentLimits;
  /** The most a workspace keeps in blobs. @default 5 GiB */
  maxWorkspaceBytes?: number;
}

export class Attachments {
  readonly blobs: PresigningBlobStore;
  readonly limits: AttachmentLimits;
  private readonly maxWorkspaceBytes: number;

  constructor(options: AttachmentsOptions) {
    this.blobs = options.blobs;
    this.limits = options.limits;
    this.maxWorkspaceBytes = options.maxWorkspaceBytes ?? 5 * 1024 ** 3;
  }

  /** Stores a file of the workspace (the same bytes once) and answers its reference. */
  async store(
    workspace: string,
    bytes: Uint8Array,
    mediaType: string,
    name: string | undefined,
  ): Promise<AttachmentRef> {
    if (bytes.byteLength === 0) throw new ValidationError([{ path: 'data', message: 'the file is empty' }]);
    if (bytes.byteLength > this.limits.maxUploadBytes) throw this.tooLarge(bytes.byteLength);
    await checkMediaType(bytes, mediaType);
    const sha256 = sha256Of(bytes);
    const ref: AttachmentRef = {
      id: attachmentId(sha256),
      media_type: mediaType,
      bytes: bytes.byteLength,
      sha256,
      ...(name !== undefined ? { name: cleanName(name) } : {}),
    };
    const key = blobKey(workspace, sha256);
    if (await this.blobs.head(key)) return ref;
    await this.assertWorkspaceRoom(workspace, bytes.byteLength);
    await this.blobs.put(key, bytes, {
      mediaType,
      metadata: { sha256, ...(ref.name !== undefined ? { name: encodeURIComponent(ref.name) } : {}) },
    });
    return ref;
  }

  /** A presigned POST for one file of at most `bytes` (or the upload cap), under a fresh staging key. */
  async stage(
    workspace: string,
    input: { media_type: string; bytes?: number | undefined },
  ): Promise<StagedUpload> {
    if (!ALL_MEDIA_TYPES.includes(input.media_type) || input.media_type === SPILLED_MEDIA_TYPE) {
      throw new ValidationError([
        { path: 'media_type', message: `expected one of ${ALL_MEDIA_TYPES.join(', ')}` },
      ]);
    }
    const cap = this.limits.maxUploadBytes;
    if (input.bytes !== undefined && input.bytes > cap) throw this.tooLarge(input.bytes);
    const maxBytes = input.bytes ?? cap;
    await this.assertWorkspaceRoom(workspace, maxBytes);
    const uploadId = `up_${randomBytes(18).toString('base64url')}`;
    const presigned = await this.blobs.presignUpload(stagingKey(workspace, uploadId), {
      mediaType: input.media_type,
      maxBytes,
      expiresSeconds: this.limits.presignSeconds,
    });
    return {
      upload_id: uploadId,
      url: presigned.url,
      fields: presigned.fields,
      expires_at: presigned.expiresAt,
      max_bytes: maxBytes,
    };
  }

  /**
   * Accepts a staged upload once: the first finalize marks the upload id as used (a write only if absent) before
   * anything else, so a second one — or a file posted again with the still-valid presigned POST — is refused.
   */
  async finalize(workspace: string, uploadId: string, name: string | undefined): Promise<AttachmentRef> {
    if (!UPLOAD_ID_PATTERN.test(uploadId)) throw new NotFoundError(`no staged upload ${uploadId}`);
    const staged = stagingKey(workspace, uploadId);
    const head = await this.blobs.head(staged);
    if (!head) throw new NotFoundError(`no staged upload ${uploadId} in workspace ${workspace}`);
    const first = await this.blobs.put(finalizedKey(workspace, uploadId), new Uint8Array(), {
      mediaType: 'text/plain',
      ifAbsent: true,
    });
    if (!first) throw new ConflictError(`upload ${uploadId} was finalized already; stage a new upload`);
    try {
      // The policy held the size within the cap; checked again so a store without policies cannot pass more.
      if (head.bytes > this.limits.maxUploadBytes) throw this.tooLarge(head.bytes);
      const bytes = await this.blobs.get(staged);
      if (!bytes) throw new NotFoundError(`no staged upload ${uploadId} in workspace ${workspace}`);
      return await this.store(workspace, bytes, head.mediaType ?? 'binary/octet-stream', name);
    } finally {
      await this.blobs.delete(staged);
    }
  }

  /** The reference of a stored attachment of this workspace (404 for any other). */
  async describe(workspace: string, id: string): Promise<AttachmentRef> {
    const sha256 = shaOfId(id);
    const head = sha256 === undefined ? undefined : await this.blobs.head(blobKey(workspace, sha256));
    if (!head || sha256 === undefined)
      throw new NotFoundError(`no attachment ${id} in workspace ${workspace}`);
    const name = head.metadata.name !== undefined ? decodeURIComponent(head.metadata.name) : undefined;
    return {
      id,
      media_type: head.mediaType ?? 'binary/octet-stream',
      bytes: head.bytes,
      sha256,
      ...(name !== undefined ? { name } : {}),
    };
  }

  /** The bytes of an attachment of this workspace (404 for any other). */
  async read(workspace: string, id: string): Promise<Uint8Array> {
    const sha256 = shaOfId(id);
    const bytes = sha256 === undefined ? undefined : await this.blobs.get(blobKey(workspace, sha256));
    if (!bytes) throw new NotFoundError(`no attachment ${id} in workspace ${workspace}`);
    return bytes;
  }

  /** A presigned GET, with the bytes too when asked for and small enough to travel in a Lambda answer. */
  async download(workspace: string, id: string, withData: boolean): Promise<AttachmentDownload> {
    const ref = await this.describe(workspace, id);
    const download_url = await this.blobs.presignDownload(blobKey(workspace, ref.sha256), {
      expiresSeconds: this.limits.presignSeconds,
      ...(ref.name !== undefined ? { fileName: ref.name } : {}),
    });
    const expires_at = new Date(Date.now() + this.limits.presignSeconds * 1000).toISOString();
    const data =
      withData && ref.bytes <= this.limits.maxInlineDownloadBytes
        ? Buffer.from(await this.read(workspace, id)).toString('base64')
        : undefined;
    return { ref, download_url, expires_at, ...(data !== undefined ? { data_base64: data } : {}) };
  }

  /** Every blob of a workspace (export), and removing them all (deletion). */
  async *listWorkspace(workspace: string): AsyncIterable<{ key: string; bytes: number }> {
    yield* this.blobs.list(workspacePrefix(workspace));
  }

  /** Removes every blob, staged upload and upload marker of the workspace; answers how many. */
  async deleteWorkspace(workspace: string): Promise<number> {
    let n = 0;
    for (const prefix of [
      workspacePrefix(workspace),
      `${STAGING_PREFIX}${workspace}/`,
      `${FINALIZED_PREFIX}${workspace}/`,
    ]) {
      for await (const o of this.blobs.list(prefix)) {
        await this.blobs.delete(o.key);
        n++;
      }
    }
    return n;
  }

  private tooLarge(bytes: number): PayloadTooLargeError {
    return new PayloadTooLargeError(
      `the file is ${bytes} bytes; an upload is at most ${this.limits.maxUploadBytes} bytes (${ENV.attachmentMaxUploadBytes})`,
    );
  }

  /** The workspace's blobs plus this one stay within its share (one LIST per 1,000 blobs). */
  private async assertWorkspaceRoom(workspace: string, adding: number): Promise<void> {
    let used = 0;
    for await (const o of this.blobs.list(`${workspacePrefix(workspace)}blobs/`)) used += o.bytes;
    if (used + adding > this.maxWorkspaceBytes) {
      throw new AttachmentQuotaError(
        `workspace ${workspace} keeps ${used} bytes of attachments; ${adding} more would pass its ${this.maxWorkspaceBytes}-byte share`,
      );
    }
  }
}

/** A file name as crumbs keeps it: no path, no control characters, at most 255 characters. */
export function cleanName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  return base.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, 255) || 'file';
}

export { mediaKind };
