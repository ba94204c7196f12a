/**
 * The local blob store: the S3 requests crumbs makes, served from files under a directory (`<data-dir>/blobs` under
 * `crumbs dev`). fauxqs's S3 keeps objects in memory and checks no policy; this one keeps them across restarts and
 * checks, as S3 does:
 * - a presigned POST (browser-based upload): the policy's SigV4 signature with the stack's credentials, its
 *   expiration, every condition (`eq`, `starts-with`, exact-match objects, `content-length-range`) and that every
 *   form field is covered by one — `EntityTooLarge` / `AccessDenied` as S3 answers them. The declared
 *   Content-Length is checked against the range before the body is read; the file is read only up to the range.
 * - a presigned GET: its SigV4 query signature (recomputed with the SDK's `S3RequestPresigner`) and `X-Amz-Expires`.
 * Requests signed in headers (the SDK's own calls) are not checked, as DynamoDB Local checks none.
 *
 * Served: PutObject (with `If-None-Match: *`), GetObject, HeadObject, DeleteObject, ListObjectsV2, POST object.
 * Path-style only (`<endpoint>/<bucket>/<key>`): Node resolves no `<bucket>.127.0.0.1`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join, relative, sep } from 'node:path';
import { S3RequestPresigner } from '@aws-sdk/s3-request-presigner';
import { type EmulatorServer, startEmulatorServer } from '../emulator-http.ts';

export interface LocalBlobStoreOptions {
  dir: string;
  port?: number;
  host?: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Largest PutObject body (the SDK's own writes); presigned POSTs are bounded by their policy. */
  maxPutBytes?: number;
  now?: () => number;
  log?: (line: string) => void;
}

interface ObjectMeta {
  contentType: string;
  metadata: Record<string, string>;
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

function bytesOf(data: SourceData): string | Uint8Array {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** SHA-256 and HMAC-SHA-256 from node:crypto, in the shape the SDK's signer takes. */
class HashFor {
  private readonly hash;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

function xmlEscape(s: string): string {
  return s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function s3Error(res: ServerResponse, status: number, code: string, message: string): void {
  const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error>`;
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Reads a body up to `max` bytes; undefined past it. */
async function readBytes(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/** SigV4 signing key: AWS4<secret> → date → region → service → aws4_request. */
function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
}

function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `20260101T000000Z` → epoch ms. */
function amzDate(text: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return Number.NaN;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

export type PolicyCheck =
  | { ok: true; key: string; contentType: string }
  | { ok: false; status: number; code: string; message: string };

/**
 * A presigned POST's form fields against its policy, as S3 checks them (the file's size apart: `sizeRange` gives
 * the range to hold the file to).
 */
export function checkPostPolicy(
  fields: Record<string, string>,
  bucket: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  now: number,
): PolicyCheck & { sizeRange?: [number, number] } {
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) lower[k.toLowerCase()] = v;
  const denied = (message: string) => ({ ok: false as const, status: 403, code: 'AccessDenied', message });
  const policyText = lower.policy;
  const signature = lower['x-amz-signature'];
  const credential = lower['x-amz-credential'];
  if (!policyText || !signature || !credential)
    return denied('Bucket POST must contain a policy and a signature');
  if (lower['x-amz-algorithm'] !== 'AWS4-HMAC-SHA256') return denied('Only AWS4-HMAC-SHA256 is supported');
  const [akid, date, region, service, terminator] = credential.split('/');
  if (
    akid !== credentials.accessKeyId ||
    !date ||
    !region ||
    service !== 's3' ||
    terminator !== 'aws4_request'
  ) {
    return denied('The AWS access key id you provided does not exist in our records.');
  }
  const expected = createHmac('sha256', signingKey(credentials.secretAccessKey, date, region, 's3'))
    .update(policyText)
    .digest('hex');
  if (!sameHex(expected, signature))
    return denied('The request signature we calculated does not match the signature you provided.');
  let policy: { expiration?: unknown; conditions?: unknown };
  try {
    policy = JSON.parse(Buffer.from(policyText, 'base64').toString('utf8')) as typeof policy;
  } catch {
    return {
      ok: false,
      status: 400,
      code: 'InvalidPolicyDocument',
      message: 'Invalid Policy: Invalid JSON.',
    };
  }
  const expiration = typeof policy.expiration === 'string' ? Date.parse(policy.expiration) : Number.NaN;
  if (!Number.isFinite(expiration) || expiration < now)
    return denied('Invalid according to Policy: Policy expired.');
  if (!Array.isArray(policy.conditions)) return denied('Invalid Policy: no conditions');
  const form: Record<string, string> = { ...lower, bucket };
  const covered = new Set(['policy', 'x-amz-signature', 'file']);
  let sizeRange: [number, number] | undefined;
  for (const condition of policy.conditions as unknown[]) {
    if (Array.isArray(condition)) {
      const [op, field, value] = condition as [unknown, unknown, unknown];
      if (op === 'content-length-range' && typeof field === 'number' && typeof value === 'number') {
        sizeRange = [field, value];
        continue;
      }
      if (
        (op !== 'eq' && op !== 'starts-with') ||
        typeof field !== 'string' ||
        !field.startsWith('$') ||
        typeof value !== 'string'
      ) {
        return denied(`Invalid Policy: invalid condition ${JSON.stringify(condition)}`);
      }
      const name = field.slice(1).toLowerCase();
      covered.add(name);
      const actual = form[name] ?? '';
      if (op === 'eq' ? actual !== value : !actual.startsWith(value)) {
        return denied(`Invalid according to Policy: Policy Condition failed: ${JSON.stringify(condition)}`);
      }
    } else if (condition !== null && typeof condition === 'object') {
      for (const [k, v] of Object.entries(condition)) {
        const name = k.toLowerCase();
        covered.add(name);
        if ((form[name] ?? '') !== v) {
          return denied(`Invalid according to Policy: Policy Condition failed: ${JSON.stringify(condition)}`);
        }
      }
    } else return denied('Invalid Policy: invalid condition');
  }
  for (const name of Object.keys(lower)) {
    if (!covered.has(name) && !name.startsWith('x-ignore-')) {
      return denied(`Invalid according to Policy: Extra input fields: ${name}`);
    }
  }
  const key = lower.key;
  if (!key)
    return {
      ok: false,
      status: 400,
      code: 'InvalidArgument',
      message: "Bucket POST must contain a field named 'key'.",
    };
  return {
    ok: true,
    key,
    contentType: lower['content-type'] ?? 'binary/octet-stream',
    ...(sizeRange ? { sizeRange } : {}),
  };
}

export interface LocalBlobStore {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export async function startLocalBlobStore(options: LocalBlobStoreOptions): Promise<LocalBlobStore> {
  const now = options.now ?? Date.now;
  const maxPut = options.maxPutBytes ?? 64 * 1024 * 1024;
  const root = options.dir;
  await mkdir(root, { recursive: true });
  // The SDK's own presigner recomputes the signature: the same canonical request S3 builds.
  const signer = new S3RequestPresigner({
    credentials: options.credentials,
    region: options.region,
    sha256: HashFor,
  });

  // Keys are stored as files whose names are the key's path segments, each percent-encoded: no `..` escapes.
  const fileOf = (bucket: string, key: string) =>
    join(root, encodeURIComponent(bucket), ...key.split('/').map((s) => `_${encodeURIComponent(s)}`));
  const metaOf = (file: string) => `${file}.meta.json`;
  const keyOf = (bucket: string, file: string) =>
    relative(join(root, encodeURIComponent(bucket)), file)
      .split(sep)
      .map((s) => decodeURIComponent(s.slice(1)))
      .join('/');

  async function store(bucket: string, key: string, bytes: Buffer, meta: ObjectMeta): Promise<void> {
    const file = fileOf(bucket, key);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(`${file}.tmp`, bytes);
    await writeFile(metaOf(file), JSON.stringify(meta));
    await rename(`${file}.tmp`, file);
  }

  async function* walk(dir: string): AsyncGenerator<string> {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) yield* walk(path);
      else if (!e.name.endsWith('.meta.json') && !e.name.endsWith('.tmp')) yield path;
    }
  }

  async function verifyPresignedGet(req: IncomingMessage, url: URL): Promise<string | undefined> {
    const q = url.searchParams;
    const date = q.get('X-Amz-Date') ?? '';
    const expires = Number(q.get('X-Amz-Expires'));
    const signed = amzDate(date);
    if (!Number.isFinite(signed) || !Number.isInteger(expires)) return 'AuthorizationQueryParametersError';
    if (now() > signed + expires * 1000) return 'Request has expired';
    const query: Record<string, string> = {};
    for (const [k, v] of q) if (!k.startsWith('X-Amz-')) query[k] = v;
    const [hostname, port] = (req.headers.host ?? '').split(':');
    const presigned = await signer.presign(
      {
        method: 'GET',
        protocol: 'http:',
        hostname: hostname ?? '',
        ...(port ? { port: Number(port) } : {}),
        path: url.pathname,
        query,
        headers: { host: req.headers.host ?? '' },
      },
      { signingDate: new Date(signed), expiresIn: expires },
    );
    const expected = presigned.query?.['X-Amz-Signature'];
    return typeof expected === 'string' && sameHex(expected, q.get('X-Amz-Signature') ?? '')
      ? undefined
      : 'SignatureDoesNotMatch';
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://local');
    const [, bucketRaw = '', ...rest] = url.pathname.split('/');
    const bucket = decodeURIComponent(bucketRaw);
    const key = rest.map((s) => decodeURIComponent(s)).join('/');
    if (!bucket) return s3Error(res, 400, 'InvalidRequest', 'path-style requests only');
    const method = req.method ?? 'GET';

    if (method === 'POST' && !key) return postObject(req, res, bucket);
    if (method === 'GET' && !key && url.searchParams.get('list-type') === '2') return list(res, bucket, url);
    if (!key) return s3Error(res, 405, 'MethodNotAllowed', `${method} on a bucket is not served here`);
    const file = fileOf(bucket, key);

    if (method === 'PUT') {
      const declared = Number(req.headers['content-length'] ?? 'NaN');
      if (Number.isFinite(declared) && declared > maxPut)
        return s3Error(res, 400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
      if (req.headers['if-none-match'] === '*' && existsSync(file)) {
        return s3Error(
          res,
          412,
          'PreconditionFailed',
          'At least one of the pre-conditions you specified did not hold',
        );
      }
      const body = await readBytes(req, maxPut);
      if (!body)
        return s3Error(res, 400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
      const metadata: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (k.startsWith('x-amz-meta-') && typeof v === 'string') metadata[k.slice('x-amz-meta-'.length)] = v;
      }
      await store(bucket, key, body, {
        contentType: req.headers['content-type'] ?? 'binary/octet-stream',
        metadata,
      });
      res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` });
      return void res.end();
    }
    if (method === 'DELETE') {
      await rm(file, { force: true });
      await rm(metaOf(file), { force: true });
      res.writeHead(204);
      return void res.end();
    }
    if (method === 'GET' || method === 'HEAD') {
      if (url.searchParams.has('X-Amz-Signature')) {
        const problem = await verifyPresignedGet(req, url);
        if (problem) return s3Error(res, 403, 'AccessDenied', problem);
      }
      let size: number;
      try {
        size = (await stat(file)).size;
      } catch {
        if (method === 'HEAD') {
          res.writeHead(404);
          return void res.end();
        }
        return s3Error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
      }
      const meta = JSON.parse(await readFile(metaOf(file), 'utf8')) as ObjectMeta;
      const headers: Record<string, string | number> = {
        'content-type': meta.contentType,
        'content-length': size,
        'last-modified': new Date().toUTCString(),
      };
      for (const [k, v] of Object.entries(meta.metadata)) headers[`x-amz-meta-${k}`] = v;
      const disposition = url.searchParams.get('response-content-disposition');
      if (disposition) headers['content-disposition'] = disposition;
      res.writeHead(200, headers);
      if (method === 'HEAD') return void res.end();
      return void res.end(await readFile(file));
    }
    return s3Error(res, 405, 'MethodNotAllowed', `${method} is not served here`);
  }

  async function list(res: ServerResponse, bucket: string, url: URL): Promise<void> {
    const prefix = url.searchParams.get('prefix') ?? '';
    const max = Math.min(Number(url.searchParams.get('max-keys') ?? 1000) || 1000, 1000);
    const after = url.searchParams.get('continuation-token');
    const keys: { key: string; size: number }[] = [];
    for await (const file of walk(join(root, encodeURIComponent(bucket)))) {
      const key = keyOf(bucket, file);
      if (key.startsWith(prefix)) keys.push({ key, size: (await stat(file)).size });
    }
    keys.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const rest = after ? keys.filter((k) => k.key > Buffer.from(after, 'base64url').toString('utf8')) : keys;
    const page = rest.slice(0, max);
    const truncated = rest.length > max;
    const last = page.at(-1);
    const body = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${xmlEscape(bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${
      truncated && last
        ? `<NextContinuationToken>${Buffer.from(last.key).toString('base64url')}</NextContinuationToken>`
        : ''
    }${page.map((k) => `<Contents><Key>${xmlEscape(k.key)}</Key><Size>${k.size}</Size></Contents>`).join('')}</ListBucketResult>`;
    res.writeHead(200, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  async function postObject(req: IncomingMessage, res: ServerResponse, bucket: string): Promise<void> {
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('multipart/form-data')) {
      return s3Error(
        res,
        412,
        'PreconditionFailed',
        'Bucket POST must be of the enclosure-type multipart/form-data',
      );
    }
    // The form is read up to the largest range any policy of this store hands out plus the fields; the size of
    // the file itself is checked against its own policy's range below.
    const declared = Number(req.headers['content-length'] ?? 'NaN');
    if (Number.isFinite(declared) && declared > maxPut + 64 * 1024) {
      return s3Error(res, 400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
    }
    const body = await readBytes(req, maxPut + 64 * 1024);
    if (!body)
      return s3Error(res, 400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
    const form = await new Response(body, { headers: { 'content-type': type } }).formData();
    const fields: Record<string, string> = {};
    let file: Blob | undefined;
    for (const [name, value] of form) {
      if (name.toLowerCase() === 'file') file = typeof value === 'string' ? new Blob([value]) : value;
      else if (typeof value === 'string') fields[name] = value;
    }
    if (!file)
      return s3Error(res, 400, 'InvalidArgument', 'POST requires exactly one file upload per request.');
    const check = checkPostPolicy(fields, bucket, options.credentials, now());
    if (!check.ok) return s3Error(res, check.status, check.code, check.message);
    if (check.sizeRange) {
      const [min, max] = check.sizeRange;
      if (file.size > max)
        return s3Error(res, 400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
      if (file.size < min)
        return s3Error(
          res,
          400,
          'EntityTooSmall',
          'Your proposed upload is smaller than the minimum allowed size',
        );
    }
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(fields)) {
      if (k.toLowerCase().startsWith('x-amz-meta-'))
        metadata[k.toLowerCase().slice('x-amz-meta-'.length)] = v;
    }
    await store(bucket, check.key, Buffer.from(await file.arrayBuffer()), {
      contentType: check.contentType,
      metadata,
    });
    res.writeHead(204, { location: `/${bucket}/${check.key}` });
    res.end();
  }

  const server: EmulatorServer = await startEmulatorServer({
    port: options.port,
    host: options.host,
    handle,
    crashed: (res, error) => {
      options.log?.(`blob store: ${(error as Error).message}`);
      if (!res.headersSent)
        s3Error(res, 500, 'InternalError', 'We encountered an internal error. Please try again.');
      else res.destroy();
    },
  });
  options.log?.(`blob store ready on ${server.endpoint} (files under ${root})`);
  return { endpoint: server.endpoint, stop: () => server.close() };
}
