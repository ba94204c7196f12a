/**
 * The JSONPath subset EventBridge evaluates for InputPath and InputPathsMap: `$`, dot notation (names may hold
 * letters, digits, `-`, `_`, `/`, `:`, `@`, `$`), array indices `[0]` and wildcards (`.*`, `[*]`). Bracketed names
 * (`$['a']`), filters, slices and recursive descent are not supported, as in EventBridge.
 */
export type JsonPathSegment =
  | { kind: 'key'; key: string }
  | { kind: 'index'; index: number }
  | { kind: 'wildcard' };

export class JsonPathError extends Error {}

const NAME = /^[A-Za-z0-9_\-/:@$]+/;

export function parseJsonPath(path: string): JsonPathSegment[] {
  if (!path.startsWith('$')) throw new JsonPathError(`JSON path ${path} must start with $`);
  const segments: JsonPathSegment[] = [];
  let rest = path.slice(1);
  while (rest.length > 0) {
    if (rest.startsWith('.*')) {
      segments.push({ kind: 'wildcard' });
      rest = rest.slice(2);
    } else if (rest.startsWith('.')) {
      const name = NAME.exec(rest.slice(1))?.[0];
      if (name === undefined) throw new JsonPathError(`JSON path ${path} has an empty or invalid name`);
      segments.push({ kind: 'key', key: name });
      rest = rest.slice(1 + name.length);
    } else if (rest.startsWith('[*]')) {
      segments.push({ kind: 'wildcard' });
      rest = rest.slice(3);
    } else {
      const index = /^\[(\d+)\]/.exec(rest);
      if (index === null) throw new JsonPathError(`JSON path ${path} is not valid near "${rest}"`);
      segments.push({ kind: 'index', index: Number(index[1]) });
      rest = rest.slice(index[0].length);
    }
  }
  return segments;
}

export type JsonPathResult = { found: true; value: unknown } | { found: false };

/**
 * Evaluates a path. Without wildcards the result is the single value at the path; with wildcards it is the array
 * of every value matched (not found when nothing matched).
 */
export function evaluateJsonPath(document: unknown, path: string | JsonPathSegment[]): JsonPathResult {
  const segments = typeof path === 'string' ? parseJsonPath(path) : path;
  let current: unknown[] = [document];
  for (const segment of segments) {
    const next: unknown[] = [];
    for (const value of current) {
      if (segment.kind === 'key') {
        if (isObject(value) && Object.hasOwn(value, segment.key)) next.push(value[segment.key]);
      } else if (segment.kind === 'index') {
        if (Array.isArray(value) && segment.index < value.length) next.push(value[segment.index]);
      } else if (Array.isArray(value)) {
        next.push(...value);
      } else if (isObject(value)) {
        next.push(...Object.values(value));
      }
    }
    current = next;
  }
  if (segments.some((s) => s.kind === 'wildcard')) {
    return current.length > 0 ? { found: true, value: current } : { found: false };
  }
  return current.length > 0 ? { found: true, value: current[0] } : { found: false };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
