/**
 * Large contexts spill (claim check). A context serialized above `inlineContextBytes` is stored as a blob of the
 * workspace (content-addressed: the same context is one blob) and the item holds `{"$spilled": <reference>}` in its
 * place, so no item nears DynamoDB's 400 KB and the change event (built from the item) carries the reference, never
 * the bytes. Every read of the store gives the context back whole; a context above `maxContextBytes` is refused,
 * naming the limit. The store (`DynamoBreadcrumbStore`) calls `out` before it builds a record and `in` on every record
 * it hands out.
 *
 * The record's `checksum` is that of what the item holds — the reference, which names the whole context's sha256.
 */
import { ValidationError } from '#shared/domain/errors.ts';
import { ENV } from '#shared/topology.ts';
import type { BlobStore } from './blob-store.ts';
import {
  type AttachmentLimits,
  AttachmentRefSchema,
  attachmentId,
  blobKey,
  SPILLED_KEY,
  SPILLED_MEDIA_TYPE,
  sha256Of,
} from './reference.ts';

export function spilledRef(context: Record<string, unknown>) {
  const keys = Object.keys(context);
  if (keys.length !== 1 || keys[0] !== SPILLED_KEY) return undefined;
  const parsed = AttachmentRefSchema.safeParse(context[SPILLED_KEY]);
  return parsed.success && parsed.data.media_type === SPILLED_MEDIA_TYPE ? parsed.data : undefined;
}

export class ContextSpill {
  constructor(
    private readonly blobs: BlobStore,
    readonly limits: Pick<AttachmentLimits, 'inlineContextBytes' | 'maxContextBytes'>,
  ) {}

  /** The context to keep in the item: itself when small, else the reference once the bytes are stored. */
  async out(workspace: string, context: Record<string, unknown>): Promise<Record<string, unknown>> {
    // A writer may not forge a reference: `$spilled` alone is crumbs' own shape.
    if (Object.keys(context).length === 1 && SPILLED_KEY in context) {
      throw new ValidationError([
        { path: `context.${SPILLED_KEY}`, message: 'is reserved for contexts crumbs stores as a blob' },
      ]);
    }
    const text = JSON.stringify(context);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes <= this.limits.inlineContextBytes) return context;
    if (bytes > this.limits.maxContextBytes) {
      throw new ValidationError([
        {
          path: 'context',
          message: `context is ${bytes} bytes serialized; at most ${this.limits.maxContextBytes} bytes (the operator's limit, ${ENV.attachmentMaxContextBytes})`,
        },
      ]);
    }
    const body = Buffer.from(text, 'utf8');
    const sha256 = sha256Of(body);
    const key = blobKey(workspace, sha256);
    if (!(await this.blobs.head(key))) {
      await this.blobs.put(key, body, { mediaType: SPILLED_MEDIA_TYPE, metadata: { sha256 } });
    }
    return {
      [SPILLED_KEY]: { id: attachmentId(sha256), media_type: SPILLED_MEDIA_TYPE, bytes, sha256 },
    };
  }

  /** The record with its context read back when it was spilled. */
  async in<T extends { workspace: string; context: Record<string, unknown> }>(record: T): Promise<T> {
    const ref = spilledRef(record.context);
    if (!ref) return record;
    const bytes = await this.blobs.get(blobKey(record.workspace, ref.sha256));
    if (!bytes)
      throw new Error(`the spilled context ${ref.id} of a record in ${record.workspace} is missing`);
    return { ...record, context: JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown> };
  }

  async inAll<T extends { workspace: string; context: Record<string, unknown> }>(
    records: readonly T[],
  ): Promise<T[]> {
    return Promise.all(records.map((r) => this.in(r)));
  }
}
