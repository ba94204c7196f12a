/**
 * JSONPath (RFC 9535) for `llm_hints` `extract` rules: the public entry. A query is parsed once into an immutable
 * AST (`json-path/parse.ts`), evaluated by walking it (`json-path/evaluate.ts`), and its match()/search() patterns
 * run on an own linear-time I-Regexp engine (`json-path/i-regexp.ts`). No code is evaluated, lookups see own
 * properties only, and query length, nesting, work and pattern size are bounded (JSONPATH_LIMITS), so a rule
 * written by one user cannot read prototypes or stall a Lambda on someone else's read.
 *
 * What is supported, the deliberate differences from the RFC and from jsonpath-plus (which `extract` rules used),
 * and the tests that hold them: `json-path/README.md`.
 */
import { nodesOf } from './json-path/evaluate.ts';
import { JSONPATH_LIMITS, remember } from './json-path/limits.ts';
import { type JsonPathQuery, parse } from './json-path/parse.ts';

export type { JsonPathQuery };
export { JSONPATH_LIMITS };

// Parsed queries by source. Rules are validated on write and, for schema defaults, again on read; sharing the
// cache with evaluation means a warm Lambda parses each query once. Bounded: the oldest entry goes first.
const QUERY_CACHE_SIZE = 500;
const queryCache = new Map<string, JsonPathQuery>();

/** Parses and type-checks a query; throws JsonPathSyntaxError with the 1-based position of the problem. */
export function parseJsonPath(source: string): JsonPathQuery {
  let query = queryCache.get(source);
  if (!query) {
    query = parse(source);
    remember(queryCache, source, query, QUERY_CACHE_SIZE);
  }
  return query;
}

/**
 * The values of the nodes a query selects from `value`, in document order. Throws JsonPathSyntaxError for a bad
 * query and JsonPathLimitError when the evaluation exceeds a limit.
 */
export function queryJsonPath(query: JsonPathQuery | string, value: unknown): unknown[] {
  const parsed = typeof query === 'string' ? parseJsonPath(query) : query;
  return nodesOf(parsed, value, { root: value, steps: 0 });
}
