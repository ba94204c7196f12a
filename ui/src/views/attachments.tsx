/**
 * The files a breadcrumb's context view refers to (`{"$attachment": …}`, the attachments room): images shown
 * inline (as data URLs: the page's Content-Security-Policy admits no other origin's images), other files as links
 * to their presigned download URL.
 */
import type { Api, AttachmentView } from '../api.ts';
import { ErrorLine, useLoad } from '../components.tsx';

interface Ref {
  id: string;
  media_type: string;
  bytes: number;
  name?: string;
}

/** Every attachment reference in a value, each once, in document order. */
export function attachmentRefs(value: unknown, seen = new Set<string>()): Ref[] {
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((v) => attachmentRefs(v, seen));
  const entries = Object.entries(value);
  const ref = entries.length === 1 && entries[0]?.[0] === '$attachment' ? entries[0][1] : undefined;
  if (ref !== null && typeof ref === 'object' && typeof (ref as Ref).id === 'string') {
    const r = ref as Ref;
    if (seen.has(r.id)) return [];
    seen.add(r.id);
    return [r];
  }
  return entries.flatMap(([, v]) => attachmentRefs(v, seen));
}

export function AttachmentsPanel({ api, context }: { api: Api; context: unknown }) {
  const refs = attachmentRefs(context);
  const loaded = useLoad(
    () => Promise.all(refs.map((r) => api.attachment(r.id))),
    [api, JSON.stringify(refs)],
  );
  if (refs.length === 0) return null;
  return (
    <div class="panel" data-panel="attachments">
      <h3>Attachments</h3>
      <ErrorLine error={loaded.error} />
      <ul class="attachments">
        {(loaded.value ?? []).map((a) => (
          <Attachment key={a.id} file={a} />
        ))}
      </ul>
    </div>
  );
}

function Attachment({ file }: { file: AttachmentView }) {
  const label = `${file.name ?? file.id} (${file.media_type}, ${file.bytes} bytes)`;
  return (
    <li>
      {file.media_type.startsWith('image/') && file.data_base64 !== undefined ? (
        <figure>
          <img src={`data:${file.media_type};base64,${file.data_base64}`} alt={file.name ?? file.id} />
          <figcaption>
            <a href={file.download_url}>{label}</a>
          </figcaption>
        </figure>
      ) : (
        <a href={file.download_url} data-media-type={file.media_type}>
          {label}
        </a>
      )}
    </li>
  );
}
