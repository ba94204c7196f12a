/**
 * The attachments room's CLI verbs: `crumbs put --attach file` (each file stored as an attachment of the
 * workspace; the context gets `attachments: [{"$attachment": …}, …]`) and `crumbs get <id> --save-attachments dir`
 * (every attachment the context view refers to, written under dir by its name).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { ATTACHMENT_KEY, type AttachmentRef, findAttachments } from '#shared/rooms/attachments/reference.ts';
import type { CrumbsClient } from '../api-client.ts';
import { InputError } from '../args.ts';

/** Types by extension, for files whose bytes carry no magic number (text). */
const TEXT_BY_EXTENSION: Record<string, string> = {
  '.txt': 'text/plain',
  '.log': 'text/plain',
  '.csv': 'text/csv',
  '.md': 'text/markdown',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.json': 'application/json',
};

/** A file's media type: from its bytes (magic numbers), else from its extension for text. */
export async function mediaTypeOf(path: string, bytes: Uint8Array): Promise<string> {
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) return detected.mime;
  const byName = TEXT_BY_EXTENSION[extname(path).toLowerCase()];
  if (byName) return byName;
  throw new InputError(`--attach ${path}: cannot tell its media type (no known signature or text extension)`);
}

/** Uploads each file and answers the references, in order. */
export async function attachFiles(client: CrumbsClient, paths: readonly string[]): Promise<AttachmentRef[]> {
  const refs: AttachmentRef[] = [];
  for (const path of paths) {
    let bytes: Uint8Array;
    try {
      bytes = await readFile(path);
    } catch (error) {
      throw new InputError(
        `--attach: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? error})`,
      );
    }
    refs.push(await client.attach(bytes, await mediaTypeOf(path, bytes), basename(path)));
  }
  return refs;
}

/** The context with the references appended to its `attachments` list. */
export function withAttachments(
  context: Record<string, unknown>,
  refs: readonly AttachmentRef[],
): Record<string, unknown> {
  const existing = Array.isArray(context.attachments) ? context.attachments : [];
  return { ...context, attachments: [...existing, ...refs.map((ref) => ({ [ATTACHMENT_KEY]: ref }))] };
}

/** Writes every attachment a context refers to under `dir`; answers the paths written. */
export async function saveAttachments(
  client: CrumbsClient,
  context: unknown,
  dir: string,
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  const used = new Set<string>();
  for (const { ref } of findAttachments(context)) {
    const { download_url } = await client.attachment(ref.id);
    const bytes = await client.download(download_url);
    // Only a base name, never a path from the record; a name used twice gets the id's start.
    let name = basename(ref.name ?? ref.id).replace(/^\.+/, '') || ref.id;
    if (used.has(name)) name = `${ref.id.slice(4, 16)}-${name}`;
    used.add(name);
    const path = join(dir, name);
    await writeFile(path, bytes);
    written.push(path);
  }
  return written;
}
