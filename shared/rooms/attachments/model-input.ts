/**
 * Attachments as a model sees them: the one step of prompt assembly that turns the attachment references of a
 * request's user messages into what the provider takes, checked against the provider's limits **before** the call
 * (`withAttachmentData`, between the budgets and the provider: `functions/wiring/llm-from-env.ts`).
 *
 * - Bedrock Converse: image, document and video blocks in `user` messages — the bytes, or `s3Location` for the
 *   models `S3_LOCATION_MODELS` names (Amazon Nova) when the blob store is a bucket. At most 20 images of at most
 *   3.75 MB and 8,000 px a side, at most 5 documents of at most 4.5 MB each (with a text block beside them, which
 *   the adapter always sends); document names reduced to what Converse accepts. Audio: refused, naming the limit.
 * - OpenAI-compatible: image parts (data URLs), audio parts (wav, mp3), file parts (PDF); text types as text.
 * - Text types (CSV, plain text, markdown, JSON, HTML) become text where the provider takes no document of the type.
 * - Long threads: only the last `KEEP_INLINE_IMAGES` images of earlier messages are sent again; older ones become
 *   a line naming the file and its id, so history never re-sends every image.
 * Over a limit, the call is refused (a NonRetriableError naming the limit); nothing is downscaled.
 */
import { NonRetriableError } from '#shared/domain/errors.ts';
import type { LlmAttachment, LlmClient, LlmMessage, LlmRequest } from '#shared/ports/llm.ts';
import { type AttachmentRef, blobKey, findAttachments, type MediaKind, mediaKind } from './reference.ts';

export const CONVERSE_LIMITS = {
  images: 20,
  imageBytes: 3.75 * 1024 * 1024,
  imagePixels: 8000,
  documents: 5,
  documentBytes: 4.5 * 1024 * 1024,
} as const;

export const OPENAI_LIMITS = {
  images: 20,
  imageBytes: 20 * 1024 * 1024,
  fileBytes: 32 * 1024 * 1024,
} as const;

/** Images of earlier messages sent again with each call; older ones are referred to by name and id. */
export const KEEP_INLINE_IMAGES = 4;

/** Bedrock models that read a document or image from S3 themselves (`s3Location`). */
export const S3_LOCATION_MODELS: readonly RegExp[] = [/(^|\.)amazon\.nova-/];

export interface AttachmentSource {
  read(workspace: string, id: string): Promise<Uint8Array>;
  /** `s3://bucket/key` of a blob, when the store is an S3 bucket. */
  s3Uri?(workspace: string, sha256: string): string | undefined;
}

/** Converse document names: letters, digits, single spaces, `-`, `()`, `[]`; at most 200 characters. */
export function converseDocumentName(name: string): string {
  const cleaned = name
    .replace(/\.[A-Za-z0-9]{1,5}$/, '')
    .replace(/[^A-Za-z0-9\s\-()[\]]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
  return cleaned === '' ? 'document' : cleaned;
}

/** Width and height of a PNG, JPEG, GIF or WebP from its header; undefined when it cannot tell. */
export function imageSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length >= 24 && b.readUInt32BE(0) === 0x89504e47)
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.length >= 10 && b.toString('latin1', 0, 3) === 'GIF')
    return { width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
  if (b.length >= 30 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') {
    const chunk = b.toString('latin1', 12, 16);
    if (chunk === 'VP8X') return { width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
    if (chunk === 'VP8L') {
      const bits = b.readUInt32LE(21);
      return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
    }
    if (chunk === 'VP8 ') return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return undefined;
      const marker = b[i + 1]!;
      const length = b.readUInt16BE(i + 2);
      // SOF0..SOF15 but DHT (C4), JPG (C8), DAC (CC)
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
      }
      i += 2 + length;
    }
  }
  return undefined;
}

type Provider = 'bedrock' | 'openai-compatible' | 'offline';

function providerOf(model: string): Provider {
  const prefix = model.split('/')[0];
  if (prefix === 'bedrock') return 'bedrock';
  if (prefix === 'offline') return 'offline';
  return 'openai-compatible';
}

function refuse(message: string): never {
  throw new NonRetriableError(`attachments: ${message}; nothing was sent to the model`);
}

const CONVERSE_DOCUMENT_TYPES = new Set([
  'application/pdf',
  'text/csv',
  'text/plain',
  'text/markdown',
  'text/html',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
]);

const label = (ref: AttachmentRef | LlmAttachment['ref']) =>
  `${ref.name ?? ref.id} (${ref.media_type}, ${ref.bytes} bytes)`;

/**
 * The request with every attachment of its user messages resolved for its provider, or refused naming the limit
 * it passes. Messages without attachments are left as they are.
 */
export async function resolveAttachments(
  request: LlmRequest,
  workspace: string,
  source: AttachmentSource,
): Promise<LlmRequest> {
  const userIndexes = request.messages.flatMap((m, i) =>
    m.role === 'user' && m.attachments?.length ? [i] : [],
  );
  if (userIndexes.length === 0) return request;
  const provider = providerOf(request.model);
  const modelId = request.model.slice(request.model.indexOf('/') + 1);
  const last =
    request.messages.length - 1 - [...request.messages].reverse().findIndex((m) => m.role === 'user');
  // Earlier messages' images: only the last few are sent again.
  let olderImagesKept = 0;
  const keepOlder = new Set<string>();
  for (const i of [...userIndexes].reverse()) {
    if (i === last) continue;
    const m = request.messages[i] as Extract<LlmMessage, { role: 'user' }>;
    for (const a of [...(m.attachments ?? [])].reverse()) {
      if (mediaKind(a.ref.media_type) === 'image' && olderImagesKept < KEEP_INLINE_IMAGES) {
        olderImagesKept++;
        keepOlder.add(`${i}:${a.ref.id}`);
      }
    }
  }
  let images = 0;
  let documents = 0;
  const messages: LlmMessage[] = [];
  for (const [i, m] of request.messages.entries()) {
    if (m.role !== 'user' || !m.attachments?.length) {
      messages.push(m);
      continue;
    }
    const resolved: LlmAttachment[] = [];
    for (const a of m.attachments) {
      const kind: MediaKind | undefined = mediaKind(a.ref.media_type);
      if (kind === 'image' && i !== last && !keepOlder.has(`${i}:${a.ref.id}`)) {
        resolved.push({
          ref: a.ref,
          text: `[earlier image ${label(a.ref)}, id ${a.ref.id}: not sent again]`,
        });
        continue;
      }
      if (kind === 'image') {
        images++;
        const cap = provider === 'bedrock' ? CONVERSE_LIMITS.images : OPENAI_LIMITS.images;
        if (images > cap) refuse(`${images} images in one request; at most ${cap} (${request.model})`);
      }
      if (
        a.ref.bytes > (provider === 'bedrock' ? CONVERSE_LIMITS.documentBytes * 2 : OPENAI_LIMITS.fileBytes)
      ) {
        // Far past every limit below: refused before the bytes are read.
        refuse(`${label(a.ref)} is larger than ${request.model} takes`);
      }
      resolved.push(await resolveOne(a, kind, provider, modelId, workspace, source, () => ++documents));
    }
    messages.push({ ...m, attachments: resolved });
  }
  return { ...request, messages };
}

async function resolveOne(
  a: LlmAttachment,
  kind: MediaKind | undefined,
  provider: Provider,
  modelId: string,
  workspace: string,
  source: AttachmentSource,
  countDocument: () => number,
): Promise<LlmAttachment> {
  const ref = a.ref;
  const name = ref.name ?? ref.id;
  const asText = async (): Promise<LlmAttachment> => {
    const text = Buffer.from(await source.read(workspace, ref.id)).toString('utf8');
    return { ref, text: `[attachment ${name} (${ref.media_type})]\n${text}` };
  };
  if (provider === 'offline') return { ref, text: `[attachment ${label(ref)}]` };
  if (provider === 'bedrock') {
    const s3 = S3_LOCATION_MODELS.some((p) => p.test(modelId))
      ? source.s3Uri?.(workspace, ref.sha256)
      : undefined;
    if (kind === 'image') {
      if (ref.bytes > CONVERSE_LIMITS.imageBytes) {
        refuse(
          `the image ${label(ref)} is over ${CONVERSE_LIMITS.imageBytes} bytes, the most Converse takes`,
        );
      }
      const bytes = await source.read(workspace, ref.id);
      const size = imageSize(bytes);
      if (size && (size.width > CONVERSE_LIMITS.imagePixels || size.height > CONVERSE_LIMITS.imagePixels)) {
        refuse(
          `the image ${label(ref)} is ${size.width}×${size.height} px; Converse takes at most ${CONVERSE_LIMITS.imagePixels} px a side`,
        );
      }
      return s3
        ? { ref, kind, name, s3Uri: s3 }
        : { ref, kind, name, data: Buffer.from(bytes).toString('base64') };
    }
    if (kind === 'document' || CONVERSE_DOCUMENT_TYPES.has(ref.media_type)) {
      if (!CONVERSE_DOCUMENT_TYPES.has(ref.media_type)) return asText();
      const n = countDocument();
      if (n > CONVERSE_LIMITS.documents)
        refuse(`${n} documents in one request; at most ${CONVERSE_LIMITS.documents} (Converse)`);
      if (ref.bytes > CONVERSE_LIMITS.documentBytes) {
        refuse(
          `the document ${label(ref)} is over ${CONVERSE_LIMITS.documentBytes} bytes, the most Converse takes`,
        );
      }
      const docName = converseDocumentName(name);
      if (s3) return { ref, kind: 'document', name: docName, s3Uri: s3 };
      return {
        ref,
        kind: 'document',
        name: docName,
        data: Buffer.from(await source.read(workspace, ref.id)).toString('base64'),
      };
    }
    if (kind === 'video') {
      return s3
        ? { ref, kind, name, s3Uri: s3 }
        : { ref, kind, name, data: Buffer.from(await source.read(workspace, ref.id)).toString('base64') };
    }
    if (kind === 'text') return asText();
    refuse(`${label(ref)}: Converse takes no ${ref.media_type} content`);
  }
  // OpenAI-compatible chat completions.
  if (kind === 'image') {
    if (ref.bytes > OPENAI_LIMITS.imageBytes)
      refuse(`the image ${label(ref)} is over ${OPENAI_LIMITS.imageBytes} bytes`);
    return { ref, kind, name, data: Buffer.from(await source.read(workspace, ref.id)).toString('base64') };
  }
  if (kind === 'audio') {
    if (ref.media_type !== 'audio/wav' && ref.media_type !== 'audio/mpeg') {
      refuse(`${label(ref)}: chat completions take wav or mp3 audio`);
    }
    return { ref, kind, name, data: Buffer.from(await source.read(workspace, ref.id)).toString('base64') };
  }
  if (ref.media_type === 'application/pdf') {
    return {
      ref,
      kind: 'document',
      name,
      data: Buffer.from(await source.read(workspace, ref.id)).toString('base64'),
    };
  }
  if (kind === 'text') return asText();
  refuse(`${label(ref)}: chat completions take no ${ref.media_type} content`);
}

/** The S3 URI of a blob in the stage's bucket. */
export function bucketUri(bucket: string): (workspace: string, sha256: string) => string {
  return (workspace, sha256) => `s3://${bucket}/${blobKey(workspace, sha256)}`;
}

/**
 * The model client whose calls carry their attachments resolved (`resolveAttachments`) — the workspace is the
 * invocation's (`invocationWorkspace`), so a reference can only name a file of the workspace that makes the call.
 */
export function withAttachmentData(
  llm: LlmClient,
  source: AttachmentSource,
  invocationWorkspace: () => string | undefined,
): LlmClient {
  return {
    async generate(request) {
      if (!request.messages.some((m) => m.role === 'user' && m.attachments?.length))
        return llm.generate(request);
      const workspace = invocationWorkspace();
      if (workspace === undefined) refuse('a call outside an executor invocation cannot read attachments');
      return llm.generate(await resolveAttachments(request, workspace, source));
    },
  };
}

/**
 * The attachments a model call carries with its user message: every reference in the assembled context (the
 * trigger and each context source, context views: what llm_hints leave out is not there), each file once.
 */
export function attachmentsOfContext(context: unknown): LlmAttachment[] {
  const seen = new Set<string>();
  const out: LlmAttachment[] = [];
  for (const { ref } of findAttachments(context)) {
    if (seen.has(ref.id)) continue;
    seen.add(ref.id);
    out.push({ ref });
  }
  return out;
}
