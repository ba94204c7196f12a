/**
 * Reads a response body into memory, never more than `cap` bytes: a declared `content-length` above the cap is
 * refused before anything is read, and the read stops (and the connection is cancelled) at the first chunk past
 * it. The error names the limit the way the caller's definition spells it (`config.max_response_bytes`), so the
 * answer says which cap was hit. `guardedFetch` caps the stream too; this is the reader its callers share.
 */
import { ResponseTooLargeError } from './network-guard.ts';

export async function readCappedBody(response: Response, cap: number, field: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > cap) {
    await response.body?.cancel();
    throw new ResponseTooLargeError(`the response is ${declared} bytes, more than ${field} (${cap})`, cap);
  }
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel();
      throw new ResponseTooLargeError(`the response is larger than ${field} (${cap} bytes)`, cap);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
