/**
 * The `Idempotency-Key` request header crumbs sends with every request that may change something on the other
 * side (an `http` tool call, an `api` agent's request), as the IETF draft "The Idempotency-Key HTTP Header Field"
 * (draft-ietf-httpapi-idempotency-key-header) defines it: a Structured Field string, e.g.
 * `Idempotency-Key: "crumbs-1f0c…"`. Its value is derived from the executor, the trigger id and version and the
 * call's index (`effectKey`, `shared/core/executor/outputs.ts`), so every attempt of the same call — a retry after
 * a 429, a redelivery, a worker taking over an expired claim — sends the same key, and a server that honours the
 * header applies the effect once. Not sent with GET, HEAD and OPTIONS (safe methods), nor when the request or the
 * definition already names one (theirs wins).
 */

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** `headers` with the key added, unless the method is safe or an `Idempotency-Key` is already there. */
export function withIdempotencyKey(
  headers: Record<string, string>,
  method: string,
  key: string | undefined,
): Record<string, string> {
  if (key === undefined || SAFE_METHODS.has(method.toUpperCase())) return headers;
  const lower = IDEMPOTENCY_KEY_HEADER.toLowerCase();
  if (Object.keys(headers).some((h) => h.toLowerCase() === lower)) return headers;
  return { ...headers, [IDEMPOTENCY_KEY_HEADER]: `"${key}"` };
}
