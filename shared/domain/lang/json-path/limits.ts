/**
 * The bounds every JSONPath evaluation keeps (a rule written by one tenant runs on another's read), and the bounded
 * caches the parser and the pattern compiler share.
 */
export const JSONPATH_LIMITS = Object.freeze({
  /** Characters of query text, and of a pattern read from the document. A rule's path is short. */
  maxLength: 1_000,
  /** Filters, parentheses and function calls inside each other. Keeps parsing and evaluation off the stack limit. */
  maxNesting: 32,
  /**
   * Work per evaluation: nodes selected or visited, values compared, 64-character chunks of strings compared or
   * counted, regex states stepped per character. A linear query over the largest context (350 KB, fewer than
   * 200,000 values) stays below; a query comparing every node with every other does not.
   */
  maxSteps: 1_000_000,
  /** States of a compiled pattern (counted repetitions expand); each character of text may step every state. */
  maxRegexStates: 1_000,
});

/** Caches keyed by query or pattern text: the oldest entry goes first once `size` is reached. */
export function remember<V>(cache: Map<string, V>, key: string, value: V, size: number): void {
  const oldest = cache.keys().next();
  if (cache.size >= size && !oldest.done) cache.delete(oldest.value);
  cache.set(key, value);
}
