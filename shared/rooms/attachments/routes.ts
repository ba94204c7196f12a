/**
 * The attachments room's routes (registered once, in `createApi`):
 *
 *   POST /v1/workspaces/{ws}/attachments                      {media_type, name?, data_base64} → 201 reference
 *        a file in the request (at most `maxInlineUploadBytes`: a Lambda request carries 6 MB, base64 a third more)
 *   POST /v1/workspaces/{ws}/attachments/uploads              {media_type, bytes?} → 201 {upload_id, url, fields, …}
 *        a presigned POST: key, media type and `1..bytes` (or the cap) fixed in its policy, a short expiry
 *   POST /v1/workspaces/{ws}/attachments/uploads/{upload}     {name?} → 201 reference
 *        finalize: the staged file's bytes checked, stored, the upload accepted once (409 after)
 *   GET  /v1/workspaces/{ws}/attachments                      → {items: [{id, bytes, download_url}], next_cursor}
 *   GET  /v1/workspaces/{ws}/attachments/{id}?data=true       → reference, presigned `download_url`, and the bytes
 *        (`data_base64`) when asked for and within `maxInlineDownloadBytes`
 *
 * Every key is built from the path's workspace, which the API has already checked the caller may use: an id or an
 * upload id of another workspace is simply not found.
 */

import type { Caller, HttpRequest, HttpResult } from '#shared/core/api/http.ts';
import { json } from '#shared/core/api/http.ts';
import { parseOrThrow, WorkspaceSchema } from '#shared/domain/breadcrumb.ts';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '#shared/domain/errors.ts';
import type { Attachments } from './attachments.ts';
import {
  AttachmentFinalizeBodySchema as FinalizeSchema,
  AttachmentInlineUploadBodySchema as InlineUploadSchema,
  AttachmentStageBodySchema as StageSchema,
} from './contract.ts';
import { attachmentId, SHA256_HEX } from './reference.ts';

type Params = Record<string, string>;
export interface AttachmentRoute {
  template: string;
  pattern: RegExp;
  methods: Partial<Record<string, (req: HttpRequest, p: Params, caller: Caller) => Promise<HttpResult>>>;
}

const PAGE = 100;

export function attachmentRoutes(attachments: Attachments): AttachmentRoute[] {
  const base = '^/v1/workspaces/(?<ws>[^/]+)/attachments';
  const tpl = '/v1/workspaces/{ws}/attachments';
  // The JSON of an inline upload: base64 of the largest file plus the other fields.
  const maxInlineBody = Math.ceil((attachments.limits.maxInlineUploadBytes * 4) / 3) + 4096;
  return [
    {
      template: tpl,
      pattern: new RegExp(`${base}$`),
      methods: {
        POST: async (req, p) => {
          const input = parseOrThrow(InlineUploadSchema, body(req, maxInlineBody, attachments));
          const bytes = Buffer.from(input.data_base64, 'base64');
          if (bytes.byteLength > attachments.limits.maxInlineUploadBytes) {
            throw new PayloadTooLargeError(
              `the file is ${bytes.byteLength} bytes; a file sent in the request is at most ${attachments.limits.maxInlineUploadBytes} bytes: stage a presigned upload (POST ${tpl}/uploads)`,
            );
          }
          return json(201, await attachments.store(ws(p), bytes, input.media_type, input.name));
        },
        GET: async (req, p) => {
          const w = ws(p);
          const after = req.query.cursor;
          const items: { id: string; bytes: number; download_url: string }[] = [];
          let next: string | null = null;
          for await (const o of attachments.listWorkspace(w)) {
            const sha = o.key.split('/').at(-1) ?? '';
            if (!o.key.includes('/blobs/') || !SHA256_HEX.test(sha)) continue;
            if (after !== undefined && sha <= after) continue;
            if (items.length === PAGE) {
              next = items.at(-1)?.id.slice(4) ?? null;
              break;
            }
            const dl = await attachments.download(w, attachmentId(sha), false);
            items.push({ id: dl.ref.id, bytes: o.bytes, download_url: dl.download_url });
          }
          return json(200, { items, next_cursor: next });
        },
      },
    },
    {
      template: `${tpl}/uploads`,
      pattern: new RegExp(`${base}/uploads$`),
      methods: {
        POST: async (req, p) => {
          const input = parseOrThrow(StageSchema, body(req, 16 * 1024, attachments));
          return json(201, await attachments.stage(ws(p), input));
        },
      },
    },
    {
      template: `${tpl}/uploads/{upload}`,
      pattern: new RegExp(`${base}/uploads/(?<upload>[^/]+)$`),
      methods: {
        POST: async (req, p) => {
          const raw = (req.body ?? '').trim() === '' ? {} : body(req, 16 * 1024, attachments);
          const input = parseOrThrow(FinalizeSchema, raw);
          return json(201, await attachments.finalize(ws(p), p.upload ?? '', input.name));
        },
      },
    },
    {
      template: `${tpl}/{id}`,
      pattern: new RegExp(`${base}/(?<id>[^/]+)$`),
      methods: {
        GET: async (req, p) => {
          const withData = req.query.data === 'true';
          const dl = await attachments.download(ws(p), p.id ?? '', withData);
          return json(200, {
            ...dl.ref,
            download_url: dl.download_url,
            expires_at: dl.expires_at,
            ...(dl.data_base64 !== undefined ? { data_base64: dl.data_base64 } : {}),
            ...(withData && dl.data_base64 === undefined
              ? {
                  data_omitted: `larger than ${attachments.limits.maxInlineDownloadBytes} bytes (what an API answer carries): use download_url`,
                }
              : {}),
          });
        },
      },
    },
  ];
}

function ws(p: Params): string {
  return parseOrThrow(WorkspaceSchema, p.ws, 'workspace');
}

function body(req: HttpRequest, max: number, attachments: Attachments): unknown {
  const type = req.headers['content-type'];
  if (type !== undefined && !/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw new UnsupportedMediaTypeError(`expected Content-Type application/json, got ${type}`);
  }
  const text = req.body ?? '';
  // Refused by its size before it is parsed or decoded.
  if (Buffer.byteLength(text, 'utf8') > max) {
    throw new PayloadTooLargeError(
      `the body is larger than ${max} bytes; a file sent in the request is at most ${attachments.limits.maxInlineUploadBytes} bytes`,
    );
  }
  if (text.trim() === '')
    throw new BadRequestError('expected a JSON body', [{ path: '', message: 'the body is empty' }]);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BadRequestError('the body is not valid JSON', [
      { path: '', message: (error as Error).message },
    ]);
  }
}
