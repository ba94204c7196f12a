/**
 * The attachments room's part of the API contract (`shared/core/api/contract/route-table.ts` takes these entries
 * in): the request bodies its routes parse with, and each route's answers, for the OpenAPI document and the
 * contract test.
 */
import type { RouteContract } from '#shared/core/api/contract/route-table.ts';
import * as z from '#shared/domain/zod.ts';
import { AttachmentRefSchema } from './reference.ts';

export const AttachmentInlineUploadBodySchema = z.object({
  media_type: z.string().check(z.minLength(1)),
  name: z.optional(z.string().check(z.maxLength(255))),
  data_base64: z.string().check(z.regex(/^[A-Za-z0-9+/]*={0,2}$/, 'expected base64')),
});

export const AttachmentStageBodySchema = z.object({
  media_type: z.string().check(z.minLength(1)),
  bytes: z.optional(z.number().check(z.int(), z.minimum(1))),
  name: z.optional(z.string().check(z.maxLength(255))),
});

export const AttachmentFinalizeBodySchema = z.object({
  name: z.optional(z.string().check(z.maxLength(255))),
});

export const StagedUploadSchema = z.object({
  upload_id: z.string(),
  url: z.string(),
  fields: z.record(z.string(), z.string()),
  expires_at: z.string(),
  max_bytes: z.number(),
});

export const AttachmentDownloadSchema = z.object({
  ...AttachmentRefSchema.shape,
  download_url: z.string(),
  expires_at: z.string(),
  data_base64: z.optional(z.string()),
  data_omitted: z.optional(z.string()),
});

export const AttachmentPageSchema = z.object({
  items: z.array(z.object({ id: z.string(), bytes: z.number(), download_url: z.string() })),
  next_cursor: z.nullable(z.string()),
});

const PATH = '/v1/workspaces/{ws}/attachments';

export const ATTACHMENT_ROUTE_CONTRACTS: readonly RouteContract[] = [
  {
    method: 'POST',
    path: PATH,
    operationId: 'uploadAttachment',
    summary: 'Store a file sent in the request (base64, up to the inline limit) and answer its reference.',
    tag: 'attachments',
    body: { schema: AttachmentInlineUploadBodySchema, required: true },
    responses: { 201: { description: 'Stored (content-addressed).', schema: AttachmentRefSchema } },
    errors: [400, 413, 415, 422],
  },
  {
    method: 'GET',
    path: PATH,
    operationId: 'listAttachments',
    summary: "One page of the workspace's blobs, each with a presigned download URL.",
    tag: 'attachments',
    query: { cursor: { description: 'The `next_cursor` of the previous page.' } },
    responses: { 200: { description: 'OK', schema: AttachmentPageSchema } },
    errors: [400],
    paginated: true,
  },
  {
    method: 'POST',
    path: `${PATH}/uploads`,
    operationId: 'stageAttachmentUpload',
    summary:
      'A presigned POST for a large file: key, media type, size range and a short expiry fixed in its policy.',
    tag: 'attachments',
    body: { schema: AttachmentStageBodySchema, required: true },
    responses: { 201: { description: 'Staged.', schema: StagedUploadSchema } },
    errors: [400, 413, 415, 422],
  },
  {
    method: 'POST',
    path: `${PATH}/uploads/{upload}`,
    operationId: 'finalizeAttachmentUpload',
    summary: "Accept a staged upload once, after a check of its bytes, and answer the file's reference.",
    tag: 'attachments',
    body: { schema: AttachmentFinalizeBodySchema, required: false },
    responses: { 201: { description: 'Stored.', schema: AttachmentRefSchema } },
    errors: [400, 404, 409, 413, 415, 422],
  },
  {
    method: 'GET',
    path: `${PATH}/{id}`,
    operationId: 'getAttachment',
    summary:
      "An attachment's reference and a presigned download URL; with `data=true` its bytes too, within what an answer carries.",
    tag: 'attachments',
    query: {
      data: { schema: z.enum(['true', 'false']), description: '`true`: include the bytes (base64).' },
    },
    responses: { 200: { description: 'OK', schema: AttachmentDownloadSchema } },
    errors: [404],
  },
];
