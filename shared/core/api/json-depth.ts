/**
 * How deeply a JSON text nests, read from the text itself: the protocol servers (MCP, A2A) refuse a message nested
 * deeper than `MAX_MESSAGE_DEPTH` before any parser or schema walks it, since JSON.parse takes 10,000 levels but the
 * SDKs' schema checks then recurse once per level and overflow the stack (a JSON-RPC -32603 instead of a 4xx).
 *
 * Written here rather than taken from a library: it is one linear pass over the characters (strings and their
 * escapes skipped), which stops at the first level past the limit; `test/unit/core/api/json-depth.test.ts` holds it
 * to the depth of what `JSON.parse` reads, on generated documents.
 */

/** Deep enough for any message whose data a breadcrumb could store (31 levels below a field) in its envelope. */
export const MAX_MESSAGE_DEPTH = 64;

/** The deepest nesting of arrays and objects in `text`, counted up to `limit + 1` (a text past the limit stops there). */
export function jsonNestingDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/** Why a message is refused for its nesting, or undefined when it is within `MAX_MESSAGE_DEPTH`. */
export function depthProblem(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return jsonNestingDepth(text, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH
    ? `the message is nested more than ${MAX_MESSAGE_DEPTH} levels deep (the limit of arrays and objects within one another)`
    : undefined;
}
